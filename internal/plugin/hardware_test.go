package plugin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/hint"
)

func gpuRequest(dir string) Request {
	return Request{Environment: "hello", EnvironmentDir: dir, Runtime: "docker",
		Hardware: env.Hardware{Name: "gpu-small", CPUs: 2, MemoryBytes: 4 << 30}}
}

// hardwarePlugin configures a hardware_limits plugin with body and
// returns the loaded plugins and the project directory.
func hardwarePlugin(t *testing.T, body string) (*Plugins, string) {
	t.Helper()
	dir := project(t, "[plugins]\nhardware_limits = \"hw.sh\"\ntimeout = \"10s\"\n")
	script(t, filepath.Join(dir, ".chalk", "hw.sh"), body)
	p, err := Load(dir)
	require.NoError(t, err)
	return p, dir
}

func TestHardwarePluginMapsTheTask(t *testing.T) {
	p, dir := hardwarePlugin(t, `cat > request.json
pwd > cwd
echo "CHALK_PLUGIN=$CHALK_PLUGIN CHALK_PLUGIN_PROTOCOL=$CHALK_PLUGIN_PROTOCOL" > vars
echo "log line for people" >&2
cat <<'JSON'
{"version": 1, "cpus": 8, "memory": "16GiB", "disk": 100000000000,
 "devices": [{"kind": "gpu", "count": 2, "passthrough": true}]}
JSON`)
	hw, err := p.Hardware(context.Background(), gpuRequest(dir))
	require.NoError(t, err)
	assert.Equal(t, Hardware{Name: "gpu-small", CPUs: 8, MemoryBytes: 16 << 30, DiskBytes: 100e9,
		Devices: []Device{{Kind: "gpu", Count: 2, Passthrough: true}}, Source: p.HardwareLimits.String()}, hw)
	assert.True(t, hw.Passthrough())
	assert.Equal(t, env.Hardware{Name: "gpu-small", CPUs: 8, MemoryBytes: 16 << 30, DiskBytes: 100e9}, hw.Env())

	chalkDir := filepath.Join(dir, ".chalk")
	var req map[string]any
	b, err := os.ReadFile(filepath.Join(chalkDir, "request.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &req))
	assert.Equal(t, map[string]any{
		"version": 1.0, "plugin": "hardware_limits", "environment": "hello", "environment_dir": dir,
		"hardware": "gpu-small", "runtime": "docker",
		"defaults": map[string]any{"cpus": 2.0, "memory_bytes": float64(4 << 30), "disk_bytes": 0.0},
	}, req)
	cwd, _ := os.ReadFile(filepath.Join(chalkDir, "cwd"))
	assert.Equal(t, chalkDir+"\n", string(cwd), "a plugin runs in its config file's directory")
	vars, _ := os.ReadFile(filepath.Join(chalkDir, "vars"))
	assert.Equal(t, "CHALK_PLUGIN=hardware_limits CHALK_PLUGIN_PROTOCOL=1\n", string(vars))
}

func TestHardwarePluginMayAnswerOnlySomeFields(t *testing.T) {
	p, dir := hardwarePlugin(t, `echo '{"version": 1, "memory": 8589934592}'`)
	hw, err := p.Hardware(context.Background(), gpuRequest(dir))
	require.NoError(t, err)
	assert.Equal(t, 2.0, hw.CPUs, "chalk.toml's value where the plugin says nothing")
	assert.Equal(t, int64(8<<30), hw.MemoryBytes)
	assert.Empty(t, hw.Devices)
	assert.False(t, hw.Passthrough())
}

func TestHardwarePluginFailures(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		err, fix   []string
		timeout    time.Duration
	}{
		{name: "crash", body: "echo 'half an answer'; echo 'no GPU inventory at /etc/gpus' >&2; exit 3",
			err: []string{"plugin hardware_limits", "exited with status 3", "stderr: no GPU inventory at /etc/gpus", "stdout: half an answer"},
			fix: []string{"run it by hand", `| `, "hw.sh"}},
		{name: "killed", body: "kill -9 $$",
			err: []string{"was killed by signal 9 (killed)"}, fix: []string{"run it by hand"}},
		{name: "timeout", body: "echo waiting >&2; sleep 30 & sleep 30", timeout: 300 * time.Millisecond,
			err: []string{"did not answer within 300ms", "stderr: waiting"}, fix: []string{`timeout = "600ms" under [plugins] in`}},
		{name: "nothing", body: "true",
			err: []string{"printed nothing on stdout"}, fix: []string{"print exactly one JSON object"}},
		{name: "not json", body: "echo 'cpus: 4'",
			err: []string{"printed something that is not JSON", "stdout: cpus: 4"}, fix: []string{"docs/plugins.md"}},
		{name: "not an object", body: "echo '[1, 2]'",
			err: []string{"printed array, not a JSON object"}},
		{name: "two objects", body: `echo '{"version": 1} {"version": 1}'`,
			err: []string{"printed more than one JSON value"}},
		{name: "unknown field", body: `echo '{"version": 1, "memroy": "8GiB"}'`,
			err: []string{`unknown field "memroy"`}, fix: []string{"version, cpus, memory, disk, devices"}},
		{name: "unknown device field", body: `echo '{"version": 1, "devices": [{"kind": "gpu", "model": "h100"}]}'`,
			err: []string{`unknown field "model"`}},
		{name: "wrong type", body: `echo '{"version": 1, "cpus": "four"}'`,
			err: []string{`string for "cpus", which must be a number`}},
		{name: "no version", body: `echo '{"cpus": 4}'`,
			err: []string{`answered without a "version"`}, fix: []string{`add "version": 1`}},
		{name: "newer version", body: `echo '{"version": 2, "cpus": 4}'`,
			err: []string{"speaks plugin protocol version 2; this chalk speaks version 1"}},
		{name: "negative memory", body: `echo '{"version": 1, "memory": -5}'`,
			err: []string{`answered for hardware "gpu-small": memory -5: is negative`, `stdout: {"version": 1, "memory": -5}`}, fix: []string{`"memory": "16GiB"`}},
		{name: "small memory", body: `echo '{"version": 1, "memory": "1GiB"}'`,
			err: []string{"memory 1GiB is below the minimum of 2GiB"}, fix: []string{"1GiB is kept for the harness"}},
		{name: "bad size", body: `echo '{"version": 1, "disk": "lots"}'`,
			err: []string{`disk "lots"`}},
		{name: "negative disk", body: `echo '{"version": 1, "disk": -1}'`,
			err: []string{"disk -1: is negative"}},
		{name: "no cpus", body: `echo '{"version": 1, "cpus": 0}'`,
			err: []string{"cpus 0 must be above zero"}},
		{name: "unknown device", body: `echo '{"version": 1, "devices": [{"kind": "tpu", "passthrough": true}]}'`,
			err: []string{`devices[0]: unknown device kind "tpu"`}, fix: []string{"name a device Chalk knows: gpu"}},
		{name: "gpu not passthrough", body: `echo '{"version": 1, "devices": [{"kind": "gpu"}]}'`,
			err: []string{`devices[0]: a gpu must be marked "passthrough": true`}},
		{name: "no gpus", body: `echo '{"version": 1, "devices": [{"kind": "gpu", "count": 0, "passthrough": true}]}'`,
			err: []string{"devices[0]: count 0 must be 1 or more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dir := hardwarePlugin(t, tc.body)
			if tc.timeout != 0 {
				p.Timeout = tc.timeout
			}
			_, err := p.Hardware(context.Background(), gpuRequest(dir))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "plugin hardware_limits ("+filepath.Join(dir, ".chalk", "hw.sh")+")", "the error names the plugin")
			for _, s := range tc.err {
				assert.Contains(t, err.Error(), s)
			}
			h := hint.Of(err)
			assert.NotEmpty(t, h, "every failure carries its fix")
			for _, s := range tc.fix {
				assert.Contains(t, h, s)
			}
		})
	}
}

