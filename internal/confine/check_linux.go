package confine

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The limits the attacks run under: small, so that going over them is
// quick.
const (
	checkMemory    = 64 << 20
	checkProcesses = 32
	checkDisk      = 16 << 20
)

// CheckConfinement sets up each part of the student's box on an unused
// uid, attacks it, reads its configuration back and undoes it.
func CheckConfinement(ctx context.Context, o CheckOptions) *Report {
	r := &Report{Hardware: o.Hardware, StudentMemoryBytes: o.StudentMemoryBytes, LeftBehind: []string{}}
	if os.Geteuid() != 0 {
		r.add(CheckResult{Name: "root", Status: Fail, Reason: "chalk check confinement must run as root inside the sandbox"})
		return r.finish()
	}
	uid := unusedUID()
	r.UID = uid
	work, err := os.MkdirTemp("", "chalk-check-")
	if err != nil {
		r.add(CheckResult{Name: "setup", Status: Fail, Reason: err.Error()})
		return r.finish()
	}
	defer os.RemoveAll(work)
	_ = os.Chmod(work, 0o755)
	c := &checker{o: o, uid: uid, work: work, r: r}
	c.identity(ctx)
	c.limits(ctx)
	c.session(ctx)
	c.leftBehind()
	return r.finish()
}

type checker struct {
	o    CheckOptions
	uid  int
	work string
	r    *Report
	// names of what the check made, to find leftovers
	cgroups []string
	tables  []string
	mounts  []string
}

