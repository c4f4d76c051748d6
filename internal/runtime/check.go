package runtime

import (
	"fmt"
	"io"
	"strings"
)

// Status is the outcome of one preflight check.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Check is one preflight finding: what was checked, how it went, and for a
// failure the exact fix (a command to run or a file to write).
type Check struct {
	Runtime string `json:"runtime"`
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Detail  string `json:"detail,omitempty"`
	Fix     string `json:"fix,omitempty"`
}

// Failed returns the checks that failed.
func Failed(checks []Check) []Check {
	var out []Check
	for _, c := range checks {
		if c.Status == Fail {
			out = append(out, c)
		}
	}
	return out
}

// WriteChecks prints checks for a person, one per line, each failure
// followed by its fix indented beneath it.
func WriteChecks(w io.Writer, checks []Check) {
	for _, c := range checks {
		line := fmt.Sprintf("%-4s  %s: %s", c.Status, c.Runtime, c.Name)
		if c.Detail != "" {
			line += " (" + c.Detail + ")"
		}
		fmt.Fprintln(w, line)
		if c.Status == Fail && c.Fix != "" {
			for _, l := range strings.Split(strings.TrimRight(c.Fix, "\n"), "\n") {
				fmt.Fprintln(w, "      "+l)
			}
		}
	}
}
