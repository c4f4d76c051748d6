package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/testenv"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// Ctrl-C during a run: the harness stops the student, /out so far and the
// transcript reach the host, no sandbox is left behind, and chalk exits 130.
func TestInterruptLeavesNothingBehind(t *testing.T) {
	testenv.NeedDocker(t)
	bin := testenv.StaticChalk(t)
	dir := t.TempDir()
	name := "interrupt" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", ""))[:8]
	envDir := writeEnv(t, dir, `name = "`+name+`"
[student]
command = ["/bin/sh", "-c", "echo so far > /out/partial.txt; echo working; sleep 300"]
[grader]
command = ["/bin/sh", "-c", "echo the grader must not run; exit 1"]
`)

	runs := filepath.Join(dir, "runs")
	cmd := exec.Command(bin, "run", "--runtime", "docker", "--runs-dir", runs, envDir)
	cmd.Env = append(os.Environ(), "CHALK_HARNESS_BINARY="+bin)
	log := startUntilWorking(t, cmd)
	exit := interrupt(t, cmd)
	require.Equal(t, 130, exit.ExitCode(), log.String())

	out, err := exec.CommandContext(context.Background(), "docker", "ps", "-aq", "--filter", "label=dev.chalk.environment="+name).Output()
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(out)), "no sandbox is left behind")

	runDirs, _ := filepath.Glob(filepath.Join(runs, "*"))
	require.Len(t, runDirs, 1)
	b, err := os.ReadFile(filepath.Join(runDirs[0], "out", "partial.txt"))
	require.NoError(t, err)
	require.Equal(t, "so far\n", string(b))
	events, err := transcript.ReadFile(filepath.Join(runDirs[0], "transcript.jsonl"))
	require.NoError(t, err)
	last := events[len(events)-1]
	require.Equal(t, transcript.RunFinished, last.Type)
	require.Equal(t, transcript.StatusInterrupted, last.Status)
	for _, e := range events {
		require.NotEqual(t, "grader", e.Process, "the grader does not run after Ctrl-C")
	}
}

// Ctrl-C during chalk run -n 4: every run stops, every transcript is
// whole and readable, every /out so far is kept, and no sandbox is left.
func TestInterruptManyRuns(t *testing.T) {
	testenv.NeedDocker(t)
	bin := testenv.StaticChalk(t)
	dir := t.TempDir()
	name := "interruptmany"
	envDir := writeEnv(t, dir, `name = "`+name+`"
[student]
command = ["/bin/sh", "-c", "echo so far > /out/partial.txt; echo working; sleep 300"]
`)
	runs := filepath.Join(dir, "runs")
	cmd := exec.Command(bin, "run", "--runtime", "docker", "--runs-dir", runs, "-n", "4", "--json", envDir)
	cmd.Env = append(os.Environ(), "CHALK_HARNESS_BINARY="+bin)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	working := make(chan struct{})
	go func() {
		s := bufio.NewScanner(stdout)
		s.Buffer(nil, 1<<20)
		seen := map[int]bool{}
		for s.Scan() {
			var line struct {
				Index int              `json:"index"`
				Event transcript.Event `json:"event"`
			}
			if json.Unmarshal(s.Bytes(), &line) != nil {
				continue
			}
			if line.Event.Type == transcript.Output && strings.Contains(line.Event.Text, "working") {
				seen[line.Index] = true
				if len(seen) == 4 {
					close(working)
				}
			}
		}
	}()
	select {
	case <-working:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the four students never all started; chalk said:\n%s", stderr.String())
	}
	exit := interrupt(t, cmd)
	require.Equal(t, 130, exit.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "4 interrupted")

	out, err := exec.CommandContext(context.Background(), "docker", "ps", "-aq", "--filter", "label=dev.chalk.environment="+name).Output()
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(out)), "no sandbox is left behind")
	runDirs, _ := filepath.Glob(filepath.Join(runs, "*"))
	require.Len(t, runDirs, 4)
	for _, d := range runDirs {
		b, err := os.ReadFile(filepath.Join(d, "out", "partial.txt"))
		require.NoError(t, err)
		require.Equal(t, "so far\n", string(b))
		events, err := transcript.ReadFile(filepath.Join(d, "transcript.jsonl"))
		require.NoError(t, err)
		last := events[len(events)-1]
		require.Equal(t, transcript.RunFinished, last.Type)
		require.Equal(t, transcript.StatusInterrupted, last.Status)
	}
}

// startUntilWorking starts cmd, a chalk run whose student prints
// "working", and returns once it has, with what chalk has said so far.
func startUntilWorking(t *testing.T, cmd *exec.Cmd) *strings.Builder {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	working := make(chan struct{})
	var log strings.Builder
	go func() {
		s := bufio.NewScanner(stderr)
		once := false
		for s.Scan() {
			log.WriteString(s.Text() + "\n")
			if !once && strings.Contains(s.Text(), "student | working") {
				once = true
				close(working)
			}
		}
	}()
	select {
	case <-working:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the student never started; chalk said:\n%s", log.String())
	}
	return &log
}

// interrupt sends cmd SIGINT, as Ctrl-C does, and waits for it to exit.
func interrupt(t *testing.T, cmd *exec.Cmd) *exec.ExitError {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(time.Minute):
		t.Fatal("chalk did not exit after Ctrl-C")
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	return exit
}
