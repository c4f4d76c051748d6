package plugin

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/hint"
)

func TestRunArgsPluginAddsDeviceFlags(t *testing.T) {
	dir := project(t, "[plugins]\ncontainer_run_args = \"args.sh\"\n")
	script(t, filepath.Join(dir, ".chalk", "args.sh"), `cat > request.json
echo '{"version": 1, "args": ["--gpus", "device=0,1", "--device=/dev/null", "-e", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "--shm-size=8g"]}'`)
	p, err := Load(dir)
	require.NoError(t, err)
	hw := Hardware{Name: "gpu-small", CPUs: 8, MemoryBytes: 16 << 30, Devices: []Device{{Kind: "gpu", Count: 2, Passthrough: true}}}
	args, err := p.RunArgs(context.Background(), gpuRequest(dir), hw)
	require.NoError(t, err)
	assert.Equal(t, []string{"--gpus", "device=0,1", "--device=/dev/null", "-e", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "--shm-size=8g"}, args)

	var req map[string]any
	b, err := os.ReadFile(filepath.Join(dir, ".chalk", "request.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &req))
	assert.Equal(t, "container_run_args", req["plugin"])
	assert.Equal(t, "gpu-small", req["hardware"])
	assert.Equal(t, map[string]any{"cpus": 8.0, "memory_bytes": float64(16 << 30), "disk_bytes": 0.0,
		"devices": []any{map[string]any{"kind": "gpu", "count": 2.0, "passthrough": true}}}, req["limits"])
}

func TestRunArgsPluginCannotUndoConfinement(t *testing.T) {
	dir := project(t, "[plugins]\ncontainer_run_args = \"args.sh\"\n")
	script(t, filepath.Join(dir, ".chalk", "args.sh"), `echo '{"version": 1, "args": ["--gpus", "all", "--privileged"]}'`)
	p, err := Load(dir)
	require.NoError(t, err)
	_, err = p.RunArgs(context.Background(), gpuRequest(dir), Hardware{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plugin container_run_args (")
	assert.Contains(t, err.Error(), `args[2] "--privileged" is not allowed: it gives the sandbox every capability`)
	assert.Contains(t, err.Error(), `stdout: {"version": 1, "args": ["--gpus", "all", "--privileged"]}`)
	assert.Contains(t, hint.Of(err), "the flags a plugin may add are --cpuset-cpus")

	script(t, filepath.Join(dir, ".chalk", "args.sh"), `echo '{"version": 1, "argz": []}'`)
	_, err = p.RunArgs(context.Background(), gpuRequest(dir), Hardware{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "argz"`)
	assert.Contains(t, hint.Of(err), "version, args")
}

func TestCheckArgs(t *testing.T) {
	tmp := t.TempDir()
	models := filepath.Join(tmp, "models")
	require.NoError(t, os.Mkdir(models, 0o755))
	// A socket that is not named *.sock, and a link to it: an engine's
	// socket under another name.
	sock := filepath.Join(tmp, "engine")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, os.Symlink(sock, filepath.Join(tmp, "innocent")))
	require.NoError(t, os.Symlink("/etc", filepath.Join(tmp, "etc-link")))

	for _, ok := range [][]string{
		{"--device", "/dev/null"},
		{"--device=/dev/null:/dev/gpu0:rw"},
		{"--device", "nvidia.com/gpu=all"},
		{"--gpus", "all"},
		{"--gpus=device=0,1"},
		{"-v", models + ":/models:ro"},
		{"-v" + models + ":/models"},
		{"--volume=hf-cache:/root/.cache/huggingface"},
		{"--mount", "type=bind,source=" + models + ",target=/models,readonly"},
		{"--mount=type=tmpfs,target=/scratch,tmpfs-size=1g"},
		{"--shm-size=8g", "--ulimit", "memlock=-1:-1", "--group-add", "video", "--cpuset-cpus", "0-3"},
		{"-eNVIDIA_VISIBLE_DEVICES=all", "--env=A=b", "-e", "B=c"},
		{"--label", "team=rl"},
		{},
	} {
		assert.NoError(t, CheckArgs(ok), "%q", ok)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--privileged"}, "every capability"},
		{[]string{"--cap-add=SYS_ADMIN"}, "capabilities Chalk drops"},
		{[]string{"--cap-add", "ALL"}, "capabilities Chalk drops"},
		{[]string{"--security-opt", "seccomp=unconfined"}, "seccomp"},
		{[]string{"--security-opt=apparmor=unconfined"}, "seccomp"},
		{[]string{"--network", "host"}, "firewall"},
		{[]string{"--network=host"}, "firewall"},
		{[]string{"--net=host"}, "firewall"},
		{[]string{"--pid", "host"}, "every host process"},
		{[]string{"--pid=host"}, "every host process"},
		{[]string{"--ipc=host"}, "IPC"},
		{[]string{"--userns=host"}, "user namespace"},
		{[]string{"--runtime=runc"}, "gVisor"},
		{[]string{"--device-cgroup-rule", "c *:* rwm"}, "any device"},
		{[]string{"--user", "0"}, "root"},
		{[]string{"-u0"}, "root"},
		{[]string{"--entrypoint", "/bin/sh"}, "harness"},
		{[]string{"--memory=1t"}, "hardware_limits"},
		{[]string{"-it"}, "attaches"},
		{[]string{"-p", "8080:80"}, "port"},
		{[]string{"-v", "/:/host"}, "whole file system"},
		{[]string{"--volume=/:/host:ro"}, "whole file system"},
		{[]string{"-v", "/var/run/docker.sock:/var/run/docker.sock"}, "the host's own"},
		{[]string{"-v", "/run/podman/podman.sock:/s"}, "the host's own"},
		{[]string{"-v", filepath.Join(tmp, "x.sock") + ":/s"}, "socket"},
		{[]string{"-v", sock + ":/s"}, "socket"},
		{[]string{"-v", filepath.Join(tmp, "innocent") + ":/s"}, "socket"},
		{[]string{"-v", filepath.Join(tmp, "etc-link") + ":/hostetc"}, "the host's own (/etc)"},
		{[]string{"-v", "/var:/v"}, "/var holds /var/run, which is the host's own"},
		{[]string{"-v", "/var/lib:/v"}, "holds /var/lib/docker"},
		{[]string{"-v", "/proc:/p"}, "the host's own"},
		{[]string{"-v", models + "/../../../../etc:/x"}, "the host's own"},
		{[]string{"-v", models + ":/out"}, "target /out"},
		{[]string{"-v", models + ":/.chalk/chalk"}, "target /.chalk/chalk"},
		{[]string{"-v", models + ":/"}, "sandbox's root"},
		{[]string{"-v", models + ":/m:shared"}, `option "shared"`},
		{[]string{"--mount", "type=bind,source=/run/docker.sock,target=/s"}, "the host's own"},
		{[]string{"--mount", "type=bind,src=/,dst=/host"}, "whole file system"},
		{[]string{"--mount", "type=volume,source=v,target=/v,volume-opt=device=/"}, `mount option "volume-opt"`},
		{[]string{"--mount", "type=bind,source=" + models + ",target=/m,bind-propagation=rshared"}, "back to the host"},
		{[]string{"--mount", "type=image,source=x,target=/x"}, `mount type "image"`},
		{[]string{"--device", "/dev/sda"}, "host disk"},
		{[]string{"--device=/dev/nvme0n1"}, "host disk"},
		{[]string{"--device", "/dev/mem"}, "memory"},
		{[]string{"--device", "/dev/../etc/shadow"}, "out of /dev"},
		{[]string{"--device", "/etc/shadow"}, "under /dev"},
		{[]string{"-e", "CHALK_STUDENT_NETWORK=host"}, "CHALK_"},
		{[]string{"--env=PATH"}, "KEY=VALUE"},
		{[]string{"--label", "dev.chalk.run=other"}, "Chalk's own"},
		{[]string{"--ulimit", "nproc=100000"}, "memlock, stack, nofile"},
		{[]string{"--gpus"}, "has no value"},
		{[]string{"alpine"}, "not a flag"},
		{[]string{"--gpus", "all", "sh"}, "not a flag"},
		{[]string{"--", "--privileged"}, "not a flag"},
		{[]string{"--frobnicate"}, "not a flag a plugin may add"},
	} {
		err := CheckArgs(tc.args)
		if assert.Error(t, err, "%q", tc.args) {
			assert.Contains(t, err.Error(), tc.err, "%q", tc.args)
			assert.True(t, strings.Contains(hint.Of(err), "remove it") || strings.Contains(hint.Of(err), "value"), "%q: %s", tc.args, hint.Of(err))
		}
	}
}
