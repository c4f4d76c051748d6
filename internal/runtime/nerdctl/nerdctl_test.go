package nerdctl_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/nerdctl"
	"github.com/chalk-rl/chalk/internal/runtime/runtimetest"
	"github.com/chalk-rl/chalk/internal/testenv"
)

// useFake puts the stand-in nerdctl (and, with buildctl, the stand-in
// buildctl) first on PATH. nerdctl cannot be installed here; the stand-in
// runs everything through the real docker.
func useFake(t *testing.T, buildctl bool) string {
	names := []string{"nerdctl"}
	if buildctl {
		names = append(names, "buildctl")
	}
	// A PATH of system directories only, so that no real buildctl counts.
	_, log := testenv.StandIns(t, "testdata/fake", names, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	return log
}

func TestConformance(t *testing.T) {
	log := useFake(t, true)
	t.Setenv("FAKE_BUILDKITD", "running")
	runtimetest.Run(t, nerdctl.New(), runtimetest.Config{
		BaseImage:       testenv.BaseImage(t),
		MemoryLimitFile: testenv.MemoryLimitFile(t),
	})
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Contains(t, string(calls), "nerdctl build --tag", "images are built with nerdctl build")
}

func TestPreflightWantsBuildctl(t *testing.T) {
	useFake(t, false)
	checks := nerdctl.New().Preflight(context.Background())
	failed := runtime.Failed(checks)
	require.Len(t, failed, 1)
	require.Equal(t, "buildctl is installed", failed[0].Name)
	require.Equal(t, nerdctl.BuildctlFix, failed[0].Fix)
}

// Chalk checks for buildctl but not for buildkitd: with buildkitd down the
// preflight passes and the build fails with nerdctl's own message.
func TestBuildWithoutBuildkitd(t *testing.T) {
	useFake(t, true)
	t.Setenv("FAKE_BUILDKITD", "")
	rt := nerdctl.New()
	require.Empty(t, runtime.Failed(rt.Preflight(context.Background())))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM scratch\n"), 0o644))
	var out strings.Builder
	err := rt.Build(context.Background(), runtime.BuildRequest{Dir: dir, Containerfile: filepath.Join(dir, "Containerfile"), Tag: "chalk-never:built", Output: &out})
	require.Error(t, err)
	require.Contains(t, err.Error(), "`buildkitd` needs to be running")
}
