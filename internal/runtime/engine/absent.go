package engine

import (
	"errors"
	"regexp"
	"strings"
)

// absentError is a client call that ran and failed only because the
// containers or images it named do not exist.
type absentError struct{ error }

func (e absentError) Unwrap() error { return e.error }

// isAbsent reports whether err says only that what the call named does
// not exist. A client that could not run, or a daemon that did not
// answer, is never absent: those are failures to report.
func isAbsent(err error) bool {
	var a absentError
	return errors.As(err, &a)
}

// onlyAbsent reports whether every line of a client's stderr, other than
// warnings, says that a container or image does not exist, and at least
// one does. One such line beside any other failure is not enough.
func onlyAbsent(stderr string) bool {
	seen := false
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "", isWarning(line), errorCount.MatchString(line):
		case noSuch.MatchString(line):
			seen = true
		default:
			return false
		}
	}
	return seen
}

// noSuch matches what the clients say of a container or image that does
// not exist:
//
//	docker:  Error response from daemon: No such container: X
//	         Error response from daemon: No such image: X
//	         Error: No such object: X
//	podman:  Error: inspecting object: no such container X
//	         Error: no container with name or ID "X" found: no such container
//	         Error: inspecting object: X: image not known
//	nerdctl: time="…" level=fatal msg="1 errors:\nno such container: X"
var noSuch = regexp.MustCompile(`(?i)no such (container|image|object)\b|image not known|no container with (name or id|id or name) .* found`)

// errorCount is the line nerdctl puts before its list of errors when it
// writes them on a terminal ("FATA[0000] 2 errors:").
var errorCount = regexp.MustCompile(`^(\S+\s+)?\d+ errors:$`)

// isWarning reports whether line is a warning the client printed beside
// its answer (docker's "WARNING: ", podman's and nerdctl's log lines).
func isWarning(line string) bool {
	return strings.HasPrefix(line, "WARNING:") || strings.HasPrefix(line, "WARN[") || strings.Contains(line, "level=warning")
}
