// Package podman is the podman runtime: podman builds and runs on its own,
// with no daemon.
package podman

import (
	"context"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/engine"
)

// Name is the --runtime value.
const Name = "podman"

const installFix = "install podman: on Debian/Ubuntu 'sudo apt-get install podman'; on macOS also 'podman machine init && podman machine start'"

// New returns the podman runtime.
func New() *engine.Engine {
	e := &engine.Engine{RuntimeName: Name, Bin: "podman", BuildArgs: BuildArgs}
	e.Caps = runtime.Capabilities{Kind: runtime.Container, Mounts: "live", Passthrough: true, KeepContainers: true}
	// Rootful podman raises the container's RLIMIT_NPROC and RLIMIT_NOFILE
	// hard limits to its own defaults, which fails where the caller cannot
	// raise hard limits (no CAP_SYS_RESOURCE). Keeping the caller's own
	// limits always works; the harness sets the student's.
	e.CreateArgs = []string{"--ulimit", "host"}
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

// BuildArgs builds with podman's own builder.
func BuildArgs(req runtime.BuildRequest) []string {
	args := []string{"build", "--tag", req.Tag, "--file", req.Containerfile}
	return append(append(args, engine.LabelArgs(req.Labels)...), req.Dir)
}