func TestHardwarePluginThatChangedAfterLoad(t *testing.T) {
	p, dir := hardwarePlugin(t, `echo '{"version": 1}'`)
	path := p.HardwareLimits.Program()

	require.NoError(t, os.Chmod(path, 0o644))
	_, err := p.Hardware(context.Background(), gpuRequest(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hw.sh is not executable")
	assert.Equal(t, "make it executable: chmod +x "+path, hint.Of(err))

	writeFile(t, path, `echo '{"version": 1}'`, 0o755) // no #! line
	_, err = p.Hardware(context.Background(), gpuRequest(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not a program the system can run")
	assert.Contains(t, hint.Of(err), "#!")

	require.NoError(t, os.Remove(path))
	_, err = p.Hardware(context.Background(), gpuRequest(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hw.sh does not exist")
}

func TestPassthroughRunsOnlyUnderDocker(t *testing.T) {
	gpu := Hardware{Name: "gpu-small", Devices: []Device{{Kind: "gpu", Count: 1, Passthrough: true}}, Source: "plugin hardware_limits (hw.sh)"}
	require.NoError(t, CheckRuntime(gpu, "docker"))
	for _, rt := range []string{"podman", "nerdctl", "docker:gvisor", "firecracker", "apple-container"} {
		err := CheckRuntime(gpu, rt)
		require.Error(t, err, rt)
		assert.Contains(t, err.Error(), `hardware "gpu-small" passes through 1 gpu from the host (plugin hardware_limits (hw.sh))`)
		assert.Contains(t, err.Error(), "run under docker, not "+rt)
		assert.Equal(t, "run it with --runtime docker on a machine that has the device", hint.Of(err))
	}
	err := CheckRuntime(gpu, "modal")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "can't run hardware a plugin marks passthrough, such as a GPU, because Modal's VM runtime has no GPUs")

	plain := Hardware{Name: "default", CPUs: 2, MemoryBytes: 4 << 30}
	for _, rt := range []string{"docker", "podman", "firecracker", "modal"} {
		assert.NoError(t, CheckRuntime(plain, rt))
	}
}

// The command the hint gives for running a failing plugin by hand, pasted
// into a POSIX sh, sends the plugin the same request with the same
// arguments, whatever the request and the arguments hold.
func TestHardwarePluginByHandRepeatsTheCall(t *testing.T) {
	dir := project(t, `[plugins]
hardware_limits = ["hw.sh", "it's", "a b", "$HOME", "back\\slash", ""]
`)
	script(t, filepath.Join(dir, ".chalk", "hw.sh"), `printf '%s\n' "$@" > "$0.args.$CALL"
cat > "$0.stdin.$CALL"
exit 3`)
	p, err := Load(dir)
	require.NoError(t, err)
	req := gpuRequest(dir)
	req.Environment = "it's \"quoted\", back\\slash, $HOME, `id`, new\nline, tab\t"

	t.Setenv("CALL", "chalk")
	_, err = p.Hardware(context.Background(), req)
	require.Error(t, err)
	const prefix = "run it by hand to see what it does: "
	h := hint.Of(err)
	require.Contains(t, h, prefix)
	byHand := h[strings.Index(h, prefix)+len(prefix):]

	t.Setenv("CALL", "by-hand")
	cmd := exec.Command("sh", "-c", byHand)
	cmd.Dir = t.TempDir()
	require.Error(t, cmd.Run(), "the plugin exits 3 by hand too: %s", byHand)

	prog := p.HardwareLimits.Program()
	for _, what := range []string{"args", "stdin"} {
		want, err := os.ReadFile(prog + "." + what + ".chalk")
		require.NoError(t, err)
		got, err := os.ReadFile(prog + "." + what + ".by-hand")
		require.NoError(t, err, "%s", byHand)
		assert.Equal(t, string(want), string(got), "%s by hand, from: %s", what, byHand)
	}
	args, _ := os.ReadFile(prog + ".args.chalk")
	assert.Equal(t, "it's\na b\n$HOME\nback\\slash\n\n", string(args))
}
