package run_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// The host follows the harness's events over its websocket; when the
// connection drops, it resumes after the last event it saw, and the
// transcript holds every event once, in order.
func TestEventStreamResumesWithoutLossOrDuplicates(t *testing.T) {
	rt := docker(t)
	e := environment(t, "",
		`for i in $(seq 1 120); do echo "line $i"; [ $((i % 10)) = 0 ] && sleep 0.05; done`,
		`echo 1 > /out/reward`)
	for _, drop := range []int{0, 7} {
		t.Run(fmt.Sprintf("drop every %d", drop), func(t *testing.T) {
			o := runIt(t, rt, e, run.Options{FaultDropStreamEvery: drop})
			require.Equal(t, transcript.StatusOK, o.res.Status, o.res.Message)
			require.Zero(t, o.res.EventsFromLog, "every event came over the stream")
			if drop > 0 {
				require.Greater(t, o.res.StreamConnections, 3, "the stream was dropped and resumed")
			} else {
				require.Equal(t, 1, o.res.StreamConnections)
			}
			var want strings.Builder
			for i := 1; i <= 120; i++ {
				fmt.Fprintf(&want, "line %d\n", i)
			}
			require.Equal(t, want.String(), o.output("student"))
			for i, ev := range o.events {
				require.Equal(t, int64(i+1), ev.Seq)
			}
			require.Equal(t, 2, count(o.events, transcript.ProcessStarted), "no event written twice: the student's and the grader's")
			require.Equal(t, 1, count(o.events, transcript.Reward))
		})
	}
}

func count(events []transcript.Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}
