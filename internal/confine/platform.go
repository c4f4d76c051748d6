package confine

import (
	"errors"
	"runtime"
)

// errNotLinux is what confinement says off Linux.
var errNotLinux = errors.New("the student's box needs Linux (cgroups, nftables, seccomp, loop devices)")

// Supported returns nil where the student's box can be built, which is
// Linux (given the privileges the sandbox is started with), and an
// error saying so anywhere else. Off Linux, chalk is a client: the
// harness that confines the student runs in a Linux sandbox.
func Supported() error {
	if runtime.GOOS != "linux" {
		return errNotLinux
	}
	return nil
}
