// Package registry knows every runtime by its --runtime name and picks the
// default one for this machine.
package registry

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/docker"
	"github.com/chalk-rl/chalk/internal/runtime/engine"
	"github.com/chalk-rl/chalk/internal/runtime/firecracker"
	"github.com/chalk-rl/chalk/internal/runtime/gvisor"
	"github.com/chalk-rl/chalk/internal/runtime/nerdctl"
	"github.com/chalk-rl/chalk/internal/runtime/podman"
)

// Names lists every runtime, VMs first.
var Names = []string{firecracker.Name, "apple-container", "modal", docker.Name, podman.Name, nerdctl.Name, gvisor.Name}

// Lookup returns the runtime called name.
func Lookup(name string) (runtime.Runtime, error) {
	switch name {
	case docker.Name:
		return docker.New(), nil
	case podman.Name:
		return podman.New(), nil
	case nerdctl.Name:
		return nerdctl.New(), nil
	case gvisor.Name:
		return gvisor.New(), nil
	case firecracker.Name:
		return &runtime.Unavailable{
			RuntimeName: firecracker.Name,
			Caps:        runtime.Capabilities{Mounts: "read-only"},
			Checks: func(ctx context.Context) []runtime.Check {
				return firecracker.Preflight(ctx, runtime.RealHost())
			},
		}, nil
	case "apple-container":
		return &runtime.Unavailable{RuntimeName: name, Caps: runtime.Capabilities{Mounts: "copied"},
			Checks: platformOnly(name, "darwin", "Apple's container runs on macOS only")}, nil
	case "modal":
		return &runtime.Unavailable{RuntimeName: name, Checks: modalChecks}, nil
	}
	return nil, hint.Newf("pick one of: "+strings.Join(Names, ", "), "unknown runtime %q", name)
}

// Installed returns the runtimes that may hold sandboxes on this machine:
// the container engines whose client is on PATH, one per client
// (docker:gvisor's sandboxes are docker's). It runs no preflight, so it
// is cheap enough for every chalk invocation.
func Installed() []runtime.Runtime {
	var out []runtime.Runtime
	seen := map[string]bool{}
	for _, n := range Names {
		rt, _ := Lookup(n)
		e, ok := rt.(*engine.Engine)
		if !ok || seen[e.Bin] {
			continue
		}
		seen[e.Bin] = true
		if _, err := exec.LookPath(e.Bin); err == nil {
			out = append(out, rt)
		}
	}
	return out
}

// Default picks the runtime used when --runtime is not given: the
// platform's VM, so the student gets its own kernel. It returns the name
// and why it was picked.
func Default(h runtime.Host) (string, string) {
	switch {
	case h.GOOS == "darwin":
		return "apple-container", "the default on macOS"
	case h.GOOS == "linux" && firecracker.CanRunVM(h):
		return firecracker.Name, "the default on Linux with " + firecracker.KVMDevice
	}
	return docker.Name, fmt.Sprintf("this machine has no %s, so it cannot run a VM", firecracker.KVMDevice)
}

func platformOnly(name, goos, why string) func(context.Context) []runtime.Check {
	return func(context.Context) []runtime.Check {
		h := runtime.RealHost()
		c := runtime.Check{Runtime: name, Name: "runs on " + goos}
		if h.GOOS != goos {
			c.Status, c.Detail, c.Fix = runtime.Fail, why+"; this machine runs "+h.GOOS, "pass --runtime docker, or --runtime firecracker on Linux with /dev/kvm"
			return []runtime.Check{c}
		}
		c.Status = runtime.Pass
		return []runtime.Check{c, {Runtime: name, Name: "sandboxes", Status: runtime.Fail,
			Detail: "this release of chalk cannot start apple-container sandboxes yet", Fix: "pass --runtime docker or --runtime podman"}}
	}
}

func modalChecks(context.Context) []runtime.Check {
	h := runtime.RealHost()
	c := runtime.Check{Runtime: "modal", Name: "modal client is installed"}
	if p, err := h.LookPath("modal"); err != nil {
		c.Status, c.Detail, c.Fix = runtime.Fail, "not found on PATH", "add the Modal client to the environment and log in:\n  uv add 'chalk-rl-env[modal]'\n  modal token new"
	} else {
		c.Status, c.Detail = runtime.Pass, p
	}
	return []runtime.Check{c, {Runtime: "modal", Name: "sandboxes", Status: runtime.Fail,
		Detail: "this release of chalk cannot start modal sandboxes yet", Fix: "pass --runtime docker or --runtime podman"}}
}

// Forwarded are the host variables passed into every sandbox.
var Forwarded = []string{"CHALK_STUDENT_NETWORK", "CHALK_INFERENCE_SERVICE_TIER", "LOGURU_LEVEL"}

// ForwardedEnv returns the forwarded variables that are set.
func ForwardedEnv() map[string]string {
	out := map[string]string{}
	for _, k := range Forwarded {
		if v, ok := os.LookupEnv(k); ok {
			out[k] = v
		}
	}
	return out
}
