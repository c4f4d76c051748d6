package gvisor

import (
	"context"
	"os"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/docker"
	"github.com/chalk-rl/chalk/internal/runtime/engine"
)

// DaemonJSONEnv names a daemon.json other than /etc/docker/daemon.json
// (for a dockerd started with --config-file).
const DaemonJSONEnv = "CHALK_DOCKER_DAEMON_JSON"

// New returns docker with gVisor: docker, with every sandbox created under
// --runtime=runsc, after checking runsc is registered as the seed requires.
func New() *engine.Engine {
	e := docker.Configure(&engine.Engine{RuntimeName: Name, Bin: "docker", CreateArgs: []string{"--runtime", "runsc"}})
	path := os.Getenv(DaemonJSONEnv)
	if path == "" {
		path = DaemonJSONPath
	}
	e.Checks = func(ctx context.Context) []runtime.Check {
		checks := docker.Steps(ctx, e)
		if len(runtime.Failed(checks)) > 0 || runtime.SkipCheck(ctx, false) {
			return checks
		}
		return append(checks, Preflight(ctx, runtime.RealHost(), path)...)
	}
	return e
}
