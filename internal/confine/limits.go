package confine

import "fmt"

// How a limit is enforced.
const (
	Kernel   = "kernel"   // the kernel refuses to go over
	Watchdog = "watchdog" // the harness notices and kills the student
	None     = "none"     // nothing stops the student
)

// Limits are the student's resource limits. Zero means unlimited.
type Limits struct {
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	Processes   int   `json:"processes,omitempty"`
	DiskBytes   int64 `json:"disk_bytes,omitempty"`
}

// DefaultProcesses is the student's limit on processes and threads (the
// kernel counts both): plenty for compilers and test runners, far below
// what would starve the harness.
const DefaultProcesses = 4096

// LimitHit is one limit the student ran into.
type LimitHit struct {
	Name        string // memory, processes, disk
	Enforcement string // Kernel or Watchdog
	Action      string // killed, denied
	Detail      string
}

// Enforcement records how each limit and the firewall are enforced in one
// sandbox: Kernel, Watchdog or None, with the reason when it is not
// Kernel.
type Enforcement struct {
	Memory    string `json:"memory"`
	Processes string `json:"processes"`
	Disk      string `json:"disk"`
	Network   string `json:"network"`
	// Why holds, per limit, the reason it is not enforced by the kernel.
	Why map[string]string `json:"why,omitempty"`
}

func (e *Enforcement) because(limit, how, reason string) {
	switch limit {
	case "memory":
		e.Memory = how
	case "processes":
		e.Processes = how
	case "disk":
		e.Disk = how
	case "network":
		e.Network = how
	default:
		panic(fmt.Sprintf("confine: unknown limit %q", limit))
	}
	if reason == "" {
		return
	}
	if e.Why == nil {
		e.Why = map[string]string{}
	}
	e.Why[limit] = reason
}
