package transcript

import (
	"testing"
	"time"
)

// Each way a process ends, in the words chalk view, the terminal view and
// chalk run's progress lines all show.
func TestExitText(t *testing.T) {
	ends := []struct {
		e    Event
		want string
	}{
		{Event{ExitCode: Int(0), DurationMS: 3200}, "exited with status 0 after 3.2s"},
		{Event{ExitCode: Int(3), DurationMS: 41234}, "exited with status 3 after 41.23s"},
		{Event{ExitCode: Int(-1), Signal: "KILL", DurationMS: 12500}, "killed by signal KILL after 12.5s"},
		{Event{ExitCode: Int(-1), Signal: "SIGTERM", DurationMS: 7}, "killed by signal TERM after 7ms"},
		{Event{ExitCode: Int(-1), Signal: "KILL", TimedOut: true, DurationMS: 300_400}, "timed out after 5m0s"},
		{Event{Message: "exec: \"agent\": not found"}, "did not start: exec: \"agent\": not found"},
	}
	for _, tc := range ends {
		if got := ExitText(tc.e); got != tc.want {
			t.Errorf("ExitText(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                          "0s",
		0:                                     "0s",
		1234567 * time.Microsecond:            "1.23s",
		850*time.Millisecond + 400:            "850ms",
		65*time.Second + 600*time.Millisecond: "1m6s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
