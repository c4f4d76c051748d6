//go:build !linux

package harness

import (
	"context"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// Run ends the run at once off Linux, where the student's box cannot be
// built: the harness runs only inside a Linux sandbox.
func (h *Harness) Run(context.Context) string {
	msg := "the harness runs only inside a Linux sandbox: " + confine.Supported().Error()
	h.emit(transcript.Event{Type: transcript.RunFinished, Status: transcript.StatusError, Message: msg})
	return transcript.StatusError
}
