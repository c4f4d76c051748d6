package cli_test

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

// chalk run in a real terminal shows the live view: tmux runs it, and
// the screen is read back while the runs are under way and after.
func TestRunShowsTheLiveViewInATerminal(t *testing.T) {
	testenv.NeedDocker(t)
	tmux := testenv.Tmux(t)
	bin := testenv.StaticChalk(t)
	dir := t.TempDir()
	envDir := writeEnv(t, dir, `name = "tuidemo"
[student]
command = ["/bin/sh", "-c", "echo step one; sleep 4; echo all done"]
[grader]
command = ["/bin/sh", "-c", "echo 0.5 > /out/reward"]
`)
	sock := filepath.Join(dir, "tmux.sock")
	script := filepath.Join(dir, "run.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nCHALK_HARNESS_BINARY="+bin+" "+bin+
		" run --runtime docker -n 2 --runs-dir "+filepath.Join(dir, "runs")+" "+envDir+"; echo exit=$?; sleep 60\n"), 0o755))
	start := exec.Command(tmux, "-S", sock, "new-session", "-d", "-x", "120", "-y", "30", script)
	require.NoError(t, start.Run())
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	screen := func() string {
		out, err := exec.Command(tmux, "-S", sock, "capture-pane", "-p").Output()
		require.NoError(t, err)
		return string(out)
	}
	waitFor := func(what string) string {
		t.Helper()
		var s string
		require.Eventually(t, func() bool { s = screen(); return strings.Contains(s, what) },
			3*time.Minute, 100*time.Millisecond, "the screen never showed %q; it shows:\n%s", what, screen())
		return s
	}
	during := waitFor("step one")
	require.Contains(t, during, "chalk run: 2 runs")
	require.Contains(t, during, "run 1/2")
	require.Contains(t, during, "run 2/2")
	require.Contains(t, during, "running")
	after := waitFor("exit=0")
	require.Contains(t, after, "2 ok")
	require.Contains(t, after, "mean reward 0.5 over 2")
	require.Contains(t, after, "all done")
}
