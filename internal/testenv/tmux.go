package testenv

import (
	"os/exec"
	"testing"
)

// Tmux returns the path of tmux, for tests that drive a program in a real
// terminal. It skips t when there is none, unless CI is set, where a
// missing tmux is a failure: scripts/setup.sh installs it.
func Tmux(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("tmux")
	if err != nil {
		skipOrFail(t, "no tmux on PATH for the terminal tests; run scripts/setup.sh (apt-get install tmux)")
	}
	return p
}
