package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// A process's end reads as it does in chalk view and the terminal view,
// after the output it had not ended with a newline.
func TestProgressSaysHowAProcessEnded(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b}
	p.event(transcript.Event{Type: transcript.Output, Process: "student", Stream: "stdout", Text: "half a line"})
	p.event(transcript.Event{Type: transcript.ProcessExited, Process: "student", ExitCode: transcript.Int(-1), Signal: "KILL", DurationMS: 12500})
	p.event(transcript.Event{Type: transcript.ProcessExited, Process: "grader", ExitCode: transcript.Int(1), DurationMS: 20})
	require.Equal(t, "student | half a line\n"+
		"student killed by signal KILL after 12.5s\n"+
		"grader exited with status 1 after 20ms\n", b.String())
}
