package tui

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// testUI is a view of runs named by labels on a clock the test moves, with
// no colours, so that frames are plain text.
func testUI(t *testing.T, opts Options, labels ...string) (*UI, *time.Time) {
	t.Helper()
	runs := make([]Run, len(labels))
	for i, l := range labels {
		runs[i] = Run{Label: l}
	}
	u := New(&bytes.Buffer{}, runs, opts)
	r := lipgloss.NewRenderer(&bytes.Buffer{})
	r.SetColorProfile(termenv.Ascii)
	u.styles = newStyles(r)
	now := u.start
	u.now = func() time.Time { return now }
	return u, &now
}

// frame is the view as bubbletea would draw it in a width×height terminal.
func frame(u *UI, width, height int) string {
	m := &model{ui: u, width: width, height: height}
	m.snap = u.snapshot()
	return m.View()
}

func started(env string) transcript.Event {
	return transcript.Event{Type: transcript.RunStarted, Run: &transcript.RunInfo{ID: "abc", Environment: env}}
}

func proc(typ, name string) transcript.Event {
	e := transcript.Event{Type: typ, Process: name}
	if typ == transcript.ProcessExited {
		e.ExitCode, e.DurationMS = transcript.Int(0), 3200
	}
	return e
}

func output(text string) transcript.Event {
	return transcript.Event{Type: transcript.Output, Process: "student", Stream: "stdout", Text: text}
}

func call(model string, ms int64, in, out int) transcript.Event {
	return transcript.Event{Type: transcript.ModelCall, Model: &transcript.ModelCallInfo{
		Model: model, Status: 200, LatencyMS: ms, PromptTokens: in, CompletionTokens: out,
		Request: []byte(`{"secret":"request body"}`),
	}}
}

func reward(r float64) transcript.Event {
	return transcript.Event{Type: transcript.Reward, Reward: transcript.Float(r)}
}

func finished(status, msg string) transcript.Event {
	return transcript.Event{Type: transcript.RunFinished, Status: status, Message: msg}
}

func TestStatusFollowsEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []transcript.Event
		want   string
	}{
		{"before any event", nil, "building"},
		{"run.started", []transcript.Event{started("")}, "starting"},
		{"student started", []transcript.Event{started(""), proc(transcript.ProcessStarted, "student")}, "running"},
		{"student exited", []transcript.Event{started(""), proc(transcript.ProcessStarted, "student"), proc(transcript.ProcessExited, "student")}, "running"},
		{"grader started", []transcript.Event{started(""), proc(transcript.ProcessStarted, "student"), proc(transcript.ProcessStarted, "grader")}, "grading"},
		{"ok", []transcript.Event{started(""), finished("ok", "")}, "ok"},
		{"failed", []transcript.Event{finished("failed", "student exited with status 1")}, "failed"},
		{"interrupted", []transcript.Event{finished("interrupted", "")}, "interrupted"},
		{"error", []transcript.Event{finished("error", "build: no space left")}, "error"},
		{"finished with no status", []transcript.Event{finished("", "")}, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := testUI(t, Options{}, "run 1/2", "run 2/2")
			for _, e := range tc.events {
				u.Event(1, e)
			}
			// The other run is untouched; compact lines show both.
			lines := strings.Split(frame(u, 80, 24), "\n")
			var got []string
			for _, l := range lines {
				if f := strings.Fields(l); len(f) > 2 && f[0] == "run" {
					got = append(got, f[2])
				}
			}
			require.Equal(t, []string{"building", tc.want}, got, "frame:\n%s", strings.Join(lines, "\n"))
		})
	}
}

func TestOneRunInDetail(t *testing.T) {
	u, now := testUI(t, Options{}, "run 1/1 abc")
	u.Event(0, started("hello"))
	u.Event(0, proc(transcript.ProcessStarted, "student"))
	u.Event(0, output("compiling\nstep 1\n"))
	u.Event(0, output("step 2 half"))
	u.Event(0, call("gpt-test", 850, 100, 20))
	u.Event(0, call("gpt-test-2", 1200, 30, 0))
	u.Event(0, transcript.Event{Type: transcript.LimitHit, Limit: &transcript.LimitInfo{Name: "memory", Enforcement: "kernel", Action: "killed"}})
	u.Event(0, proc(transcript.ProcessExited, "student"))
	u.Event(0, proc(transcript.ProcessStarted, "grader"))
	*now = now.Add(65 * time.Second)

	require.Equal(t, strings.Join([]string{
		"chalk run: 1 run · 1 running · 0 done · no reward yet · 1m05s",
		"run 1/1 abc  hello  grading  1m05s",
		"  model    2 calls, last gpt-test-2: 200 in 1.2s, 30+0 tokens; 150 tokens in all",
		"  limits   memory (kernel, killed)",
		"  student  exited with status 0 after 3.2s",
		"  | compiling",
		"  | step 1",
		"  | step 2 half",
	}, "\n"), frame(u, 100, 30))

	u.Event(0, reward(0.75))
	u.Event(0, finished("ok", ""))
	*now = now.Add(time.Hour) // a finished run's clock stops
	got := frame(u, 100, 30)
	require.Contains(t, got, "chalk run: 1 run · 0 running · 1 done · mean reward 0.75 over 1 · 1h01m\n")
	require.Contains(t, got, "run 1/1 abc  hello  ok  1m05s\n")
	require.Contains(t, got, "  reward   0.75\n")
}

