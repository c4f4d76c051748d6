package tui

import (
	"bytes"
	"fmt"
	"os"
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

func TestWritePrintsAboveTheView(t *testing.T) {
	var out bytes.Buffer
	u := New(&out, []Run{{Label: "run 1/1"}}, Options{})
	_, err := u.Write([]byte("step 1/2: FROM debian\nstep 2/2: \x1b[1mRUN\x1b[0m make"))
	require.NoError(t, err)
	u.Start()
	_, err = u.Write([]byte("\nbuilt\nno newline yet"))
	require.NoError(t, err)
	u.Event(0, finished("ok", ""))
	require.NoError(t, u.Close())
	_, err = u.Write([]byte("after Close: \x1b[1mas is\x1b[0m\n"))
	require.NoError(t, err)

	got := ansi.Strip(out.String())
	frame := strings.LastIndex(got, "chalk run:")
	require.Positive(t, frame)
	above := strings.ReplaceAll(got[:frame], "\r", "")
	for _, want := range []string{"step 1/2: FROM debian\n", "step 2/2: RUN make\n", "built\n", "no newline yet\n"} {
		require.Contains(t, above, want)
	}
	require.True(t, strings.Index(above, "step 1/2") < strings.Index(above, "built"), "in the order written")
	require.True(t, strings.HasSuffix(out.String(), "after Close: \x1b[1mas is\x1b[0m\n"))
}

func TestWriteLeavesOutTheOldestOfAFlood(t *testing.T) {
	var out bytes.Buffer
	u := New(&out, nil, Options{})
	for i := range maxPending + 100 {
		_, _ = fmt.Fprintf(u, "line %d\n", i)
	}
	require.NoError(t, u.Close()) // never started: the lines go straight out
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, maxPending+1)
	require.Equal(t, "(100 lines left out)", got[0])
	require.Equal(t, "line 100", got[1])
	require.Equal(t, fmt.Sprintf("line %d", maxPending+99), got[maxPending])
}

func TestInputThatIsNoTerminalIsNotRead(t *testing.T) {
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	u := New(&bytes.Buffer{}, []Run{{Label: "r"}}, Options{Input: f})
	require.Nil(t, u.opts.Input)
	require.NotContains(t, frame(u, 80, 24), "q or ctrl+c")
}
