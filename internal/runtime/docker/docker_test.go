package docker_test

import (
	"testing"

	"github.com/chalk-rl/chalk/internal/runtime/docker"
	"github.com/chalk-rl/chalk/internal/runtime/runtimetest"
	"github.com/chalk-rl/chalk/internal/testenv"
)

func TestConformance(t *testing.T) {
	testenv.NeedDocker(t)
	runtimetest.Run(t, docker.New(), runtimetest.Config{
		BaseImage:       testenv.BaseImage(t),
		MemoryLimitFile: testenv.MemoryLimitFile(t),
	})
}
