package plugin

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/env"
)

// TestExamplePlugins runs examples/plugins as a user would set them up:
// the config and the scripts copied into a project's .chalk directory.
func TestExamplePlugins(t *testing.T) {
	dir := project(t, "")
	for _, f := range []string{"config.toml", "hardware_limits.sh", "container_run_args.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "plugins", f))
		require.NoError(t, err)
		writeFile(t, filepath.Join(dir, ".chalk", f), string(b), 0o755)
	}
	p, err := Load(dir)
	require.NoError(t, err)
	ctx := context.Background()
	req := func(name string) Request {
		return Request{Environment: "hello", EnvironmentDir: dir, Runtime: "docker",
			Hardware: env.Hardware{Name: name, CPUs: env.DefaultCPUs, MemoryBytes: env.DefaultMemoryBytes}}
	}

	hw, err := p.Hardware(ctx, req("default"))
	require.NoError(t, err)
	assert.Equal(t, 2.0, hw.CPUs)
	assert.Equal(t, int64(4<<30), hw.MemoryBytes)
	args, err := p.RunArgs(ctx, req("default"), hw)
	require.NoError(t, err)
	assert.Empty(t, args)

	hw, err = p.Hardware(ctx, req("gpu-small"))
	require.NoError(t, err)
	assert.Equal(t, []Device{{Kind: "gpu", Count: 1, Passthrough: true}}, hw.Devices)
	assert.Equal(t, int64(32<<30), hw.MemoryBytes)
	require.NoError(t, CheckRuntime(hw, "docker"))
	require.Error(t, CheckRuntime(hw, "podman"))
	args, err = p.RunArgs(ctx, req("gpu-small"), hw)
	require.NoError(t, err)
	assert.Equal(t, []string{"--gpus", "all", "--shm-size", "8g"}, args)

	_, err = p.Hardware(ctx, req("huge"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `stderr: hardware_limits: no hardware named "huge"`)
}
