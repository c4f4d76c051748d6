package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/testenv"
)

// BenchmarkRunVsDocker measures, in one run, the median wall time of
// 'chalk run' on an environment whose student is true against a bare
// 'docker run --rm IMAGE true' on the same image, and reports the ratio.
// Each iteration runs both, alternating, so machine noise hits both alike.
//
//	go test -run '^$' -bench RunVsDocker -benchtime 20x ./internal/cli/
func BenchmarkRunVsDocker(b *testing.B) {
	testenv.NeedDocker(b)
	bin := testenv.StaticChalk(b)
	dir := b.TempDir()
	envDir := writeEnv(b, dir, "name = \"bench-true\"\n[student]\ncommand = [\"true\"]\n")
	runs := filepath.Join(dir, "runs")
	chalk := func() *exec.Cmd {
		c := exec.Command(bin, "run", "--runtime", "docker", "--runs-dir", runs, envDir)
		c.Env = append(os.Environ(), "CHALK_HARNESS_BINARY="+bin)
		return c
	}
	// Build the image and warm both paths once.
	build := exec.Command(bin, "build", "--runtime", "docker", envDir)
	build.Env = chalk().Env
	tag, err := build.Output()
	if err != nil {
		b.Fatalf("build: %v", err)
	}
	image := string(tag[:len(tag)-1])
	bare := func() *exec.Cmd { return exec.Command("docker", "run", "--rm", image, "true") }
	timeIt(b, chalk())
	timeIt(b, bare())

	var chalkTimes, bareTimes []time.Duration
	b.ResetTimer()
	for range b.N {
		chalkTimes = append(chalkTimes, timeIt(b, chalk()))
		bareTimes = append(bareTimes, timeIt(b, bare()))
	}
	b.StopTimer()
	c, d := median(chalkTimes), median(bareTimes)
	ratio := float64(c) / float64(d)
	b.ReportMetric(ratio, "x-bare-docker")
	b.ReportMetric(float64(c.Milliseconds()), "ms-chalk-median")
	b.ReportMetric(float64(d.Milliseconds()), "ms-docker-median")
	fmt.Printf("chalk run median %s, docker run --rm median %s over %d runs each: %.2fx (target: at most 2.0x)\n", c.Round(time.Millisecond), d.Round(time.Millisecond), b.N, ratio)
}

func timeIt(b *testing.B, c *exec.Cmd) time.Duration {
	start := time.Now()
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", c, err, out)
	}
	return time.Since(start)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// writeEnv makes an environment in dir/env, FROM the base image, with the
// given chalk.toml, and returns its path.
func writeEnv(t testing.TB, dir, chalkTOML string) string {
	t.Helper()
	envDir := filepath.Join(dir, "env")
	files := map[string]string{"Containerfile": "FROM " + testenv.BaseImage(t) + "\n", "chalk.toml": chalkTOML}
	if err := os.MkdirAll(envDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(envDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return envDir
}
