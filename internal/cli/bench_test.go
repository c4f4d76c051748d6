package cli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/testenv"
	"github.com/chalk-rl/chalk/internal/transcript"
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
	c, d := testenv.Median(chalkTimes), testenv.Median(bareTimes)
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

// BenchmarkParallelRuns measures, in one run, the wall time of
// 'chalk run -n 8' against eight 'chalk run' one after the other, on a
// student that waits a second (as an agent waits on its model), and
// reports the speed-up.
//
//	go test -run '^$' -bench ParallelRuns -benchtime 1x ./internal/cli/
func BenchmarkParallelRuns(b *testing.B) {
	testenv.NeedDocker(b)
	bin := testenv.StaticChalk(b)
	dir := b.TempDir()
	envDir := writeEnv(b, dir, "name = \"bench-parallel\"\n[student]\ncommand = [\"/bin/sh\", \"-c\", \"sleep 1; echo done\"]\n")
	runs := filepath.Join(dir, "runs")
	chalk := func(args ...string) *exec.Cmd {
		c := exec.Command(bin, append([]string{"run", "--runtime", "docker", "--runs-dir", runs}, append(args, envDir)...)...)
		c.Env = append(os.Environ(), "CHALK_HARNESS_BINARY="+bin)
		return c
	}
	timeIt(b, chalk()) // build the image
	var seq, par []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for range 8 {
			timeIt(b, chalk())
		}
		seq = append(seq, time.Since(start))
		par = append(par, timeIt(b, chalk("-n", "8")))
	}
	b.StopTimer()
	s, p := testenv.Median(seq), testenv.Median(par)
	speedup := float64(s) / float64(p)
	b.ReportMetric(speedup, "x-speedup")
	fmt.Printf("chalk run -n 8 took %s against %s for 8 runs one after another (median of %d): %.2fx speed-up on %d CPUs (target: at least 1.6x)\n",
		p.Round(time.Millisecond), s.Round(time.Millisecond), b.N, speedup, goruntime.NumCPU())
}

// BenchmarkTranscriptThroughput measures, in one run, a student writing
// 100 MB to stdout through the harness into the transcript, against
// 'docker run' writing the same bytes to a file, and checks that no byte
// is lost (count and hash).
//
//	go test -run '^$' -bench TranscriptThroughput -benchtime 2x ./internal/cli/
func BenchmarkTranscriptThroughput(b *testing.B) {
	testenv.NeedDocker(b)
	bin := testenv.StaticChalk(b)
	dir := b.TempDir()
	const size = 100_000_000
	gen := fmt.Sprintf("yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c %d", size)
	envDir := writeEnv(b, dir, "name = \"bench-throughput\"\n[student]\ncommand = [\"/bin/sh\", \"-c\", \""+gen+"\"]\ntimeout = \"10m\"\n")
	// What the student writes, made here the same way.
	want := sha256.New()
	line := []byte("the quick brown fox jumps over the lazy dog 0123456789\n")
	for n := 0; n < size; n += len(line) {
		want.Write(line[:min(len(line), size-n)])
	}
	wantSum := hex.EncodeToString(want.Sum(nil))

	build := exec.Command(bin, "build", "--runtime", "docker", envDir)
	build.Env = append(os.Environ(), "CHALK_HARNESS_BINARY="+bin)
	tag, err := build.Output()
	if err != nil {
		b.Fatalf("build: %v", err)
	}
	image := strings.TrimSpace(string(tag))
	var chalkTimes, bareTimes []time.Duration
	b.ResetTimer()
	for i := range b.N {
		runs := filepath.Join(dir, fmt.Sprintf("runs-%d", i))
		c := exec.Command(bin, "run", "--runtime", "docker", "--runs-dir", runs, envDir)
		c.Env = append(os.Environ(), "CHALK_HARNESS_BINARY="+bin)
		chalkTimes = append(chalkTimes, timeIt(b, c))
		bareTimes = append(bareTimes, timeIt(b, exec.Command("docker", "run", "--rm", image, "/bin/sh", "-c", gen+" > /tmp/out")))
		b.StopTimer()
		got, n := studentOutput(b, runs)
		if n != size || got != wantSum {
			b.Fatalf("the transcript holds %d bytes of the student's stdout with sha256 %s; want %d bytes with %s", n, got, size, wantSum)
		}
		os.RemoveAll(runs)
		b.StartTimer()
	}
	b.StopTimer()
	c, d := testenv.Median(chalkTimes), testenv.Median(bareTimes)
	ratio := float64(d) / float64(c)
	b.ReportMetric(ratio, "x-bare-throughput")
	fmt.Printf("100 MB of student stdout into the transcript: chalk run %s (%.0f MB/s), docker run to a file %s (%.0f MB/s): %.2f of the bare throughput, every byte there (target: at least 0.5)\n",
		c.Round(time.Millisecond), float64(size)/c.Seconds()/1e6, d.Round(time.Millisecond), float64(size)/d.Seconds()/1e6, ratio)
}

// studentOutput hashes the student's stdout as the run's transcript
// holds it.
func studentOutput(b *testing.B, runs string) (string, int) {
	dirs, _ := filepath.Glob(filepath.Join(runs, "*", "transcript.jsonl"))
	if len(dirs) != 1 {
		b.Fatalf("want one transcript in %s, found %d", runs, len(dirs))
	}
	f, err := os.Open(dirs[0])
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n := 0
	r := transcript.NewReader(f)
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if e.Type == transcript.Output && e.Process == "student" && e.Stream == "stdout" {
			d := e.Data()
			h.Write(d)
			n += len(d)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), n
}
