// Package hint carries errors that a person can act on: what went wrong,
// and the exact fix. The CLI renders them once, at the top, as
//
//	chalk: <error>
//	hint: <fix>
package hint

import (
	"errors"
	"fmt"
)

// Error is an error with a fix attached. Code is the process exit code the
// CLI uses for it; zero means the default of 1.
type Error struct {
	Err  error
	Hint string
	Code int
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New returns an error with message msg and fix hint.
func New(msg, fix string) error {
	return &Error{Err: errors.New(msg), Hint: fix}
}

// Newf is New with a formatted message; the hint is not formatted.
func Newf(fix, format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...), Hint: fix}
}

// Wrap attaches fix to err. It returns nil when err is nil.
func Wrap(err error, fix string) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Hint: fix}
}

// WithCode sets the exit code the CLI uses for err.
func WithCode(err error, code int) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Code: code}
}

// Of returns the outermost hint attached to err, or "".
func Of(err error) string {
	for err != nil {
		var h *Error
		if !errors.As(err, &h) {
			return ""
		}
		if h.Hint != "" {
			return h.Hint
		}
		err = h.Err
	}
	return ""
}

// ExitCode returns the exit code attached to err, or 1.
func ExitCode(err error) int {
	for err != nil {
		var h *Error
		if !errors.As(err, &h) {
			return 1
		}
		if h.Code != 0 {
			return h.Code
		}
		err = h.Err
	}
	return 1
}
