//go:build unix

package plugin

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the plugin in its own process group, and makes a
// timeout kill the whole group, so that a plugin's children cannot keep
// it going.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
