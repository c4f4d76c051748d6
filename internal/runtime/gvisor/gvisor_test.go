package gvisor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/gvisor"
	"github.com/chalk-rl/chalk/internal/runtime/runtimetest"
	"github.com/chalk-rl/chalk/internal/testenv"
)

// useFake puts stand-ins for docker-with-runsc and runsc first on PATH and
// points the preflight at a daemon.json written by the test. runsc cannot
// be installed here; the stand-in docker runs everything through the real
// one.
func useFake(t *testing.T, daemonJSON string) string {
	// docker buildx is a plugin of the real docker; the stand-in passes
	// the call through, so the plugin directory stays where it is.
	bin, log := testenv.StandIns(t, "testdata/fake", []string{"docker", "runsc"}, os.Getenv("PATH"))
	path := filepath.Join(t.TempDir(), "daemon.json")
	if daemonJSON != "" {
		daemonJSON = strings.ReplaceAll(daemonJSON, "RUNSC", filepath.Join(bin, "runsc"))
		require.NoError(t, os.WriteFile(path, []byte(daemonJSON), 0o644))
	}
	t.Setenv("FAKE_DAEMON_JSON", path)
	t.Setenv(gvisor.DaemonJSONEnv, path)
	return log
}

const registered = `{
  "log-level": "warn",
  "runtimes": {
    "runsc": {
      "path": "RUNSC",
      "runtimeArgs": ["-net-raw", "--systrap-disable-syscall-patching", "-overlay2=none", "-file-access=shared", "-network=sandbox", "--net-disconnect-ok"]
    }
  }
}`

func TestConformance(t *testing.T) {
	log := useFake(t, registered)
	runtimetest.Run(t, gvisor.New(), runtimetest.Config{BaseImage: testenv.BaseImage(t)})
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	var creates int
	for _, l := range strings.Split(string(calls), "\n") {
		if strings.HasPrefix(l, "docker create ") {
			creates++
			require.Contains(t, l, "docker create --runtime runsc ", "every sandbox runs under runsc")
		}
	}
	require.NotZero(t, creates)
}

func TestNotRegistered(t *testing.T) {
	useFake(t, `{"log-level": "warn"}`)
	rt := gvisor.New()
	failed := runtime.Failed(rt.Preflight(context.Background()))
	require.NotEmpty(t, failed)
	var fix string
	for _, c := range failed {
		if c.Name == "daemon.json" {
			fix = c.Fix
		}
	}
	require.Contains(t, fix, `"log-level": "warn"`, "the printed daemon.json keeps the keys already there")
	require.Contains(t, fix, `"--net-disconnect-ok"`)
	require.Contains(t, fix, "sudo systemctl reload docker")

	// And the engine refuses the runtime as dockerd does.
	_, err := rt.Create(context.Background(), runtime.SandboxSpec{Image: testenv.BaseImage(t), Entrypoint: []string{"true"}})
	require.ErrorContains(t, err, "unknown or invalid runtime name: runsc")
}
