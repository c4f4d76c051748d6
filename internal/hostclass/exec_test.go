package hostclass

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/testenv"
)

// startBox runs a long-lived container for the test and removes it after.
func startBox(t *testing.T) (*Host, string) {
	t.Helper()
	testenv.NeedDocker(t)
	img := testenv.BaseImage(t)
	h, err := New("", os.Getenv("DOCKER_HOST"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("docker", "run", "-d", "--rm", "--label", "chalk.test=hostclass", img, "sleep", "300").CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
	return h, id
}

func TestExecStdioExitCodeAndHalfClose(t *testing.T) {
	h, id := startBox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x, err := h.StartExec(ctx, id, ExecSpec{Cmd: []string{"sh", "-c", "tr a-z A-Z; echo oops >&2; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	// Output only ends once stdin's EOF reached tr: half-close works.
	if err := x.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := x.Output(&stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "HELLO\n" || stderr.String() != "oops\n" {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	st := waitExit(t, x)
	if st.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7", st.ExitCode)
	}
}

func waitExit(t *testing.T, x *Exec) ExecState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := x.Wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the exec never ended")
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestExecMissingExecutable(t *testing.T) {
	h, id := startBox(t)
	x, err := h.StartExec(context.Background(), id, ExecSpec{Cmd: []string{"no-such-binary-here"}})
	if err != nil {
		// Some daemons refuse it at once.
		if !errors.Is(err, ErrNoExecutable) {
			t.Fatalf("err = %v, want ErrNoExecutable", err)
		}
		return
	}
	// Others report it as the stream's only output.
	var out bytes.Buffer
	err = x.Output(&out, &out)
	var se *StartError
	if !errors.As(err, &se) || !se.NotFound() || out.Len() != 0 {
		t.Fatalf("Output: err %v, output %q: want a StartError for a missing program, and no output", err, out.String())
	}
}

func TestKillLeavesNoProcess(t *testing.T) {
	h, id := startBox(t)
	ctx := context.Background()
	// A parent with a child: both must go.
	x, err := h.StartExec(ctx, id, ExecSpec{Cmd: []string{"sh", "-c", "sleep 1234 & sleep 1235; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := countProcs(t, id, "sleep 123"); n != 2 {
		t.Fatalf("%d sleeps before the kill, want 2", n)
	}
	x.Close() // the connection alone does not end a docker exec
	time.Sleep(300 * time.Millisecond)
	if n := countProcs(t, id, "sleep 123"); n != 2 {
		t.Fatalf("%d sleeps after closing the connection; the premise of Kill is that they survive", n)
	}
	if err := x.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := countProcs(t, id, "sleep 123"); n != 0 {
		t.Fatalf("%d sleeps left after Kill", n)
	}
}

// countProcs counts processes in the container whose command line
// starts with s.
func countProcs(t *testing.T, id, s string) int {
	t.Helper()
	out, err := exec.Command("docker", "top", id, "-o", "pid,args").CombinedOutput()
	if err != nil {
		t.Fatalf("docker top: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(strings.Join(f[1:], " "), s) {
			n++
		}
	}
	return n
}
