package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/hint"
)

// Device kinds a hardware_limits plugin may name.
const DeviceGPU = "gpu"

var deviceKinds = []string{DeviceGPU}

// Request is what Chalk tells a plugin about the run to come.
type Request struct {
	Environment    string       // the environment's name
	EnvironmentDir string       // its directory, absolute
	Hardware       env.Hardware // chalk.toml's [hardware]: the name a plugin maps, and the defaults
	Runtime        string       // the --runtime name, e.g. docker
}

// Hardware is what a sandbox gets.
type Hardware struct {
	Name        string
	CPUs        float64
	MemoryBytes int64
	DiskBytes   int64 // zero: no cap beyond the host's free space
	Devices     []Device
	// Source says where the numbers come from: "chalk.toml" or the
	// plugin.
	Source string
}

// Device is hardware handed to the sandbox.
type Device struct {
	Kind        string `json:"kind"`
	Count       int    `json:"count"`
	Passthrough bool   `json:"passthrough"`
}

// Passthrough reports whether any device is passed through from the
// host, such as a GPU: such hardware runs only under docker.
func (h Hardware) Passthrough() bool {
	for _, d := range h.Devices {
		if d.Passthrough {
			return true
		}
	}
	return false
}

// Env returns the hardware as the environment's config holds it.
func (h Hardware) Env() env.Hardware {
	return env.Hardware{Name: h.Name, CPUs: h.CPUs, MemoryBytes: h.MemoryBytes, DiskBytes: h.DiskBytes}
}

// wire forms

type hardwareRequest struct {
	Version        int             `json:"version"`
	Plugin         string          `json:"plugin"`
	Environment    string          `json:"environment"`
	EnvironmentDir string          `json:"environment_dir"`
	Hardware       string          `json:"hardware"`
	Runtime        string          `json:"runtime"`
	Defaults       hardwareNumbers `json:"defaults"`
}

type hardwareNumbers struct {
	CPUs        float64  `json:"cpus"`
	MemoryBytes int64    `json:"memory_bytes"`
	DiskBytes   int64    `json:"disk_bytes"`
	Devices     []Device `json:"devices,omitempty"`
}

type hardwareResponse struct {
	Version *int             `json:"version"`
	CPUs    *float64         `json:"cpus"`
	Memory  json.RawMessage  `json:"memory"`
	Disk    json.RawMessage  `json:"disk"`
	Devices []deviceResponse `json:"devices"`
}

type deviceResponse struct {
	Kind        string `json:"kind"`
	Count       *int   `json:"count"`
	Passthrough *bool  `json:"passthrough"`
}

