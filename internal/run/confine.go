package run

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/chalk-rl/chalk/internal/hint"
)

// What the sandbox grants its root, the harness, beyond the engine's
// defaults, and why. None of it reaches the student, which starts with
// no capability at all (see package confine).
var (
	// HarnessCaps: NET_ADMIN installs the student's nftables firewall;
	// SYS_ADMIN makes the sandbox's cgroup writable and mounts the
	// student's disk; MKNOD makes the loop device nodes, which the
	// sandbox's /dev lacks (docker grants it by default, podman does not).
	HarnessCaps = []string{"NET_ADMIN", "SYS_ADMIN", "MKNOD"}
	// HarnessDevices lets the harness attach the student's disk image to
	// a loop device: the loop devices (block major 7) and
	// /dev/loop-control (char 10:237).
	HarnessDevices = []string{"b 7:* rwm", "c 10:237 rwm"}
)

// DiskShare is the part of the host's free disk the students of one
// chalk run command may fill.
const DiskShare = 0.8

// DiskBudget is each student's disk budget: 80% of the free space on the
// disk that holds dir, capped at limit when it is set (the hardware's
// disk budget), split evenly between n runs.
func DiskBudget(dir string, limit int64, n int) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("measure the free disk space at %s: %w", dir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	budget := int64(float64(free) * DiskShare)
	if limit > 0 && limit < budget {
		budget = limit
	}
	if n < 1 {
		n = 1
	}
	budget /= int64(n)
	if budget < 64<<20 {
		return 0, hint.Newf("free disk space where the runs are written, or run fewer at once",
			"the student's disk budget would be %d MiB (80%% of %d MiB free at %s, split %d ways); at least 64 MiB is needed",
			budget>>20, free>>20, dir, n)
	}
	return budget, nil
}