func TestDetailGivesSpareRowsToOutput(t *testing.T) {
	u, _ := testUI(t, Options{}, "a", "b")
	for i := range 30 {
		u.Event(0, output(fmt.Sprintf("a%d\n", i)))
		u.Event(1, output(fmt.Sprintf("b%d\n", i)))
	}
	// 11 rows: the header, two titles, the rest output, shared.
	got := strings.Split(frame(u, 80, 12), "\n")
	require.Len(t, got, 11)
	require.Equal(t, []string{"a  building  0s", "  | a26", "  | a27", "  | a28", "  | a29"}, got[1:6])
	require.Equal(t, []string{"b  building  0s", "  | b26", "  | b27", "  | b28", "  | b29"}, got[6:])

	// With room to spare, each run shows its last maxOutputLines lines.
	got = strings.Split(frame(u, 80, 40), "\n")
	require.Len(t, got, 1+2*(1+maxOutputLines))
	require.Equal(t, "  | a20", got[2])
}

func TestManyRunsFitTheHeight(t *testing.T) {
	labels := make([]string, 16)
	for i := range labels {
		labels[i] = fmt.Sprintf("run %d/16 id%02d", i+1, i)
	}
	u, _ := testUI(t, Options{Input: strings.NewReader("")}, labels...)
	for i := range 16 {
		u.Event(i, started("hello"))
		u.Event(i, proc(transcript.ProcessStarted, "student"))
		u.Event(i, output(fmt.Sprintf("working on item %d\n", i)))
		if i < 6 { // the first six are done
			u.Event(i, reward(float64(i%2)))
			u.Event(i, finished("ok", ""))
		}
	}
	u.Event(2, finished("failed", "grader exited with status 1"))

	// 30 rows: one line per run, the header and the keys.
	got := strings.Split(frame(u, 120, 30), "\n")
	require.Len(t, got, 18)
	require.Equal(t, "chalk run: 16 runs · 10 running · 6 done · 1 failed · mean reward 0.5 over 6 · 0s", got[0])
	require.Equal(t, "run 1/16 id00   ok              0s             reward 0      | working on item 0", got[1])
	require.Equal(t, "run 16/16 id15  running         0s                           | working on item 15", got[16])
	require.Equal(t, "q or ctrl+c: stop the runs", got[17])

	// 10 rows, one kept free: the header, the keys, six runs, unfinished
	// first, and how many are left out.
	got = strings.Split(frame(u, 120, 10), "\n")
	require.Len(t, got, 9)
	for i, l := range got[1:7] {
		require.Contains(t, l, fmt.Sprintf("run %d/16 ", 7+i))
		require.Contains(t, l, "running")
	}
	require.Equal(t, "... and 10 more: 4 running, 6 done", got[7])
	require.Equal(t, "q or ctrl+c: stop the runs", got[8])
}

func TestLinesAreCutToTheWidth(t *testing.T) {
	u, _ := testUI(t, Options{}, "run 1/2 "+strings.Repeat("label", 20), "run 2/2 日本語のラベル")
	u.Event(0, started(strings.Repeat("env", 40)))
	u.Event(0, output(strings.Repeat("very long output ", 50)+"\n"+strings.Repeat("全角", 100)))
	u.Event(0, call(strings.Repeat("m", 300), 10, 1, 1))
	u.Event(1, output(strings.Repeat("x", 500)))
	for _, width := range []int{10, 33, 80, 121} {
		for _, height := range []int{3, 6, 24} {
			f := frame(u, width, height)
			lines := strings.Split(f, "\n")
			require.LessOrEqual(t, len(lines), height-1, "frame %dx%d:\n%s", width, height, f)
			for _, l := range lines {
				require.LessOrEqual(t, ansi.StringWidth(l), width, "frame %dx%d, line %q", width, height, l)
			}
		}
	}
	cut := strings.Split(frame(u, 40, 24), "\n")[4]
	require.Equal(t, "  | 全角全角全角全角全角全角全角全角全…", cut)
}

