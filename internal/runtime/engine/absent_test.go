package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/testenv"
)

// What each client prints for a container or image that does not exist.
var absentMessages = map[string]string{
	"docker container":      "Error response from daemon: No such container: c1",
	"docker several":        "Error response from daemon: No such container: c1\nError response from daemon: No such container: c2",
	"docker image":          "Error response from daemon: no such image: chalk:x: No such image: chalk:x",
	"docker old client":     "Error: No such container: c1",
	"docker object":         "Error: No such object: c1",
	"podman inspect":        "error inspecting object: no such container c2\nError: inspecting object: no such container c1",
	"podman rm":             `Error: no container with name or ID "c1" found: no such container`,
	"podman rm older":       `Error: no container with ID or name "c1" found: no such container`,
	"podman image":          "Error: inspecting object: chalk:x: image not known",
	"nerdctl logged":        `time="2025-01-02T03:04:05Z" level=fatal msg="1 errors:\nno such container: c1"`,
	"nerdctl on a terminal": "FATA[0000] 2 errors:\nno such container: c1\nno such container: c2",
	"with a warning":        "WARN[0000] The cgroupv2 manager is set to systemd but there is no systemd user session available\nError: no such container c1",
}

// Failures that mention something missing but are not about the object
// the call named.
var otherFailures = map[string]string{
	"nothing":                       "",
	"docker daemon down":            "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
	"docker context gone":           `Failed to initialize: unable to resolve docker endpoint: context "gone": context not found: open /root/.docker/contexts/meta/0/meta.json: no such file or directory`,
	"podman socket gone":            "Cannot connect to Podman. Please verify your connection to the Linux system using `podman system connection list`, or try `podman machine init` and `podman machine start` to manage a new Linux VM\nError: unable to connect to Podman socket: Get \"http://d/v4.3.1/libpod/_ping\": dial unix /run/podman/podman.sock: connect: no such file or directory",
	"containerd socket gone":        `time="2025-01-02T03:04:05Z" level=fatal msg="cannot access containerd socket \"/run/containerd/containerd.sock\": no such file or directory"`,
	"permission denied":             "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock",
	"absent beside another failure": "Error response from daemon: No such container: c1\nError response from daemon: permission denied",
	"a name that says not found":    "Error response from daemon: network not-found-net not found",
}

func TestOnlyAbsent(t *testing.T) {
	for name, stderr := range absentMessages {
		require.True(t, onlyAbsent(stderr), "%s: %s", name, stderr)
	}
	for name, stderr := range otherFailures {
		require.False(t, onlyAbsent(stderr), "%s: %s", name, stderr)
	}
}

// fakeClient is an Engine whose client is the shell script body. Each call
// appends its arguments as a line to the file it returns.
func fakeClient(t *testing.T, body string) (*Engine, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	bin := filepath.Join(dir, "fake-engine")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\n" + body + "\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	return &Engine{RuntimeName: "fake", Bin: bin}, log
}

// A client that cannot run, or a daemon that does not answer, is a failure
// to report: Remove and List must not take it for "nothing there".
func TestRemoveAndListReportClientFailures(t *testing.T) {
	// ps answers, so that List reaches inspect; every other call fails.
	failing := func(stderr string) string {
		return "[ \"$1\" = ps ] && { echo c1; exit 0; }\nprintf '%s\\n' '" + stderr + "' >&2\nexit 1"
	}
	for _, tc := range []struct {
		name string
		e    *Engine
		want string
	}{
		{"no client", &Engine{RuntimeName: "fake", Bin: "chalk-no-such-engine"}, "is not installed"},
		{"containerd socket gone", fake(t, failing(`time="2025-01-02T03:04:05Z" level=fatal msg="cannot access containerd socket \"/run/containerd/containerd.sock\": no such file or directory"`)), "cannot access containerd socket"},
		{"podman socket gone", fake(t, failing(`Error: unable to connect to Podman socket: dial unix /run/podman/podman.sock: connect: no such file or directory`)), "unable to connect to Podman"},
		{"docker context gone", fake(t, failing(`Failed to initialize: unable to resolve docker endpoint: context "gone": context not found: open meta.json: no such file or directory`)), "context not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.e.Remove(context.Background(), "c1")
			require.Error(t, err, "Remove")
			require.Contains(t, err.Error(), tc.want)
			boxes, err := tc.e.List(context.Background(), map[string]string{"dev.chalk.test": ""})
			require.Error(t, err, "List")
			require.Contains(t, err.Error(), tc.want)
			require.Nil(t, boxes)
		})
	}
}

