package tui

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/transcript"
)

func TestStartDrawsAndCloseLeavesTheLastFrame(t *testing.T) {
	var out bytes.Buffer
	u := New(&out, []Run{{Label: "run 1/2 aaa"}, {Label: "run 2/2 bbb"}}, Options{})
	u.Start()
	u.Event(0, started("hello"))
	u.Event(0, proc(transcript.ProcessStarted, "student"))
	u.Event(0, output("thinking hard\n"))
	u.Event(0, reward(1))
	u.Event(0, finished("ok", ""))
	u.Event(1, finished("error", "no runtime"))
	require.NoError(t, u.Close())
	require.NoError(t, u.Close(), "a second Close does nothing")
	u.Event(0, output("after the end")) // ignored, and no panic

	// The final frame ends with a newline, so what is printed next starts
	// on a line of its own.
	got := ansi.Strip(out.String())
	require.True(t, strings.HasSuffix(strings.TrimRight(got, "\r"), "\n"), "output: %q", got)
	last := got[strings.LastIndex(got, "chalk run:"):]
	for _, want := range []string{
		"chalk run: 2 runs · 0 running · 2 done · 1 failed · mean reward 1 over 1",
		"run 1/2 aaa  hello  ok",
		"  reward   1",
		"  | thinking hard",
		"run 2/2 bbb  error",
		"  note     no runtime",
	} {
		require.Contains(t, last, want)
	}
}

func TestCloseWithoutStart(t *testing.T) {
	var out bytes.Buffer
	u := New(&out, []Run{{Label: "r"}}, Options{})
	require.NoError(t, u.Close())
	u.Start() // too late: draws nothing
	require.Empty(t, out.String())
}
