package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sshSetup writes a project whose .chalk/config.toml reaches the server
// as alice, and an ssh config made by 'chalk sandbox configure-ssh' for
// it. ssh runs with no CHALK_API_* in its environment: the ProxyCommand's
// --dir is what finds the settings.
func (w *world) sshSetup(t *testing.T) (cfg string, sshEnv []string) {
	t.Helper()
	dir := t.TempDir()
	proj := filepath.Join(dir, "project")
	if err := os.MkdirAll(filepath.Join(proj, ".chalk"), 0o700); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("[plugins]\nsomething = \"else's\"\n\n[api]\nurl = %q\ntoken = %q\nfingerprint = %q\n", w.url, w.alice, w.pin)
	if err := os.WriteFile(filepath.Join(proj, ".chalk", "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "ssh_config")
	// An existing catch-all block must not win over the chalk block.
	if err := os.WriteFile(cfg, []byte("Host *\n  User nobody\n  ProxyCommand false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.mustChalk(t, "", "sandbox", "configure-ssh", "--ssh-config", cfg, "--dir", proj)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHALK_") {
			sshEnv = append(sshEnv, kv)
		}
	}
	sshEnv = append(sshEnv, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"))
	return cfg, sshEnv
}

func (w *world) sshArgs(cfg string) []string {
	return []string{"-F", cfg, "-i", w.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=30"}
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func TestSSHByNameAndID(t *testing.T) {
	w := setup(t)
	name, id := w.box(t, "sshd")
	cfg, env := w.sshSetup(t)
	for _, host := range []string{"chalk-sbx-" + name, "chalk-sbx-" + id} {
		out := run(t, env, "ssh", append(w.sshArgs(cfg), host, "echo", "ok")...)
		if out != "ok\n" {
			t.Fatalf("ssh %s echo ok printed %q", host, out)
		}
	}
	// Each connection's connector is gone once ssh is.
	w.waitNoProc(t, id, "socat")
}

func TestSCPBothWays(t *testing.T) {
	w := setup(t)
	name, id := w.box(t, "sshd")
	cfg, env := w.sshSetup(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "train.py")
	payload := bytes.Repeat([]byte("print('chalk')\n"), 50000) // 750 kB
	if err := os.WriteFile(src, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	host := "chalk-sbx-" + name
	run(t, env, "ssh", append(w.sshArgs(cfg), host, "mkdir", "-p", "/workspace")...)
	run(t, env, "scp", append(w.sshArgs(cfg), src, host+":/workspace/")...)
	sum := run(t, env, "ssh", append(w.sshArgs(cfg), host, "wc", "-c", "<", "/workspace/train.py")...)
	if strings.TrimSpace(sum) != fmt.Sprint(len(payload)) {
		t.Fatalf("the copy in the container has %q bytes, want %d", sum, len(payload))
	}
	back := filepath.Join(dir, "back.py")
	run(t, env, "scp", append(w.sshArgs(cfg), host+":/workspace/train.py", back)...)
	got, err := os.ReadFile(back)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("the file copied back differs (%d bytes, err %v)", len(got), err)
	}
	w.waitNoProc(t, id, "socat")
}

// TestRsync: the seed's 'rsync -av ./src/ chalk-sbx-my-box:/workspace/src/'.
func TestRsync(t *testing.T) {
	w := setup(t)
	name, _ := w.box(t, "sshd")
	cfg, env := w.sshSetup(t)
	src := filepath.Join(t.TempDir(), "src")
	for _, f := range []string{"a.py", "pkg/b.py", "pkg/data.bin"} {
		p := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte(f), 10000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host := "chalk-sbx-" + name
	sshCmd := "ssh " + strings.Join(w.sshArgs(cfg), " ")
	run(t, env, "rsync", "-a", "-e", sshCmd, "--mkpath", src+"/", host+":/workspace/src/")
	// A second run sends nothing: rsync compared both sides.
	out := run(t, env, "rsync", "-a", "--stats", "-e", sshCmd, src+"/", host+":/workspace/src/")
	if !strings.Contains(out, "Number of regular files transferred: 0") {
		t.Fatalf("the second rsync transferred files:\n%s", out)
	}
	got := run(t, env, "ssh", append(w.sshArgs(cfg), host, "cat", "/workspace/src/pkg/b.py")...)
	if got != strings.Repeat("pkg/b.py", 10000) {
		t.Fatalf("the synced file has %d bytes", len(got))
	}
}

func TestSSHPortForward(t *testing.T) {
	w := setup(t)
	name, _ := w.box(t, "sshd")
	cfg, env := w.sshSetup(t)
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fwd := exec.CommandContext(ctx, "ssh", append(w.sshArgs(cfg), "-N", "-L", fmt.Sprintf("%d:127.0.0.1:8080", port), "chalk-sbx-"+name)...)
	fwd.Env = env
	var stderr bytes.Buffer
	fwd.Stderr = &stderr
	if err := fwd.Start(); err != nil {
		t.Fatal(err)
	}
	defer fwd.Wait()
	defer cancel()
	out := curlRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", port), &stderr)
	if out != "hello from the container\n" {
		t.Fatalf("curl through ssh -L got %q", out)
	}
}

// curlRetry fetches url with curl, retrying while the listener comes up.
func curlRetry(t *testing.T, url string, why *bytes.Buffer) string {
	t.Helper()
	var last string
	for i := 0; i < 60; i++ {
		out, err := exec.Command("curl", "-sS", "--max-time", "20", url).CombinedOutput()
		if err == nil {
			return string(out)
		}
		last = string(out)
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("curl %s never answered: %s\n%s", url, last, why.String())
	return ""
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestSessionProxyPortBehindSocat(t *testing.T) {
	w := setup(t)
	name, id := w.box(t, "sshd")
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The seed's recipe: a local listener in front of the proxy, one
	// proxy per connection.
	front := exec.CommandContext(ctx, "socat", fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork", port),
		fmt.Sprintf("EXEC:'%s session proxy %s --port 8080'", w.bin, name))
	front.Env = w.env(w.alice)
	var stderr bytes.Buffer
	front.Stderr = &stderr
	if err := front.Start(); err != nil {
		t.Fatal(err)
	}
	defer front.Wait()
	defer cancel()
	for i := 0; i < 3; i++ {
		out := curlRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", port), &stderr)
		if out != "hello from the container\n" {
			t.Fatalf("curl through session proxy got %q", out)
		}
	}
	w.waitNoProc(t, id, "socat")
}

func TestSSHDashG(t *testing.T) {
	w := setup(t)
	cfg, env := w.sshSetup(t)
	out := run(t, env, "ssh", "-G", "-F", cfg, "chalk-sbx-x")
	want := []string{
		"user root",
		fmt.Sprintf(`proxycommand sh -c 'exec "%s" session proxy --dir`, w.bin),
		`"${0#chalk-sbx-}"' %n`,
		"userknownhostsfile /dev/null",
		"stricthostkeychecking false",
		"loglevel ERROR",
	}
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("ssh -G lacks %q; it says:\n%s", s, out)
		}
	}
	// The Host * block that came first in the file lost to chalk's.
	if strings.Contains(out, "user nobody") {
		t.Errorf("the catch-all block won over chalk's:\n%s", out)
	}
}
