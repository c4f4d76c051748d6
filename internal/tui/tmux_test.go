package tui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/testenv"
)

// tmuxPane is the demo running in a detached tmux session of its own
// server, so the test touches no one else's tmux.
type tmuxPane struct {
	t          *testing.T
	tmux, sock string
}

func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command(p.tmux, append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	require.NoError(p.t, err, "tmux %s: %s", strings.Join(args, " "), out)
	return string(out)
}

func (p *tmuxPane) capture() string {
	p.t.Helper()
	return p.run("capture-pane", "-p", "-t", "demo")
}

// waitFor polls the pane until ok accepts it, and returns it. The deadline
// only bounds a broken test; nothing is measured.
func (p *tmuxPane) waitFor(what string, ok func(pane string) bool) string {
	p.t.Helper()
	var pane string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if pane = p.capture(); ok(pane) {
			return pane
		}
	}
	p.t.Fatalf("the pane never showed %s; it shows:\n%s", what, pane)
	return ""
}

func (p *tmuxPane) waitForAll(what string, want ...string) string {
	p.t.Helper()
	return p.waitFor(what, func(pane string) bool {
		for _, w := range want {
			if !strings.Contains(pane, w) {
				return false
			}
		}
		return true
	})
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

func touch(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, nil, 0o644))
}

// TestInTmux draws the demo's runs in a real 120×30 terminal, and reads
// the screen back as the runs go, after a resize, a key and the end.
func TestInTmux(t *testing.T) {
	tmux := testenv.Tmux(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	p := &tmuxPane{t: t, tmux: tmux, sock: filepath.Join(dir, "tmux.sock")}
	p.run("new-session", "-d", "-x", "120", "-y", "30", "-s", "demo",
		"env "+demoEnv+"='"+dir+"' '"+exe+"'")
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", p.sock, "kill-server").Run() })

	// Three runs under way, each as a block: the sanitized output, the
	// model call, the run not yet started.
	pane := p.waitForAll("the runs under way",
		"image chalk-demo:0123 is up to date",
		"chalk run: 3 runs · 3 running · 0 done · no reward yet",
		"run 1/3 demo01  demo  running",
		"  model    1 call, last demo-model: 200 in 850ms, 120+30 tokens",
		"  | compiling step 1",
		"run 2/3 demo02  demo  running",
		"  | fetching data",
		"run 3/3 demo03  building",
		"q or ctrl+c: stop the runs",
	)
	require.NotContains(t, pane, "title")
	lines := strings.Split(pane, "\n")
	require.Equal(t, "image chalk-demo:0123 is up to date", lines[0], "what was written to the view is printed above it")
	require.True(t, strings.HasPrefix(lines[1], "chalk run: 3 runs"), "pane:\n%s", pane)
	require.NotEqual(t, "title\n", p.run("display-message", "-p", "-t", "demo", "#{pane_title}"),
		"the student's escape sequence set the terminal's title")

	touch(t, filepath.Join(dir, "go1"))
	p.waitForAll("the first two runs done",
		"chalk run: 3 runs · 1 running · 2 done · 1 failed · mean reward 0.75 over 1",
		"run 1/3 demo01  demo  ok",
		"  reward   0.75",
		"run 2/3 demo02  demo  failed",
		"  limits   memory (kernel, killed)",
		"  note     student killed by SIGKILL",
		"run 3/3 demo03  demo  running",
		"  | still going",
	)

	// A smaller terminal: one line per run, drawn afresh from the top.
	p.run("resize-window", "-t", "demo", "-x", "60", "-y", "8")
	pane = p.waitForAll("one line per run",
		"run 1/3 demo01  ok",
		"run 2/3 demo02  failed",
		"run 3/3 demo03  running",
	)
	lines = strings.Split(strings.TrimRight(pane, "\n"), "\n")
	require.True(t, strings.HasPrefix(lines[0], "chalk run: 3 runs · 1 running"), "pane:\n%s", pane)
	require.Equal(t, 1, strings.Count(pane, "chalk run:"), "pane:\n%s", pane)
	require.NotContains(t, pane, "  reward   0.75", "no block is left of the larger frame")

	// q asks chalk run to stop the runs.
	p.run("resize-window", "-t", "demo", "-x", "120", "-y", "30")
	p.run("send-keys", "-t", "demo", "q")
	waitForFile(t, filepath.Join(dir, "interrupted"))
	p.waitForAll("the interrupted run",
		"stopping the runs...",
		"run 3/3 demo03  demo  interrupted",
		"chalk run: 3 runs · 0 running · 3 done · 1 failed · 1 interrupted",
	)

	// Close leaves the last frame, and what follows is printed below it.
	touch(t, filepath.Join(dir, "go2"))
	waitForFile(t, filepath.Join(dir, "closed"))
	pane = p.waitForAll("the last frame and the line after it", "printed after the view")
	lines = strings.Split(strings.TrimRight(pane, "\n"), "\n")
	require.Equal(t, "printed after the view", lines[len(lines)-1], "pane:\n%s", pane)
	require.Contains(t, pane, "run 1/3 demo01  demo  ok")
	require.Contains(t, pane, "run 3/3 demo03  demo  interrupted")
	require.Contains(t, lines[len(lines)-2], "stopping the runs...", "the view's last line is kept")
	touch(t, filepath.Join(dir, "exit"))
}
