package confine

import "net/netip"

// Check statuses.
const (
	Pass = "pass"
	Fail = "fail"
	Skip = "skip"
)

// CheckResult is one line of the confinement report.
type CheckResult struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Enforcement is kernel, watchdog or none, for the limits.
	Enforcement string `json:"enforcement,omitempty"`
	// Configured is the value read back from the kernel (cgroup file,
	// filesystem size, firewall rules).
	Configured string `json:"configured,omitempty"`
	// Observed is what the attack saw.
	Observed string `json:"observed,omitempty"`
	// Reason explains a fail or a skip.
	Reason string `json:"reason,omitempty"`
}

// Report is what `chalk check confinement` found.
type Report struct {
	OK       bool   `json:"ok"`
	UID      int    `json:"uid"`
	Hardware string `json:"hardware"`
	// StudentMemoryBytes is the default memory limit the student session
	// was started under.
	StudentMemoryBytes int64         `json:"student_memory_bytes"`
	Checks             []CheckResult `json:"checks"`
	// LeftBehind lists what the check could not undo. The harness in
	// the chalk_harness cgroup is listed too, as the one thing it may
	// leave.
	LeftBehind []string `json:"left_behind"`
}

// CheckOptions set up a confinement check.
type CheckOptions struct {
	// Self is the chalk binary: it starts the probes as the student.
	Self string
	// Hardware names the hardware whose default memory limit the student
	// session gets; StudentMemoryBytes is that limit.
	Hardware           string
	StudentMemoryBytes int64
	// Gateways override the sandbox's routers (tests).
	Gateways []netip.Addr
}

func (r *Report) add(c CheckResult) { r.Checks = append(r.Checks, c) }

func (r *Report) finish() *Report {
	r.OK = true
	for _, c := range r.Checks {
		if c.Status == Fail {
			r.OK = false
		}
	}
	return r
}
