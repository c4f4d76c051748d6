// Package docker is the docker runtime: sandboxes are containers run by
// dockerd, images are built with docker buildx.
package docker

import (
	"context"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/engine"
)

// Name is the --runtime value.
const Name = "docker"

const installFix = "install docker: on Debian/Ubuntu 'sudo apt-get install docker.io docker-buildx', then 'sudo usermod -aG docker $USER' and log in again"

// BuildxFix is how to get the buildx plugin.
const BuildxFix = `install the buildx plugin: on Ubuntu 'sudo apt-get install docker-buildx' (Docker's own packages include it already);
on Debian, which has no package for it, build it with Go:
  GOBIN=/tmp/buildx go install github.com/docker/buildx/cmd/buildx@` + runtime.BuildxVersion + `
  sudo install -D -m 0755 /tmp/buildx/buildx /usr/local/lib/docker/cli-plugins/docker-buildx`

// New returns the docker runtime.
func New() *engine.Engine {
	return Configure(&engine.Engine{RuntimeName: Name, Bin: "docker"})
}

// Configure fills e with what docker needs; docker:gvisor starts from it.
func Configure(e *engine.Engine) *engine.Engine {
	e.BuildArgs = BuildArgs
	e.Caps = runtime.Capabilities{Mounts: "live"}
	e.Checks = func(ctx context.Context) []runtime.Check { return Steps(ctx, e) }
	return e
}

// Steps runs docker's preflight for e.
func Steps(ctx context.Context, e *engine.Engine, more ...engine.Step) []runtime.Check {
	steps := []engine.Step{
		{Name: "docker is installed", Run: func(context.Context) runtime.Check {
			return engine.BinaryCheck(e.RuntimeName, "docker", installFix)
		}},
		{Name: "docker daemon answers", Run: func(ctx context.Context) runtime.Check {
			return e.DaemonCheck(ctx, "version", "--format", "{{.Server.Version}}")
		}},
		{Name: "docker buildx is installed", ForBuild: true, Run: func(ctx context.Context) runtime.Check {
			return engine.CommandCheck(ctx, e.RuntimeName, "", BuildxFix, "docker", "buildx", "version")
		}},
	}
	return engine.RunSteps(ctx, e.RuntimeName, append(steps, more...)...)
}

// BuildArgs builds with buildx into docker's own image store.
func BuildArgs(req runtime.BuildRequest) []string {
	args := []string{"buildx", "build", "--load", "--progress", "plain", "--tag", req.Tag, "--file", req.Containerfile}
	return append(append(args, engine.LabelArgs(req.Labels)...), req.Dir)
}
