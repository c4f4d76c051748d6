package plugin

import (
	"context"
	"fmt"

	"github.com/chalk-rl/chalk/internal/hint"
)

type runArgsRequest struct {
	Version        int             `json:"version"`
	Plugin         string          `json:"plugin"`
	Environment    string          `json:"environment"`
	EnvironmentDir string          `json:"environment_dir"`
	Hardware       string          `json:"hardware"`
	Runtime        string          `json:"runtime"`
	Limits         hardwareNumbers `json:"limits"`
}

type runArgsResponse struct {
	Version *int     `json:"version"`
	Args    []string `json:"args"`
}

// RunArgs asks the container_run_args plugin which engine flags to add to
// the sandbox of a container runtime, given the hardware Hardware
// returned. Without such a plugin it returns none. Every flag is checked
// against CheckArgs: a flag that would undo the sandbox's confinement is
// an error, and nothing runs.
func (p *Plugins) RunArgs(ctx context.Context, req Request, hw Hardware) ([]string, error) {
	if p == nil || p.ContainerRunArgs == nil {
		return nil, nil
	}
	c := p.ContainerRunArgs
	var resp runArgsResponse
	out, err := p.call(ctx, c, runArgsRequest{
		Version: Version, Plugin: ContainerRunArgs, Environment: req.Environment, EnvironmentDir: req.EnvironmentDir,
		Hardware: hw.Name, Runtime: req.Runtime,
		Limits: hardwareNumbers{CPUs: hw.CPUs, MemoryBytes: hw.MemoryBytes, DiskBytes: hw.DiskBytes, Devices: hw.Devices},
	}, &resp)
	if err != nil {
		return nil, err
	}
	if err := checkVersion(c, resp.Version, string(out)); err != nil {
		return nil, err
	}
	if err := CheckArgs(resp.Args); err != nil {
		return nil, hint.Wrap(fmt.Errorf("%s: %w\nstdout: %s", c, err, excerpt(string(out))), hint.Of(err))
	}
	return resp.Args, nil
}
