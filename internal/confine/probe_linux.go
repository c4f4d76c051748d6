package confine

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Probes are the attacks `chalk check probe KIND ARG` makes as the
// student. Each prints what happened and exits 0 when the attack got
// through, 1 when it was refused, 2 when it was misused.
const (
	ProbeMemory  = "memory"  // ARG bytes: allocate and touch them
	ProbeFork    = "fork"    // ARG count: start that many processes that sleep
	ProbeWrite   = "write"   // ARG path: write to it until refused (or ProbeWriteMax)
	ProbeConnect = "connect" // ARG host:port: open a TCP connection
	ProbeSignal  = "signal"  // ARG pid: send signal 0
	ProbePtrace  = "ptrace"  // ARG pid: attach
	ProbeRead    = "read"    // ARG path: open for reading
	ProbeUnshare = "unshare" // make a user namespace
	ProbeStatus  = "status"  // print the identity lines of /proc/self/status
)

// ProbeWriteMax bounds the write probe.
const ProbeWriteMax = 1 << 30

// probeHold is how long the memory and fork probes stay over their limit
// before they say they got through: long enough for a watchdog, which
// looks every 100 ms, to see them. The kernel stops them before.
const probeHold = time.Second

// Probe runs one attack and returns the process exit code.
func Probe(kind, arg string, out io.Writer) int {
	refused := func(err error) int {
		fmt.Fprintf(out, "refused: %v\n", err)
		return 1
	}
	done := func(format string, a ...any) int {
		fmt.Fprintf(out, "allowed: "+format+"\n", a...)
		return 0
	}
	switch kind {
	case ProbeMemory:
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			fmt.Fprintln(out, "memory: want a number of bytes")
			return 2
		}
		var keep [][]byte
		for got := int64(0); got < n; got += 1 << 20 {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		time.Sleep(probeHold)
		return done("%d MiB allocated", len(keep))
	case ProbeFork:
		n, err := strconv.Atoi(arg)
		if err != nil {
			fmt.Fprintln(out, "fork: want a count")
			return 2
		}
		var cmds []*exec.Cmd
		defer func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		}()
		for i := 0; i < n; i++ {
			c := exec.Command("/proc/self/exe", "check", "probe", "sleep", "30")
			if err := c.Start(); err != nil {
				return refused(fmt.Errorf("process %d of %d: %w", i+1, n, err))
			}
			cmds = append(cmds, c)
		}
		time.Sleep(probeHold)
		return done("%d processes started", n)
	case ProbeStatus:
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return refused(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, _, _ := strings.Cut(line, ":")
			switch k {
			case "Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp":
				fmt.Fprintln(out, line)
			}
		}
		cg, _ := os.ReadFile("/proc/self/cgroup")
		fmt.Fprintf(out, "%s", cg)
		return 0
	case "sleep":
		s, _ := strconv.Atoi(arg)
		time.Sleep(time.Duration(s) * time.Second)
		return 0
	case ProbeWrite:
		f, err := os.Create(arg)
		if err != nil {
			return refused(err)
		}
		defer f.Close()
		buf := make([]byte, 1<<20)
		var n int64
		for n < ProbeWriteMax {
			w, err := f.Write(buf)
			n += int64(w)
			if err == nil {
				err = f.Sync()
			}
			if err != nil {
				return refused(fmt.Errorf("after %d MiB: %w", n>>20, err))
			}
		}
		return done("%d MiB written", n>>20)
	case ProbeConnect:
		c, err := net.DialTimeout("tcp", arg, 3*time.Second)
		if err != nil {
			return refused(err)
		}
		c.Close()
		return done("connected to %s", arg)
	case ProbeSignal, ProbePtrace:
		pid, err := strconv.Atoi(arg)
		if err != nil {
			fmt.Fprintln(out, kind+": want a pid")
			return 2
		}
		if kind == ProbeSignal {
			if err := unix.Kill(pid, 0); err != nil {
				return refused(err)
			}
			return done("signalled %d", pid)
		}
		if err := unix.PtraceAttach(pid); err != nil {
			return refused(err)
		}
		_ = unix.PtraceDetach(pid)
		return done("attached to %d", pid)
	case ProbeRead:
		f, err := os.Open(arg)
		if err != nil {
			return refused(err)
		}
		f.Close()
		return done("opened %s", arg)
	case ProbeUnshare:
		// A Go program has threads, and unshare(CLONE_NEWUSER) refuses
		// a threaded caller whatever the policy; a child cloned into a
		// new user namespace asks the question that matters.
		c := exec.Command("/proc/self/exe", "check", "probe", "sleep", "0")
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		if err := c.Run(); err != nil {
			return refused(err)
		}
		return done("made a user namespace")
	}
	fmt.Fprintf(out, "unknown probe %q\n", kind)
	return 2
}