func TestUntrustedTextIsSanitized(t *testing.T) {
	u, _ := testUI(t, Options{}, "run\x1b[2J 1/1")
	u.Event(0, started("env\x1b]0;title\x07"))
	u.Event(0, output("\x1b[31mred\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \u202eevil\a\n"))
	u.Event(0, call("model\x1b[?1049h", 1, 0, 0))
	u.Event(0, transcript.Event{Type: transcript.ModelCall, Model: &transcript.ModelCallInfo{Model: "m", Error: "bad\x1b[Hanswer"}})
	u.Event(0, transcript.Event{Type: transcript.LimitHit, Limit: &transcript.LimitInfo{Name: "disk\x07", Enforcement: "watchdog", Action: "killed"}})
	u.Event(0, transcript.Event{Type: transcript.Note, Message: "line one\nline two\x1b[1A"})
	f := frame(u, 200, 30)
	require.NotContains(t, f, "\x1b")
	require.NotContains(t, f, "\a")
	require.NotContains(t, f, "\u202e")
	require.Contains(t, f, "run 1/1  env  starting")
	require.Contains(t, f, "  | red link evil")
	require.Contains(t, f, "2 calls, last m: in 0s, badanswer")
	require.Contains(t, f, "limits   disk (watchdog, killed)")
	require.Contains(t, f, "note     line one line two")
}

func TestOutputKeepsOnlyItsTail(t *testing.T) {
	u, _ := testUI(t, Options{}, "r")
	for i := range 2000 {
		u.Event(0, output(fmt.Sprintf("line %d %s\n", i, strings.Repeat("-", 100))))
	}
	u.Event(0, output(strings.Repeat("z", 3*outputKeep)+"\ntail"))
	require.LessOrEqual(t, len(u.runs[0].output), outputKeep)
	got := lastLines(u.runs[0].output, 2)
	require.Equal(t, "tail", got[1])
	require.Equal(t, strings.Repeat("z", outputKeep-5), got[0])
}

func TestEventsFromManyGoroutines(t *testing.T) {
	u, _ := testUI(t, Options{}, "a", "b", "c", "d")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 250 {
				u.Event(g%4, call("m", 1, 1, 1))
				u.Event(g%4, output("x\n"))
			}
		})
	}
	// Draw while the events arrive, as the view does.
	stop := make(chan struct{})
	drawn := make(chan struct{})
	go func() {
		defer close(drawn)
		for {
			select {
			case <-stop:
				return
			default:
				_ = frame(u, 80, 24)
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-drawn
	for i := range 4 {
		require.Equal(t, 500, u.runs[i].calls)
		require.Equal(t, 1000, u.runs[i].tokens)
	}
	require.Contains(t, frame(u, 80, 24), "500 calls")
	u.Event(-1, output("ignored"))
	u.Event(4, output("ignored"))
}

func TestSnapshotRebuildsOnlyTheRunsThatChanged(t *testing.T) {
	u, now := testUI(t, Options{}, "a", "b")
	u.Event(0, output("a1\n"))
	u.Event(1, output("b1\n"))
	first := u.snapshot()
	u.Event(0, output("a2\n"))
	*now = now.Add(3 * time.Second)
	second := u.snapshot()

	require.Equal(t, []string{"a1", "a2"}, second.runs[0].lines)
	require.NotSame(t, &first.runs[0].lines[0], &second.runs[0].lines[0], "run a changed: rebuilt")
	require.Same(t, &first.runs[1].lines[0], &second.runs[1].lines[0], "run b did not: its view is reused")
	require.Equal(t, 3*time.Second, second.runs[1].elapsed, "a reused view's clock still moves")
	require.Equal(t, 3*time.Second, second.elapsed)
}

func TestKeysInterrupt(t *testing.T) {
	interrupted := make(chan struct{}, 2)
	u, _ := testUI(t, Options{Input: strings.NewReader(""), Interrupt: func() { interrupted <- struct{}{} }}, "r")
	m := &model{ui: u, width: 80, height: 24}
	m.Init()
	require.Contains(t, m.View(), "q or ctrl+c: stop the runs")

	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")})
	require.Empty(t, interrupted)

	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	<-interrupted
	require.Contains(t, m.View(), "stopping the runs...")
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
	<-interrupted
}

func TestResize(t *testing.T) {
	labels := make([]string, 6)
	for i := range labels {
		labels[i] = fmt.Sprintf("run %d/6", i+1)
	}
	u, _ := testUI(t, Options{}, labels...)
	for i := range 6 {
		u.Event(i, output("some output that is rather long for a narrow terminal\n"))
	}
	m := &model{ui: u}
	m.Init()
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	require.Nil(t, cmd)
	require.Contains(t, m.View(), "  | some output that is rather long for a narrow terminal")

	// Smaller: one line per run, cut to the width, and the screen is
	// cleared because the old frame has rewrapped.
	_, cmd = m.Update(tea.WindowSizeMsg{Width: 30, Height: 8})
	require.NotNil(t, cmd)
	require.IsType(t, tea.ClearScreen(), cmd())
	lines := strings.Split(m.View(), "\n")
	require.Len(t, lines, 7)
	for _, l := range lines {
		require.LessOrEqual(t, ansi.StringWidth(l), 30)
	}
	require.True(t, strings.HasPrefix(lines[6], "run 6/6  building"), lines[6])
}