// probe runs one attack as the check's uid, in box when set.
func (c *checker) probe(ctx context.Context, box *Box, kind, arg string) (code int, out string, err error) {
	argv := []string{c.o.Self, "check", "probe", kind}
	if arg != "" {
		argv = append(argv, arg)
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	spec := ExecSpec{UID: c.uid, GID: c.uid, Argv: argv, Env: env, Dir: "/"}
	if box != nil {
		spec = box.Spec(argv, env, "/")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := Command(c.o.Self, spec)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := Start(cmd, spec); err != nil {
		return -1, "", err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	_ = cmd.Wait()
	close(done)
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal()), strings.TrimSpace(buf.String()), nil
	}
	return cmd.ProcessState.ExitCode(), strings.TrimSpace(buf.String()), nil
}

// identity: who the student is and what it cannot touch.
func (c *checker) identity(ctx context.Context) {
	_, out, err := c.probe(ctx, nil, ProbeStatus, "")
	res := CheckResult{Name: "identity", Observed: firstLines(out, 10)}
	switch {
	case err != nil:
		res.Status, res.Reason = Skip, "the probe could not start: "+err.Error()
	default:
		res.Status = Pass
		want := map[string]string{
			"Uid":    fmt.Sprintf("%d\t%d\t%d\t%d", c.uid, c.uid, c.uid, c.uid),
			"CapPrm": "0000000000000000", "CapEff": "0000000000000000", "CapBnd": "0000000000000000",
			"CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2",
		}
		for k, v := range want {
			if !regexp.MustCompile(`(?m)^` + k + `:\s*` + regexp.QuoteMeta(v) + `\s*$`).MatchString(out) {
				res.Status = Fail
				res.Reason = fmt.Sprintf("%s is not %q", k, v)
				break
			}
		}
	}
	c.r.add(res)

	self := strconv.Itoa(os.Getpid())
	secret := filepath.Join(c.work, "private", "config.json")
	_ = os.Mkdir(filepath.Dir(secret), 0o700)
	_ = os.WriteFile(secret, []byte(`{"api_key":"x"}`), 0o600)
	for _, a := range []struct{ name, kind, arg string }{
		{"signal the harness", ProbeSignal, self},
		{"ptrace the harness", ProbePtrace, self},
		{"read the harness's environment", ProbeRead, "/proc/" + self + "/environ"},
		{"read the run's config", ProbeRead, secret},
		{"make a user namespace", ProbeUnshare, ""},
	} {
		c.r.add(c.refused(ctx, nil, a.name, a.kind, a.arg, ""))
	}
	if _, err := os.Stat("/.chalk/run/config.json"); err == nil {
		c.r.add(c.refused(ctx, nil, "read this sandbox's run config", ProbeRead, "/.chalk/run/config.json", ""))
	}
}

// refused runs an attack that must be refused with EPERM or EACCES.
func (c *checker) refused(ctx context.Context, box *Box, name, kind, arg, enforcement string) CheckResult {
	code, out, err := c.probe(ctx, box, kind, arg)
	res := CheckResult{Name: name, Observed: firstLines(out, 3), Enforcement: enforcement}
	switch {
	case err != nil:
		res.Status, res.Reason = Skip, "the probe could not start: "+err.Error()
	case code == 1 && (strings.Contains(out, "operation not permitted") || strings.Contains(out, "permission denied") ||
		kind == ProbeConnect && strings.Contains(out, "no route to host")):
		res.Status = Pass
	case code == 0:
		res.Status, res.Reason = Fail, "the student got through"
	default:
		res.Status, res.Reason = Fail, "the kernel did not refuse it (want operation not permitted, permission denied, or from the firewall no route to host)"
	}
	return res
}

// inBox runs f with box watched, and tears box down after.
func (c *checker) inBox(ctx context.Context, box *Box, f func()) {
	wctx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { box.Watch(wctx, nil); close(watched) }()
	f()
	stop()
	<-watched
	if err := box.Teardown(); err != nil {
		c.r.LeftBehind = append(c.r.LeftBehind, err.Error())
	}
}

func (c *checker) diskAndNetwork(ctx context.Context) {
	name := fmt.Sprintf("chalk_check_disk_%d", os.Getpid())
	scratch := filepath.Join(c.work, "scratch")
	blocked, allowed, closeListeners, lerr := listeners()
	defer closeListeners()
	o := Options{
		UID: c.uid, Limits: Limits{Processes: checkProcesses, DiskBytes: checkDisk},
		CgroupName: name, DiskImage: filepath.Join(c.work, "disk.img"), DiskMount: filepath.Join(c.work, "disk"),
		Give: []string{scratch}, Network: NetworkProxy, Table: "chalk_check", BlockPorts: []uint16{blocked},
	}
	c.cgroups, c.tables, c.mounts = append(c.cgroups, name), append(c.tables, o.Table), append(c.mounts, o.DiskMount, scratch)
	if lerr != nil {
		c.r.add(CheckResult{Name: "firewall", Status: Skip, Reason: "no loopback listener for the probes: " + lerr.Error()})
		o.Network = ""
	}
	box, err := Build(o)
	if err != nil {
		// The firewall is the one part without a fallback: build the
		// rest without it, and fail the firewall.
		c.r.add(CheckResult{Name: "firewall", Status: Fail, Enforcement: None, Reason: err.Error()})
		o.Network = ""
		if box, err = Build(o); err != nil {
			c.r.add(CheckResult{Name: "disk", Status: Fail, Reason: err.Error()})
			return
		}
	}
	c.inBox(ctx, box, func() {
		res := CheckResult{Name: "disk", Enforcement: box.Enforced.Disk, Reason: box.Enforced.Why["disk"]}
		if box.Disk != nil {
			res.Configured = fmt.Sprintf("%d bytes", box.Disk.Size)
		}
		code, out, err := c.probe(ctx, box, ProbeWrite, filepath.Join(scratch, "fill"))
		res.Observed = fmt.Sprintf("exit %d %s", code, firstLines(out, 2))
		switch {
		case err != nil:
			res.Status, res.Reason = Skip, "the probe could not start: "+err.Error()
		case box.Disk != nil && code == 1 && strings.Contains(out, "no space left"):
			res.Status = Pass
		case box.Disk == nil && code == 128+int(syscall.SIGKILL):
			res.Status = Pass
		default:
			res.Status, res.Reason = Fail, "the student wrote past its disk budget"
		}
		c.r.add(res)
		if box.Firewall != nil {
			c.firewall(ctx, box, blocked, allowed)
		}
	})
}

func (c *checker) firewall(ctx context.Context, box *Box, blocked, allowed uint16) {
	rules, err := box.Firewall.Rules()
	res := CheckResult{Name: "firewall", Enforcement: Kernel, Configured: fmt.Sprintf("%d rules for uid %d", rules, c.uid)}
	if err != nil {
		res.Status, res.Reason = Fail, err.Error()
	} else {
		res.Status = Pass
	}
	c.r.add(res)
	targets := []struct{ name, addr string }{
		{"reach the cloud metadata address", "169.254.169.254:80"},
		{"reach the harness's port", fmt.Sprintf("127.0.0.1:%d", blocked)},
	}
	gws := c.o.Gateways
	if gws == nil {
		gws = DefaultGateways()
	}
	for _, g := range gws {
		targets = append(targets, struct{ name, addr string }{"reach the host (gateway " + g.String() + ")", netip.AddrPortFrom(g, 80).String()})
	}
	for _, t := range targets {
		before, _ := box.Firewall.Refused()
		res := c.refused(ctx, box, t.name, ProbeConnect, t.addr, Kernel)
		after, err := box.Firewall.Refused()
		switch {
		case err != nil && res.Status == Pass:
			res.Status, res.Reason = Fail, "cannot read the firewall's counters back: "+err.Error()
		case after == before && res.Status == Pass:
			res.Status, res.Reason = Fail, "the connection failed, but not at the firewall: its counters did not move"
		}
		c.r.add(res)
	}
	code, out, err := c.probe(ctx, box, ProbeConnect, fmt.Sprintf("127.0.0.1:%d", allowed))
	res = CheckResult{Name: "reach loopback", Observed: firstLines(out, 1)}
	if err == nil && code == 0 {
		res.Status = Pass
	} else {
		res.Status, res.Reason = Fail, "the student cannot reach its own loopback, where the model endpoint is"
	}
	c.r.add(res)
}

// session starts one student under the default limits and checks it
// lands in a cgroup that holds them.
func (c *checker) session(ctx context.Context) {
	name := fmt.Sprintf("chalk_check_session_%d", os.Getpid())
	c.cgroups = append(c.cgroups, name)
	box, err := Build(Options{UID: c.uid, Limits: Limits{MemoryBytes: c.o.StudentMemoryBytes, Processes: DefaultProcesses}, CgroupName: name})
	res := CheckResult{Name: "student session"}
	if err != nil {
		res.Status, res.Reason = Fail, err.Error()
		c.r.add(res)
		return
	}
	defer func() {
		if err := box.Teardown(); err != nil {
			c.r.LeftBehind = append(c.r.LeftBehind, err.Error())
		}
	}()
	res.Enforcement = box.Enforced.Memory
	if box.Cgroup != nil {
		res.Configured = fmt.Sprintf("memory %d bytes, %d processes", box.Cgroup.MemoryLimit(), box.Cgroup.ProcessLimit())
	}
	code, out, err := c.probe(ctx, box, ProbeStatus, "")
	switch {
	case err != nil:
		res.Status, res.Reason = Fail, "the session could not start: "+err.Error()
	case code != 0:
		res.Status, res.Reason = Fail, fmt.Sprintf("the session exited %d: %s", code, firstLines(out, 2))
	case box.Cgroup != nil && !strings.Contains(out, name):
		res.Status, res.Reason = Fail, "the session is not in the student's cgroup"
	case box.Cgroup != nil && box.Cgroup.MemoryLimit() != c.o.StudentMemoryBytes:
		res.Status, res.Reason = Fail, fmt.Sprintf("the memory limit reads back %d, not %d", box.Cgroup.MemoryLimit(), c.o.StudentMemoryBytes)
	default:
		res.Status = Pass
		res.Observed = "started and exited 0 in its cgroup"
		if box.Cgroup == nil {
			res.Observed = "started and exited 0, watched (there is no cgroup)"
		}
	}
	c.r.add(res)
}

// leftBehind lists what the check made and did not undo.
func (c *checker) leftBehind() {
	if mounts, err := cgroupMounts(); err == nil {
		for _, m := range mounts {
			for _, n := range c.cgroups {
				matches, _ := filepath.Glob(filepath.Join(m.point, "*", n))
				more, _ := filepath.Glob(filepath.Join(m.point, n))
				for _, p := range append(matches, more...) {
					c.r.LeftBehind = append(c.r.LeftBehind, "cgroup "+p)
				}
			}
			if m.v2 {
				if _, err := os.Stat(filepath.Join(m.point, HarnessCgroup)); err == nil {
					c.r.LeftBehind = append(c.r.LeftBehind, "the harness in cgroup "+HarnessCgroup+" (every run puts it there)")
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, m := range c.mounts {
			if bytes.Contains(b, []byte(" "+m+" ")) {
				c.r.LeftBehind = append(c.r.LeftBehind, "mount "+m)
			}
		}
	}
	for _, t := range c.tables {
		fw := &Firewall{Table: t, UID: c.uid}
		if _, err := fw.Rules(); err == nil {
			c.r.LeftBehind = append(c.r.LeftBehind, "nftables table inet "+t)
		}
	}
	if pids := PidsOf(c.uid); len(pids) > 0 {
		c.r.LeftBehind = append(c.r.LeftBehind, fmt.Sprintf("processes of uid %d: %v", c.uid, pids))
	}
}

// listeners opens two loopback ports: one the firewall blocks (standing
// for the harness's) and one it leaves open.
func listeners() (blocked, allowed uint16, closeAll func(), err error) {
	var ls []net.Listener
	closeAll = func() {
		for _, l := range ls {
			l.Close()
		}
	}
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, closeAll, err
		}
		ls = append(ls, l)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	port := func(l net.Listener) uint16 { return uint16(l.Addr().(*net.TCPAddr).Port) }
	return port(ls[0]), port(ls[1]), closeAll, nil
}

// unusedUID finds a uid no process runs as and no account names.
func unusedUID() int {
	passwd, _ := os.ReadFile("/etc/passwd")
	for uid := 61001; uid < 65000; uid++ {
		if bytes.Contains(passwd, []byte(":"+strconv.Itoa(uid)+":")) {
			continue
		}
		if len(procsOf(uid)) == 0 {
			return uid
		}
	}
	return 64999
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
