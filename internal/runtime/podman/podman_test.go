package podman_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/runtime/podman"
	"github.com/chalk-rl/chalk/internal/runtime/runtimetest"
	"github.com/chalk-rl/chalk/internal/testenv"
)

// Podman runs for real: scripts/setup.sh installs it and loads the base
// image into its store.
func TestConformance(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed; scripts/setup.sh installs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "podman", "image", "exists", "debian:bookworm-slim").Run(); err != nil {
		t.Skip("podman has no debian:bookworm-slim; scripts/setup.sh loads it from docker")
	}
	runtimetest.Run(t, podman.New(), runtimetest.Config{
		BaseImage:       "debian:bookworm-slim",
		MemoryLimitFile: testenv.MemoryLimitFile(t),
	})
}
