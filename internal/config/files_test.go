package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes the tree under root, with HOME=root/home and
		// XDG_CONFIG_HOME=root/xdg, and returns the directory to look in
		// (relative to root; "" means the working directory, root/wd).
		setup func(t *testing.T, root string) string
		want  []string // relative to root
	}{
		{
			name: "nothing",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "proj"))
				return "proj"
			},
		},
		{
			name: "walk up from a subdirectory, then the user's",
			setup: func(t *testing.T, root string) string {
				write(t, filepath.Join(root, "proj", ProjectFile), "")
				write(t, filepath.Join(root, "xdg", "chalk", "config.toml"), "")
				mkdir(t, filepath.Join(root, "proj", "a", "b"))
				return "proj/a/b"
			},
			want: []string{"proj/.chalk/config.toml", "xdg/chalk/config.toml"},
		},
		{
			name: "the working directory when none is given",
			setup: func(t *testing.T, root string) string {
				write(t, filepath.Join(root, ProjectFile), "")
				return ""
			},
			want: []string{".chalk/config.toml"},
		},
		{
			name: "the nearest wins",
			setup: func(t *testing.T, root string) string {
				write(t, filepath.Join(root, ProjectFile), "")
				write(t, filepath.Join(root, "inner", ProjectFile), "")
				mkdir(t, filepath.Join(root, "inner", "x"))
				return "inner/x"
			},
			want: []string{"inner/.chalk/config.toml"},
		},
		{
			name: "a directory named config.toml is not a config file",
			setup: func(t *testing.T, root string) string {
				write(t, filepath.Join(root, ProjectFile), "")
				mkdir(t, filepath.Join(root, "inner", ProjectFile))
				mkdir(t, filepath.Join(root, "xdg", "chalk", "config.toml"))
				return "inner"
			},
			want: []string{".chalk/config.toml"},
		},
		{
			name: "a file named .chalk is no project",
			setup: func(t *testing.T, root string) string {
				write(t, filepath.Join(root, ProjectFile), "")
				write(t, filepath.Join(root, "inner", ".chalk"), "")
				return "inner"
			},
			want: []string{".chalk/config.toml"},
		},
		{
			name: "the user's file is not listed twice",
			setup: func(t *testing.T, root string) string {
				write(t, filepath.Join(root, "xdg", "chalk", "config.toml"), "")
				mkdir(t, filepath.Join(root, "home"))
				if err := os.Symlink(filepath.Join(root, "xdg", "chalk"), filepath.Join(root, "home", ".chalk")); err != nil {
					t.Fatal(err)
				}
				return "home"
			},
			want: []string{"home/.chalk/config.toml"},
		},
		{
			name: "a relative XDG_CONFIG_HOME is ignored",
			setup: func(t *testing.T, root string) string {
				t.Setenv("XDG_CONFIG_HOME", "xdg")
				write(t, filepath.Join(root, "wd", "xdg", "chalk", "config.toml"), "")
				write(t, filepath.Join(root, "home", ".config", "chalk", "config.toml"), "")
				return ""
			},
			want: []string{"home/.config/chalk/config.toml"},
		},
		{
			name: "no XDG_CONFIG_HOME",
			setup: func(t *testing.T, root string) string {
				t.Setenv("XDG_CONFIG_HOME", "")
				write(t, filepath.Join(root, "xdg", "chalk", "config.toml"), "")
				write(t, filepath.Join(root, "home", ".config", "chalk", "config.toml"), "")
				return ""
			},
			want: []string{"home/.config/chalk/config.toml"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			t.Setenv("HOME", filepath.Join(root, "home"))
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "xdg"))
			mkdir(t, filepath.Join(root, "wd"))
			t.Chdir(filepath.Join(root, "wd"))
			dir := tc.setup(t, root)
			if dir != "" {
				dir = filepath.Join(root, dir)
			}
			got, err := Files(dir)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, filepath.Join(root, w))
			}
			if !slices.Equal(got, want) {
				t.Errorf("Files(%q)\n got %q\nwant %q", dir, got, want)
			}
		})
	}
}

func TestUserFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct{ xdg, want string }{
		{"/etc/xdg-alice", "/etc/xdg-alice/chalk/config.toml"},
		{"", filepath.Join(home, ".config", "chalk", "config.toml")},
		{"relative/dir", filepath.Join(home, ".config", "chalk", "config.toml")},
		{"./dot", filepath.Join(home, ".config", "chalk", "config.toml")},
	} {
		t.Setenv("XDG_CONFIG_HOME", tc.xdg)
		if got, err := UserFile(); err != nil || got != tc.want {
			t.Errorf("XDG_CONFIG_HOME=%q: %q %v, want %q", tc.xdg, got, err, tc.want)
		}
	}
}

func TestProjectDirIsADirectory(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "file"), "")
	for _, dir := range []string{filepath.Join(root, "missing"), filepath.Join(root, "file")} {
		if _, err := Files(dir); err == nil {
			t.Errorf("Files(%q): no error", dir)
		}
	}
}

func TestProjectFileToWrite(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "proj", "sub")
	mkdir(t, sub)
	// No project file yet: a new one in the directory given.
	if got, err := ProjectFileToWrite(sub); err != nil || got != filepath.Join(sub, ProjectFile) {
		t.Errorf("without a project file: %q %v", got, err)
	}
	// The existing one above it, which a new one would shadow.
	write(t, filepath.Join(root, "proj", ProjectFile), "")
	if got, err := ProjectFileToWrite(sub); err != nil || got != filepath.Join(root, "proj", ProjectFile) {
		t.Errorf("with one above: %q %v", got, err)
	}
}

// TestFilesWorkingDirectoryGone: with the working directory deleted and
// no --dir, there is no project, and the user's file still applies.
func TestFilesWorkingDirectoryGone(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "xdg"))
	user := filepath.Join(root, "xdg", "chalk", "config.toml")
	write(t, user, "")
	gone := filepath.Join(root, "gone")
	mkdir(t, gone)
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	got, err := Files("")
	if err != nil || !slices.Equal(got, []string{user}) {
		t.Fatalf("Files: %q, %v; want only the user's file", got, err)
	}
}

// TestFilesPassOverOthersFiles: a project file another user owns is not
// read (its plugins would run as the one running chalk); the search goes
// on above it.
func TestFilesPassOverOthersFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	root := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "xdg"))
	mine := filepath.Join(root, ProjectFile)
	write(t, mine, "")
	theirs := filepath.Join(root, "shared", ProjectFile)
	write(t, theirs, "")
	if err := os.Chown(theirs, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	got, err := Files(filepath.Join(root, "shared"))
	if err != nil || !slices.Equal(got, []string{mine}) {
		t.Fatalf("Files: %q, %v; want %q only", got, err, mine)
	}
}
