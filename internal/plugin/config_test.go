package plugin

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/config"
	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/hint"
)

func TestLoadFindsTheProjectConfigAboveTheDirectory(t *testing.T) {
	dir := project(t, `
[api]
url = "https://chalk.example"
token_file = "~/.chalk-token"

[api.tls]
insecure = false

[plugins]
hardware_limits = "plugins/hw.sh"
container_run_args = ["/bin/sh", "plugins/args.sh", "--flag"]
timeout = "5s"
`)
	hw := script(t, filepath.Join(dir, ".chalk", "plugins", "hw.sh"), "true")
	sub := filepath.Join(dir, "envs", "hello")
	require.NoError(t, os.MkdirAll(sub, 0o755))

	p, err := Load(sub)
	require.NoError(t, err)
	require.NotNil(t, p.HardwareLimits)
	assert.Equal(t, []string{hw}, p.HardwareLimits.Argv, "relative to the config file's directory")
	assert.Equal(t, filepath.Join(dir, ".chalk"), p.HardwareLimits.Dir)
	require.NotNil(t, p.ContainerRunArgs)
	assert.Equal(t, []string{"/bin/sh", "plugins/args.sh", "--flag"}, p.ContainerRunArgs.Argv)
	assert.Equal(t, 5*time.Second, p.Timeout)
	assert.Equal(t, []string{filepath.Join(dir, ".chalk", "config.toml")}, p.Configs)
}

func TestProjectKeysWinOverTheUsersKeys(t *testing.T) {
	dir := project(t, "[plugins]\nhardware_limits = \"project-hw.sh\"\n")
	script(t, filepath.Join(dir, ".chalk", "project-hw.sh"), "true")
	user := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", user)
	writeFile(t, filepath.Join(user, "chalk", "config.toml"), "[plugins]\nhardware_limits = \"user-hw.sh\"\ncontainer_run_args = \"user-args.sh\"\n", 0o644)
	script(t, filepath.Join(user, "chalk", "user-hw.sh"), "true")
	script(t, filepath.Join(user, "chalk", "user-args.sh"), "true")

	p, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, ".chalk", "project-hw.sh"), p.HardwareLimits.Program())
	assert.Equal(t, filepath.Join(user, "chalk", "user-args.sh"), p.ContainerRunArgs.Program())
	assert.Len(t, p.Configs, 2)

	// Without XDG_CONFIG_HOME, the user's file is under ~/.config.
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", home)
	user, err = config.UserFile()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".config", "chalk", "config.toml"), user)
}

func TestNoPluginKeepsChalkTomlHardware(t *testing.T) {
	dir := project(t, "")
	p, err := Load(dir)
	require.NoError(t, err)
	assert.Nil(t, p.HardwareLimits)
	assert.Nil(t, p.ContainerRunArgs)
	def := env.Hardware{Name: env.DefaultHardwareName, CPUs: env.DefaultCPUs, MemoryBytes: env.DefaultMemoryBytes}
	hw, err := p.Hardware(context.Background(), Request{Environment: "hello", Hardware: def, Runtime: "docker"})
	require.NoError(t, err)
	assert.Equal(t, 2.0, hw.CPUs)
	assert.Equal(t, int64(4<<30), hw.MemoryBytes)
	assert.Equal(t, "chalk.toml", hw.Source)
	args, err := p.RunArgs(context.Background(), Request{}, hw)
	require.NoError(t, err)
	assert.Nil(t, args)
	// A nil *Plugins behaves the same.
	var none *Plugins
	hw, err = none.Hardware(context.Background(), Request{Hardware: def})
	require.NoError(t, err)
	assert.Equal(t, def, hw.Env())
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		setup        func(t *testing.T, chalkDir string)
		err, fix     string
	}{
		{name: "unknown key", config: "[plugins]\nhardware_limit = \"x\"\n",
			err: `[plugins] has an unknown key "hardware_limit" (did you mean "hardware_limits"?)`, fix: "hardware_limits, container_run_args, timeout"},
		{name: "not a string", config: "[plugins]\nhardware_limits = 3\n",
			err: "hardware_limits must be a string or an array of strings, not 3", fix: `hardware_limits = "plugins/hardware_limits.sh"`},
		{name: "array of numbers", config: "[plugins]\nhardware_limits = [\"sh\", 1]\n",
			err: "1 in the array is not a string", fix: "as strings"},
		{name: "empty", config: "[plugins]\ncontainer_run_args = []\n",
			err: "container_run_args is empty", fix: "name the program"},
		{name: "missing", config: "[plugins]\nhardware_limits = \"plugins/none.sh\"\n",
			err: "plugins/none.sh does not exist", fix: "a relative path starts from"},
		{name: "missing with arguments", config: "[plugins]\nhardware_limits = \"./hw.sh --gpu\"\n",
			err: "does not exist", fix: `write an array: hardware_limits = ["./hw.sh", "--gpu"]`},
		{name: "not executable, bare name", config: "[plugins]\nhardware_limits = \"hw.sh\"\n",
			setup: func(t *testing.T, d string) { writeFile(t, filepath.Join(d, "hw.sh"), "#!/bin/sh\n", 0o644) },
			err:   "hw.sh is not executable", fix: "chmod +x "},
		{name: "not executable path", config: "[plugins]\nhardware_limits = \"./hw.sh\"\n",
			setup: func(t *testing.T, d string) { writeFile(t, filepath.Join(d, "hw.sh"), "#!/bin/sh\n", 0o644) },
			err:   "hw.sh is not executable", fix: "chmod +x "},
		{name: "directory", config: "[plugins]\nhardware_limits = \"./plugins\"\n",
			setup: func(t *testing.T, d string) { require.NoError(t, os.MkdirAll(filepath.Join(d, "plugins"), 0o755)) },
			err:   "plugins is a directory", fix: "name the program"},
		{name: "not on PATH", config: "[plugins]\nhardware_limits = \"chalk-no-such-plugin\"\n",
			err: `program "chalk-no-such-plugin" is neither in`, fix: "install chalk-no-such-plugin"},
		{name: "bad timeout", config: "[plugins]\ntimeout = \"soon\"\n",
			err: `[plugins] timeout "soon" is not a duration`, fix: `timeout = "30s"`},
		{name: "plugins not a table", config: "plugins = 3\n",
			err: "config.toml:1:", fix: "write [plugins] as a table"},
		{name: "syntax", config: "[plugins\nhardware_limits = 1\n",
			err: "config.toml:1:", fix: "TOML syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, tc.config)
			if tc.setup != nil {
				tc.setup(t, filepath.Join(dir, ".chalk"))
			}
			_, err := Load(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Contains(t, err.Error(), filepath.Join(dir, ".chalk", "config.toml"), "the error names the file")
			assert.Contains(t, hint.Of(err), tc.fix)
		})
	}
}
