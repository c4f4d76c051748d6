// Package testenv gives tests what they need from the machine, and skips
// them with the reason when the machine does not have it.
package testenv

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// BaseImageEnv overrides the image tests build FROM.
const BaseImageEnv = "CHALK_TEST_BASE_IMAGE"

// BaseImage is an image docker already has, with /bin/sh: the one
// scripts/setup.sh makes when no registry is reachable.
func BaseImage(t testing.TB) string {
	if v := os.Getenv(BaseImageEnv); v != "" {
		return v
	}
	img := "debian:bookworm-slim"
	if err := exec.Command("docker", "image", "inspect", img).Run(); err != nil {
		skipOrFail(t, "the base image "+img+" is missing; run scripts/setup.sh to make it")
	}
	return img
}

var (
	dockerOnce sync.Once
	dockerErr  string
)

// NeedDocker skips t when no docker daemon answers, unless CI is set, where
// a missing docker is a failure: CI installs and starts it.
func NeedDocker(t testing.TB) {
	t.Helper()
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
		if err != nil {
			dockerErr = "no docker daemon answers (" + string(out) + "); run scripts/setup.sh"
		}
	})
	if dockerErr != "" {
		skipOrFail(t, dockerErr)
	}
}

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// MemoryLimitFile is where a container on this host reads its memory
// limit: cgroup v2's memory.max or cgroup v1's memory.limit_in_bytes.
func MemoryLimitFile(t testing.TB) string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "/sys/fs/cgroup/memory.max"
	}
	return "/sys/fs/cgroup/memory/memory.limit_in_bytes"
}

// Median is the middle of ds (the upper middle of an even count), for
// benchmarks that report a median against the bare engine's.
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
