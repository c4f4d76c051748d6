package transcript

import (
	"fmt"
	"strings"
	"time"
)

// ExitText says in words how a process ended, from its process.exited
// event, the same way wherever chalk shows it: "exited with status 1
// after 3.2s", "killed by signal KILL after 12.5s", "timed out after
// 5m0s", or "did not start: " and why.
func ExitText(e Event) string {
	d := FormatDuration(time.Duration(e.DurationMS) * time.Millisecond)
	switch {
	case e.ExitCode == nil:
		return "did not start: " + e.Message
	case e.TimedOut:
		return "timed out after " + d
	case e.Signal != "":
		return fmt.Sprintf("killed by signal %s after %s", strings.TrimPrefix(e.Signal, "SIG"), d)
	}
	return fmt.Sprintf("exited with status %d after %s", *e.ExitCode, d)
}

// FormatDuration writes a duration as precisely as a person reads it: to
// the millisecond under a second, the hundredth under a minute, the
// second above.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
