//go:build !linux

package confine

import (
	"context"
	"fmt"
	"io"
)

// Off Linux there is no box to build: the entry points the CLI calls
// answer with what Supported says.

// Exec fails: the student starts only inside a Linux sandbox.
func Exec() error { return errNotLinux }

// CheckConfinement reports one failed check: this is not Linux.
func CheckConfinement(_ context.Context, o CheckOptions) *Report {
	r := &Report{Hardware: o.Hardware, StudentMemoryBytes: o.StudentMemoryBytes, LeftBehind: []string{}}
	r.add(CheckResult{Name: "linux", Status: Fail, Reason: errNotLinux.Error()})
	return r.finish()
}

// Probe makes no attack, and exits as misused.
func Probe(kind, _ string, out io.Writer) int {
	fmt.Fprintf(out, "probe %s: %v\n", kind, errNotLinux)
	return 2
}
