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
	name := fmt.Sprintf("chalk_check_memory_%d", os.Getpid())
	c.cgroups = append(c.cgroups, name)
	box, err := Build(Options{UID: c.uid, Limits: Limits{MemoryBytes: checkMemory}, CgroupName: name})
	if err != nil {
		c.r.add(CheckResult{Name: "memory", Status: Fail, Reason: err.Error()})
		return
	}
	res := CheckResult{Name: "memory", Enforcement: box.Enforced.Memory, Reason: box.Enforced.Why["memory"]}
	limit := int64(checkMemory)
	if box.Cgroup != nil {
		limit = box.Cgroup.MemoryLimit()
		res.Configured = fmt.Sprintf("%d bytes", limit)
	}
	var code int
	var out string
	c.inBox(ctx, box, func() { code, out, err = c.probe(ctx, box, ProbeMemory, strconv.Itoa(4*checkMemory)) })
	res.Observed = fmt.Sprintf("exit %d %s", code, firstLines(out, 2))
	switch {
	case err != nil:
		res.Status, res.Reason = Skip, "the probe could not start: "+err.Error()
	case limit != checkMemory:
		res.Status, res.Reason = Fail, fmt.Sprintf("the cgroup's limit reads back %d, not %d", limit, checkMemory)
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
	name := fmt.Sprintf("chalk_check_processes_%d", os.Getpid())
	c.cgroups = append(c.cgroups, name)
	box, err := Build(Options{UID: c.uid, Limits: Limits{Processes: checkProcesses}, CgroupName: name})
	if err != nil {
		c.r.add(CheckResult{Name: "processes", Status: Fail, Reason: err.Error()})
		return
	}
	res := CheckResult{Name: "processes", Enforcement: box.Enforced.Processes, Reason: box.Enforced.Why["processes"]}
	limit := checkProcesses
	if box.Cgroup != nil {
		limit = box.Cgroup.ProcessLimit()
		res.Configured = strconv.Itoa(limit)
	}
	var code int
	var out string
	c.inBox(ctx, box, func() { code, out, err = c.probe(ctx, box, ProbeFork, strconv.Itoa(2*checkProcesses)) })
	res.Observed = fmt.Sprintf("exit %d %s", code, firstLines(out, 2))
	switch {
	case err != nil:
		res.Status, res.Reason = Skip, "the probe could not start: "+err.Error()
	case limit != checkProcesses:
		res.Status, res.Reason = Fail, fmt.Sprintf("the cgroup's limit reads back %d, not %d", limit, checkProcesses)
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

// stoppedBy reports whether box recorded its limit name acting on the
// student, with action (killed or denied).
func stoppedBy(box *Box, name, action string) bool {
	return slices.ContainsFunc(box.Hits(), func(h LimitHit) bool { return h.Name == name && h.Action == action })
}
