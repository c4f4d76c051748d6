package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func isolate(t *testing.T) (home string) {
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
	for _, k := range []string{EnvURL, EnvToken, EnvFingerprint} {
		t.Setenv(k, "")
	}
	return home
}

func TestPrecedence(t *testing.T) {
	home := isolate(t)
	write(t, filepath.Join(home, "xdg", "chalk", "config.toml"), "[api]\nurl = \"https://user\"\ntoken = \"user-token\"\nfingerprint = \"sha256:user\"\n")
	proj := filepath.Join(home, "proj")
	write(t, filepath.Join(proj, ProjectFile), "[plugins]\nwhatever = 1\n[plugins.x]\ny = [1, 2]\n\n[api]\nurl = \"https://project\"\n")
	t.Setenv(EnvToken, "env-token")
	s, err := Load(proj)
	if err != nil {
		t.Fatal(err)
	}
	if s.URL != "https://project" || s.Token != "env-token" || s.Fingerprint != "sha256:user" {
		t.Fatalf("settings %+v", s.API)
	}
	if s.Source["token"] != "env "+EnvToken || s.Source["url"] != filepath.Join(proj, ProjectFile) {
		t.Fatalf("sources %+v", s.Source)
	}
}

func TestWalkUp(t *testing.T) {
	home := isolate(t)
	proj := filepath.Join(home, "proj")
	write(t, filepath.Join(proj, ProjectFile), "[api]\nurl = \"https://walked\"\n")
	deep := filepath.Join(proj, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	s, err := Load("")
	if err != nil || s.URL != "https://walked" {
		t.Fatalf("%+v %v", s.API, err)
	}
	// --dir walks up as well, like git -C.
	t.Chdir(home)
	s, err = Load(deep)
	if err != nil || s.URL != "https://walked" {
		t.Fatalf("with --dir %s: %+v %v", deep, s.API, err)
	}
	// A mistyped --dir is an error, not some other directory's settings.
	if _, err := Load(filepath.Join(proj, "nope")); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("with --dir nope: %v", err)
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ content, want string }{
		{"[api]\nurl = 'x'\ntokn = 'y'\n", `unknown key "tokn" in [api]`},
		{"[api]\nurl = 3\n", "[api] url must be a string"},
		{"[api\nurl = 'x'\n", "config.toml:1"},
	} {
		p := filepath.Join(dir, "config.toml")
		write(t, p, tc.content)
		_, err := ReadFile(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.content, err, tc.want)
		}
	}
}

func TestWriteAPIKeepsOtherTables(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "chalk", "config.toml")
	write(t, p, "# mine\n[plugins]\nhardware_limits = \"/bin/hl\"\n\n[api]\nurl = \"https://old\"\ntoken = \"old\"\n\n[other]\nk = 'v'\n")
	if err := WriteAPI(p, API{URL: "https://new", Token: "new's \"token\"", Fingerprint: "sha256:ab"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not TOML any more: %v\n%s", err, data)
	}
	a, err := ReadFile(p)
	if err != nil || a.URL != "https://new" || a.Token != "new's \"token\"" || a.Fingerprint != "sha256:ab" {
		t.Fatalf("%+v %v\n%s", a, err, data)
	}
	if doc["plugins"].(map[string]any)["hardware_limits"] != "/bin/hl" || doc["other"].(map[string]any)["k"] != "v" || !strings.HasPrefix(string(data), "# mine\n") {
		t.Fatalf("other tables changed:\n%s", data)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	// A new file.
	q := filepath.Join(dir, "new", "config.toml")
	if err := WriteAPI(q, API{URL: "https://x"}); err != nil {
		t.Fatal(err)
	}
	if a, err := ReadFile(q); err != nil || a.URL != "https://x" {
		t.Fatalf("%+v %v", a, err)
	}
}

func TestWriteAPIFollowsASymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "chalk.toml")
	write(t, real, "[other]\nk = 'v'\n")
	link := filepath.Join(dir, "chalk", "config.toml")
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteAPI(link, API{URL: "https://x"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file: %v %v", fi, err)
	}
	if a, err := ReadFile(real); err != nil || a.URL != "https://x" {
		t.Fatalf("the link's target: %+v %v", a, err)
	}
}
