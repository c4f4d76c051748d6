package confine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// limits attacks each limit in a box of its own, so that what stops an
// attack can only be the limit it attacks: under the watchdog, which adds
// up resident memory, the fork attack's chalk processes would go over a
// 64 MiB memory limit long before 32 processes, and a kill for that
// would pass for the process limit. The disk shares its box with the
// firewall, and has no memory limit to trip over either (on cgroup v1 a
// small memory limit and a burst of writes can end in an OOM kill before
// writeback catches up).
func (c *checker) limits(ctx context.Context) {
	c.memory(ctx)
	c.processes(ctx)
	c.diskAndNetwork(ctx)
}

// memory allocates four times a memory limit: the student must be killed,
// and the box must have recorded its memory limit doing it.
func (c *checker) memory(ctx context.Context) {
	res := CheckResult{Name: "memory"}
	box, code, ok := c.attack(ctx, &res, Limits{MemoryBytes: checkMemory}, checkMemory, ProbeMemory, strconv.Itoa(4*checkMemory))
	switch {
	case !ok:
	case code == 128+int(syscall.SIGKILL) && stoppedBy(box, "memory", "killed"):
		res.Status = Pass
	case code == 128+int(syscall.SIGKILL):
		res.Status, res.Reason = Fail, "the student was killed, but not by its memory limit"
	default:
		res.Status, res.Reason = Fail, "the student allocated four times its limit and lived"
	}
	c.r.add(res)
}

// processes starts twice a process limit: the kernel must refuse the
// student a process, or the watchdog kill it, for its process limit.
func (c *checker) processes(ctx context.Context) {
	res := CheckResult{Name: "processes"}
	box, code, ok := c.attack(ctx, &res, Limits{Processes: checkProcesses}, checkProcesses, ProbeFork, strconv.Itoa(2*checkProcesses))
	switch {
	case !ok:
	case box.Cgroup != nil && code == 1 && stoppedBy(box, "processes", "denied"),
		box.Cgroup == nil && code == 128+int(syscall.SIGKILL) && stoppedBy(box, "processes", "killed"):
		res.Status = Pass
	case code == 0:
		res.Status, res.Reason = Fail, fmt.Sprintf("the student started %d processes against a limit of %d", 2*checkProcesses, checkProcesses)
	default:
		res.Status, res.Reason = Fail, "the student was stopped, but not by its process limit"
	}
	c.r.add(res)
}

// attack runs probe kind with arg as the student in a box of its own
// that holds only lim, and fills in res for the limit it names (memory
// or processes): how the box enforces it, the value the cgroup reads
// back, what the probe saw. The box is torn down before attack returns;
// its Hits say what stopped the probe. ok is false when res is decided
// already: the box could not be built, its limit does not read back as
// want, or the probe could not start.
func (c *checker) attack(ctx context.Context, res *CheckResult, lim Limits, want int64, kind, arg string) (box *Box, code int, ok bool) {
	name := fmt.Sprintf("chalk_check_%s_%d", res.Name, os.Getpid())
	c.cgroups = append(c.cgroups, name)
	box, err := Build(Options{UID: c.uid, Limits: lim, CgroupName: name})
	if err != nil {
		res.Status, res.Reason = Fail, err.Error()
		return nil, 0, false
	}
	res.Enforcement, res.Reason = box.Enforced.Processes, box.Enforced.Why[res.Name]
	got := want
	if res.Name == "memory" {
		res.Enforcement = box.Enforced.Memory
	}
	if box.Cgroup != nil {
		got = int64(box.Cgroup.ProcessLimit())
		res.Configured = strconv.FormatInt(got, 10)
		if res.Name == "memory" {
			got = box.Cgroup.MemoryLimit()
			res.Configured = fmt.Sprintf("%d bytes", got)
		}
	}
	var out string
	c.inBox(ctx, box, func() { code, out, err = c.probe(ctx, box, kind, arg) })
	res.Observed = fmt.Sprintf("exit %d %s", code, firstLines(out, 2))
	switch {
	case err != nil:
		res.Status, res.Reason = Skip, "the probe could not start: "+err.Error()
	case got != want:
		res.Status, res.Reason = Fail, fmt.Sprintf("the cgroup's limit reads back %d, not %d", got, want)
	default:
		return box, code, true
	}
	return box, code, false
}

// stoppedBy reports whether box recorded its limit name acting on the
// student, with action (killed or denied).
func stoppedBy(box *Box, name, action string) bool {
	return slices.ContainsFunc(box.Hits(), func(h LimitHit) bool { return h.Name == name && h.Action == action })
}
