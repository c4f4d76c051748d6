// Package nerdctl is the nerdctl runtime: containerd's docker-compatible
// client. It builds through BuildKit, so buildctl must be on PATH and
// buildkitd running; Chalk checks the first only.
package nerdctl

import (
	"context"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/engine"
)

// Name is the --runtime value.
const Name = "nerdctl"

const installFix = "install nerdctl's \"full\" release, which bundles containerd, BuildKit (buildctl and buildkitd) and the CNI plugins, and start containerd"

// BuildctlFix is how to get buildctl.
const BuildctlFix = "nerdctl builds through BuildKit: put buildctl on your PATH and start buildkitd (nerdctl's \"full\" release bundles both)"

// New returns the nerdctl runtime.
func New() *engine.Engine {
	e := &engine.Engine{RuntimeName: Name, Bin: "nerdctl", BuildArgs: engine.BuildArgs}
	e.Caps = runtime.Capabilities{Mounts: "live"}
	e.Checks = func(ctx context.Context) []runtime.Check {
		return engine.RunSteps(ctx, Name,
			engine.Step{Name: "nerdctl is installed", Run: func(context.Context) runtime.Check {
				return engine.BinaryCheck(Name, "nerdctl", installFix)
			}},
			engine.Step{Name: "containerd answers", Run: func(ctx context.Context) runtime.Check {
				return e.DaemonCheck(ctx, "version", "--format", "{{.Server.Version}}")
			}},
			engine.Step{Name: "buildctl is installed", ForBuild: true, Run: func(context.Context) runtime.Check {
				return engine.BinaryCheck(Name, "buildctl", BuildctlFix)
			}},
		)
	}
	return e
}
