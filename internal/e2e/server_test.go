package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServerCommandAndLogin runs 'chalk server' itself, makes a token
// with 'chalk token create', logs in (pinning the self-signed
// certificate), and uses the saved settings; then stops the server with
// SIGTERM.
func TestServerCommandAndLogin(t *testing.T) {
	w := setup(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	port := freePort(t)
	network := fmt.Sprintf("chalk-e2e-srv-%d", os.Getpid())
	defer exec.Command("docker", "network", "rm", network).Run()
	srv := exec.Command(w.bin, "server", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data", data, "--network", network)
	srv.Env = w.env("")
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	// The first log line says where it serves and with what certificate.
	lines := bufio.NewScanner(stderr)
	var first struct {
		Msg, URL, Fingerprint string
	}
	if !lines.Scan() {
		t.Fatal("the server wrote no log")
	}
	if err := json.Unmarshal(lines.Bytes(), &first); err != nil || first.Msg != "serving" || !strings.HasPrefix(first.Fingerprint, "sha256:") {
		t.Fatalf("first log line %q: %v", lines.Text(), err)
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		rest <- b.String()
	}()

	owner := fmt.Sprintf("carol-e2e-%d", os.Getpid())
	t.Cleanup(func() {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=chalk.api.owner="+owner).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	tok := strings.TrimSpace(w.mustChalk(t, "", "token", "create", "--data", data, "--owner", owner))
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg"), "PATH=" + os.Getenv("PATH")}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	chalk := func(args ...string) (string, error) {
		cmd := w.command(env, args...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// A wrong expected fingerprint: refused, nothing saved.
	if out, err := chalk("login", first.URL, "--token", tok, "--fingerprint", "sha256:"+strings.Repeat("0", 64)); err == nil || !strings.Contains(out, "not the sha256:") {
		t.Fatalf("login with the wrong fingerprint: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "xdg", "chalk", "config.toml")); err == nil {
		t.Fatal("a refused login saved settings")
	}
	// A wrong token: refused.
	if out, err := chalk("login", first.URL, "--token", "chalk_00_11"); err == nil || !strings.Contains(out, "the token is not valid") {
		t.Fatalf("login with a wrong token: %v\n%s", err, out)
	}
	out, err := chalk("login", first.URL, "--token", tok)
	if err != nil || !strings.Contains(out, "pinned the server's self-signed certificate "+first.Fingerprint) || !strings.Contains(out, "as "+owner) {
		t.Fatalf("login: %v\n%s", err, out)
	}
	saved, _ := os.ReadFile(filepath.Join(dir, "xdg", "chalk", "config.toml"))
	if !strings.Contains(string(saved), first.Fingerprint) {
		t.Fatalf("the pin was not saved:\n%s", saved)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "xdg", "chalk", "config.toml")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the settings file is %v, want 0600", fi.Mode().Perm())
	}
	// The saved settings are enough.
	id, err := chalk("container", "run", "--image", w.images["bash"], "--name", "carols", "--lifetime", "5m")
	if err != nil {
		t.Fatalf("run with the saved settings: %v\n%s", err, id)
	}
	if out, err := chalk("session", "exec", "carols", "echo", "through the real server"); err != nil || out != "through the real server\n" {
		t.Fatalf("exec: %v %q", err, out)
	}
	if out, err := chalk("container", "rm", "carols"); err != nil {
		t.Fatalf("rm: %v %s", err, out)
	}
	// SIGTERM: a clean stop.
	_ = srv.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the server exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop on SIGTERM")
	}
	log := <-rest
	if !strings.Contains(log, `"msg":"request"`) || !strings.Contains(log, `"owner":"`+owner+`"`) || !strings.Contains(log, `"msg":"stopped"`) {
		t.Fatalf("the log lacks requests or the stop:\n%s", log)
	}
	if strings.Contains(log, tok) {
		t.Fatal("the log contains the token")
	}
}