// Hardware asks the hardware_limits plugin what req's hardware is. With
// no such plugin, it is chalk.toml's [hardware], whose defaults are 2
// CPUs and 4 GiB. The answer is checked whole: an error names the plugin,
// what it printed and the fix.
func (p *Plugins) Hardware(ctx context.Context, req Request) (Hardware, error) {
	hw := Hardware{Name: req.Hardware.Name, CPUs: req.Hardware.CPUs, MemoryBytes: req.Hardware.MemoryBytes,
		DiskBytes: req.Hardware.DiskBytes, Source: "chalk.toml"}
	if p == nil || p.HardwareLimits == nil {
		return hw, nil
	}
	c := p.HardwareLimits
	var resp hardwareResponse
	out, err := p.call(ctx, c, hardwareRequest{
		Version: Version, Plugin: HardwareLimits, Environment: req.Environment, EnvironmentDir: req.EnvironmentDir,
		Hardware: req.Hardware.Name, Runtime: req.Runtime,
		Defaults: hardwareNumbers{CPUs: hw.CPUs, MemoryBytes: hw.MemoryBytes, DiskBytes: hw.DiskBytes},
	}, &resp)
	if err != nil {
		return Hardware{}, err
	}
	if err := checkVersion(c, resp.Version, string(out)); err != nil {
		return Hardware{}, err
	}
	bad := func(fix, format string, args ...any) error {
		return hint.Newf(fix, "%s answered for hardware %q: %s\nstdout: %s", c, req.Hardware.Name, fmt.Sprintf(format, args...), excerpt(string(out)))
	}
	hw.Source = c.String()
	if resp.CPUs != nil {
		v := *resp.CPUs
		if !(v > 0) || math.IsInf(v, 0) {
			return Hardware{}, bad(`answer a number of CPUs above zero, e.g. "cpus": 4`, "cpus %v must be above zero", v)
		}
		hw.CPUs = v
	}
	if resp.Memory != nil {
		m, err := size(resp.Memory)
		if err != nil {
			return Hardware{}, bad(`answer a size such as "memory": "16GiB" or a number of bytes`, "memory %s: %v", resp.Memory, err)
		}
		if m < env.MinMemoryBytes {
			return Hardware{}, bad(`answer at least "2GiB": 1GiB is kept for the harness and the student gets the rest`,
				"memory %s is below the minimum of %s", env.FormatSize(m), env.FormatSize(env.MinMemoryBytes))
		}
		hw.MemoryBytes = m
	}
	if resp.Disk != nil {
		d, err := size(resp.Disk)
		if err != nil {
			return Hardware{}, bad(`answer a size such as "disk": "100GiB", a number of bytes, or 0 for no cap`, "disk %s: %v", resp.Disk, err)
		}
		hw.DiskBytes = d
	}
	for i, d := range resp.Devices {
		kind := strings.ToLower(d.Kind)
		if !slices.Contains(deviceKinds, kind) {
			return Hardware{}, bad(`name a device Chalk knows: `+strings.Join(deviceKinds, ", "),
				"devices[%d]: unknown device kind %q", i, d.Kind)
		}
		dev := Device{Kind: kind, Count: 1}
		if d.Count != nil {
			if *d.Count < 1 {
				return Hardware{}, bad(`answer a count of 1 or more, e.g. "count": 1`, "devices[%d]: count %d must be 1 or more", i, *d.Count)
			}
			dev.Count = *d.Count
		}
		if d.Passthrough == nil || !*d.Passthrough {
			return Hardware{}, bad(`mark it "passthrough": true: a `+kind+` is handed to the sandbox from the host, and only docker can do that`,
				"devices[%d]: a %s must be marked \"passthrough\": true", i, kind)
		}
		dev.Passthrough = true
		hw.Devices = append(hw.Devices, dev)
	}
	return hw, nil
}

// size reads a size: a string env.ParseSize takes, or a whole number of
// bytes.
func size(raw json.RawMessage) (int64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return env.ParseSize(s)
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("want a string such as \"16GiB\" or a number of bytes")
	}
	switch {
	case f < 0:
		return 0, fmt.Errorf("is negative")
	case f != math.Trunc(f) || f > math.MaxInt64/2:
		return 0, fmt.Errorf("is not a whole number of bytes")
	}
	return int64(f), nil
}

// CheckRuntime says whether hw can run on the runtime named rt. Hardware
// with a passthrough device, such as a GPU, runs only under docker.
func CheckRuntime(hw Hardware, rt string) error {
	if !hw.Passthrough() || rt == "docker" {
		return nil
	}
	var kinds []string
	for _, d := range hw.Devices {
		if d.Passthrough {
			kinds = append(kinds, fmt.Sprintf("%d %s", d.Count, d.Kind))
		}
	}
	what := fmt.Sprintf("hardware %q passes through %s from the host (%s)", hw.Name, strings.Join(kinds, ", "), hw.Source)
	if rt == "modal" {
		return hint.Newf("run it with --runtime docker on a machine that has the device",
			"%s: the modal runtime can't run hardware a plugin marks passthrough, such as a GPU, because Modal's VM runtime has no GPUs", what)
	}
	return hint.Newf("run it with --runtime docker on a machine that has the device",
		"%s: tasks that need devices passed through run under docker, not %s", what, rt)
}
