package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/registry"
)

const runtimeFlagHelp = "runtime to use: firecracker, apple-container, modal, docker, podman, nerdctl or docker:gvisor (default: the platform's VM)"

// pickRuntime resolves --runtime (or the default), says which runtime it
// picked and why, and runs its preflight, stopping with the failed checks
// and their fixes.
func (a *app) pickRuntime(ctx context.Context, name string) (runtime.Runtime, error) {
	name, why := chooseRuntime(name)
	return a.openRuntime(ctx, name, why, true)
}

// chooseRuntime is the runtime --runtime names, or the default when it
// names none, and why.
func chooseRuntime(flag string) (name, why string) {
	if flag != "" {
		return flag, "chosen with --runtime"
	}
	name, why = registry.Default(runtime.RealHost())
	return name, why + "; pass --runtime to choose another"
}

// openRuntime looks up the runtime called name, logs it with why it was
// chosen, and runs its preflight; without build, the build's own checks
// wait until a build is needed.
func (a *app) openRuntime(ctx context.Context, name, why string, build bool) (runtime.Runtime, error) {
	rt, err := registry.Lookup(name)
	if err != nil {
		return nil, &usageError{err: err, help: hint.Of(err)}
	}
	a.log.Info("runtime "+name, "why", why)
	pctx := ctx
	if !build {
		pctx = runtime.WithoutBuildChecks(ctx)
	}
	if failed := runtime.Failed(rt.Preflight(pctx)); len(failed) > 0 {
		return nil, preflightError(name, failed)
	}
	return rt, nil
}

// preflightError stops a command on failed checks, listing each with its
// fix: the same text chalk doctor prints.
func preflightError(name string, failed []runtime.Check) error {
	var b strings.Builder
	runtime.WriteChecks(&b, failed)
	noun := "check"
	if len(failed) > 1 {
		noun = "checks"
	}
	return hint.Newf(fmt.Sprintf("fix the above, then check again with 'chalk doctor --runtime %s'", name),
		"the %s runtime is not set up (%d %s failed):\n%s", name, len(failed), noun, strings.TrimRight(b.String(), "\n"))
}

// loadEnv loads the environment named by a command's optional DIR argument
// (default: the current directory).
func loadEnv(args []string) (*env.Env, error) {
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	return env.Load(dir)
}