func fake(t *testing.T, body string) *Engine {
	e, _ := fakeClient(t, body)
	return e
}

func TestRemoveAbsentIsNotAnError(t *testing.T) {
	for name, stderr := range absentMessages {
		e := fake(t, "printf '%s\\n' '"+stderr+"' >&2\nexit 1")
		require.NoError(t, e.Remove(context.Background(), "c1"), name)
	}
}

func TestImageAbsentAndFailing(t *testing.T) {
	e := fake(t, "echo '[]'\necho 'Error: inspecting object: chalk:x: image not known' >&2\nexit 125")
	info, err := e.Image(context.Background(), "chalk:x")
	require.NoError(t, err)
	require.Nil(t, info)

	e = fake(t, "exit 0") // nerdctl 2 prints nothing for a missing image
	info, err = e.Image(context.Background(), "chalk:x")
	require.NoError(t, err)
	require.Nil(t, info)

	e = fake(t, "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1")
	info, err = e.Image(context.Background(), "chalk:x")
	require.Error(t, err)
	require.Nil(t, info)
	require.Contains(t, err.Error(), "fake-engine image inspect: Cannot connect")
	require.Contains(t, hint.Of(err), "start the docker daemon")

	e = fake(t, "printf 'sha256:1\\tlinux\\tarm64\\n'")
	info, err = e.Image(context.Background(), "chalk:x")
	require.NoError(t, err)
	require.Equal(t, "sha256:1", info.ID)
	require.Equal(t, "arm64", info.Architecture)
}

func docker(t *testing.T) *Engine {
	t.Helper()
	testenv.NeedDocker(t)
	return &Engine{RuntimeName: "docker", Bin: "docker"}
}

func randomName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func TestDockerAbsent(t *testing.T) {
	e := docker(t)
	ctx := context.Background()
	require.NoError(t, e.Remove(ctx, randomName("chalk-enginetest-absent-")))
	boxes, err := e.inspect(ctx, []string{randomName("chalk-enginetest-absent-")})
	require.NoError(t, err)
	require.Empty(t, boxes)
	info, err := e.Image(ctx, randomName("chalk-enginetest-absent:"))
	require.NoError(t, err)
	require.Nil(t, info)
}

// A docker whose daemon cannot be reached fails Remove and List; it does
// not pass for a docker with nothing to remove or list.
func TestDockerUnreachable(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker is not installed; scripts/setup.sh installs it")
	}
	for _, tc := range []struct{ name, key, value string }{
		{"context gone", "DOCKER_CONTEXT", randomName("chalk-enginetest-gone-")},
		{"no socket", "DOCKER_HOST", "unix:///nonexistent/" + randomName("docker-") + ".sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.key, tc.value)
			e := &Engine{RuntimeName: "docker", Bin: "docker"}
			require.Error(t, e.Remove(context.Background(), "chalk-enginetest-any"))
			boxes, err := e.List(context.Background(), map[string]string{"dev.chalk.enginetest": ""})
			require.Error(t, err)
			require.Nil(t, boxes)
			info, err := e.Image(context.Background(), "chalk-enginetest-any:x")
			require.Error(t, err)
			require.Nil(t, info)
		})
	}
}
