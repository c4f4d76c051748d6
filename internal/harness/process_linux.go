package harness

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/transcript"
)

type result struct {
	code     int
	signal   string
	timedOut bool
	err      error // it could not be started
}

func (r result) describe() string {
	if r.signal != "" {
		return "killed by signal " + r.signal
	}
	return "exited with status " + strconv.Itoa(r.code)
}

// runProcess runs p in its own session, streaming its output as events.
// With box, p is the student: it starts through confine.Exec as the
// box's uid, in its cgroup, with no privilege. When p exits, or times
// out, or ctx ends, its whole process group is killed, and with box
// every process of the student's.
func (h *Harness) runProcess(ctx context.Context, name string, p Process, box *confine.Box) result {
	dir := p.Workdir
	if dir == "" {
		dir = "/"
	}
	var cmd *exec.Cmd
	var start func() error
	var uidp *int
	if box != nil {
		self, err := Self()
		if err != nil {
			h.emit(transcript.Event{Type: transcript.ProcessExited, Process: name, Message: err.Error()})
			return result{err: err}
		}
		spec := box.Spec(p.Command, h.environ(p, true), dir)
		cmd = confine.Command(self, spec)
		start = func() error { return confine.Start(cmd, spec) }
		uidp = transcript.Int(spec.UID)
	} else {
		cmd = exec.Command(p.Command[0], p.Command[1:]...)
		cmd.Dir = dir
		cmd.Env = h.environ(p, false)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		start = cmd.Start
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		return result{err: err}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return result{err: err}
	}
	// Bigger pipes and reads: fewer, larger output events when the
	// student writes a lot.
	for _, w := range []*os.File{outW, errW} {
		_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	started := time.Now()
	err = start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		if box == nil {
			err = fmt.Errorf("start %s: %w", strings.Join(p.Command, " "), err)
		}
		h.emit(transcript.Event{Type: transcript.ProcessExited, Process: name, Message: err.Error()})
		return result{err: err}
	}
	h.emit(transcript.Event{Type: transcript.ProcessStarted, Process: name, Command: p.Command, UID: uidp})

	var wg sync.WaitGroup
	wg.Add(2)
	go h.pump(&wg, name, "stdout", outR)
	go h.pump(&wg, name, "stderr", errR)

	done := make(chan struct{})
	var timedOut bool
	var mu sync.Mutex
	go func() {
		var timeout <-chan time.Time
		if p.Timeout > 0 {
			t := time.NewTimer(time.Duration(p.Timeout))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-done:
		case <-timeout:
			mu.Lock()
			timedOut = true
			mu.Unlock()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	// The exit status is read from ProcessState below; Wait's error only
	// repeats it.
	_ = cmd.Wait()
	close(done)
	// Whatever it left running in its group goes too, so the pipes close.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if box != nil {
		box.KillAll()
	}
	reapOrphans()
	waitPumps(&wg, outR, errR)

	res := result{code: cmd.ProcessState.ExitCode()}
	mu.Lock()
	res.timedOut = timedOut
	mu.Unlock()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.signal = strings.ToUpper(strings.TrimPrefix(unix.SignalName(ws.Signal()), "SIG"))
		res.code = 128 + int(ws.Signal())
	}
	h.emit(transcript.Event{
		Type: transcript.ProcessExited, Process: name, ExitCode: transcript.Int(res.code),
		Signal: res.signal, TimedOut: res.timedOut, DurationMS: time.Since(started).Milliseconds(),
	})
	return res
}

// reapOrphans collects the zombies of processes that outlived their
// parents: the harness is the sandbox's PID 1, so they end up its
// children. Only exited children are taken, so a process still running
// is never waited for here.
func reapOrphans() {
	if os.Getpid() != 1 {
		return
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// waitPumps waits for both output streams to reach EOF. A process that
// escaped the group could hold a pipe open forever: after a grace period
// the pipes are closed under it.
func waitPumps(wg *sync.WaitGroup, pipes ...*os.File) {
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
		for _, p := range pipes {
			p.Close()
		}
		<-drained
	}
}

// pump turns everything read from r into output events.
func (h *Harness) pump(wg *sync.WaitGroup, process, stream string, r *os.File) {
	defer wg.Done()
	defer r.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			e := transcript.Event{Type: transcript.Output, Process: process, Stream: stream}
			e.SetData(buf[:n])
			h.emit(e)
		}
		if err != nil {
			if err != io.EOF {
				h.Log.Debug("read output", "process", process, "stream", stream, "err", err)
			}
			return
		}
	}
}

// environ is the process's environment: the sandbox's own (the image's
// ENV), the forwarded host variables, then the process's own; the student
// also gets HOME and USER of its own.
func (h *Harness) environ(p Process, student bool) []string {
	env := map[string]string{}
	order := []string{}
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set(k, v)
		}
	}
	if _, ok := env["PATH"]; !ok {
		set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	for _, k := range slices.Sorted(maps.Keys(h.Config.Env)) {
		set(k, h.Config.Env[k])
	}
	if student {
		home := p.Workdir
		if home == "" {
			home = "/tmp"
		}
		set("HOME", home)
		set("USER", "student")
		set("LOGNAME", "student")
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		set(k, p.Env[k])
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out
}
