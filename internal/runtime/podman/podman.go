// Package podman is the podman runtime: podman builds and runs on its own,
// with no daemon.
package podman

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/engine"
)

// Name is the --runtime value.
const Name = "podman"

const installFix = "install podman: on Debian/Ubuntu 'sudo apt-get install podman'; on macOS also 'podman machine init && podman machine start'"

// New returns the podman runtime.
func New() *engine.Engine {
	e := &engine.Engine{RuntimeName: Name, Bin: "podman", BuildArgs: engine.BuildArgs}
	e.Caps = runtime.Capabilities{Mounts: "live"}
	e.CreateArgs = UlimitArgs()
	e.RemoveArgs = []string{"rm", "--force", "--time", "0", "--volumes"}
	e.Checks = func(ctx context.Context) []runtime.Check {
		return engine.RunSteps(ctx, Name,
			engine.Step{Name: "podman is installed", Run: func(context.Context) runtime.Check {
				return engine.BinaryCheck(Name, "podman", installFix)
			}},
			engine.Step{Name: "podman answers", Run: func(ctx context.Context) runtime.Check {
				return e.DaemonCheck(ctx, "version", "--format", "{{.Version}}")
			}},
		)
	}
	return e
}

// UlimitArgs pins the container's RLIMIT_NOFILE and RLIMIT_NPROC to what
// this process already has.
//
// Rootful podman (4.x) gives every container nofile=1048576 and
// nproc=pid_max unless told otherwise, and the OCI runtime must then raise
// the hard limits, which fails where the caller lacks CAP_SYS_RESOURCE
// (containers in containers, CI sandboxes):
//
//	error setting rlimits for ready process: error setting rlimit type 7: operation not permitted
//
// Both limits must be given: with only one, podman fills in the other with
// its default. '--ulimit host' does not help in 4.3. Values no higher than
// our own hard limits always work; the harness sets the student's own.
func UlimitArgs() []string {
	var nofile, nproc syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile) != nil {
		return nil
	}
	const rlimitNPROC = 6
	if syscall.Getrlimit(rlimitNPROC, &nproc) != nil {
		return nil
	}
	np := nproc.Max
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if pm, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && pm < np {
			np = pm
		}
	}
	return []string{
		"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Max, nofile.Max),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", np, np),
	}
}
