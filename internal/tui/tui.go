// Package tui is the live view chalk run shows on a terminal: one or many
// runs at once, each with its status, elapsed time, the student's latest
// output, its model calls, the limits it hit and its reward, under a line
// of totals. It is drawn in place below what the terminal already shows
// (not on the alternate screen), and its last frame stays there.
//
// Use:
//
//	ui := tui.New(os.Stderr, []tui.Run{{Index: 0, Label: "run 1/2"}, {Index: 1, Label: "run 2/2"}},
//		tui.Options{Input: os.Stdin, Interrupt: cancel})
//	ui.Start()
//	// from the runs' goroutines:
//	ui.Event(0, e)
//	// when every run has returned:
//	err := ui.Close()
//
// The UI is also an io.Writer: what is written to it (a build's log, a
// logger's lines) is printed above the view, a whole line at a time, so
// that nothing else writes over the view while it is drawn.
//
// Event never waits for the screen: it updates the run's state under a
// lock and returns, and the view is redrawn from that state at most ten
// times a second, however many events arrive. Everything a run's events
// carry is sanitized before it is drawn (see sanitize), because the
// student's output and its model requests are untrusted.
//
// A run shows "building" until its run.started, "starting" until the
// student starts, "running", "grading" once the grader starts, and then
// run.finished's status (ok, failed, interrupted, error). A run that
// fails before run.started should be given a run.finished event with
// status error and the reason as its message.
package tui

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// Run names one of the runs the view shows.
type Run struct {
	// Index is the run's place in the runs given to New, and what Event
	// is called with.
	Index int
	// Label is what the run is called on screen, such as "run 3/8 abc123".
	Label string
	// Environment is the environment's name; run.started fills it in when
	// it is empty.
	Environment string
}

// Options configure the view.
type Options struct {
	// Input is the keyboard (a terminal), put in raw mode while the view
	// runs; nil reads no keys, and so does a file that is not a terminal
	// (stdin redirected), which is left unread.
	Input io.Reader
	// Interrupt is called, on its own goroutine, when the user presses q
	// or Ctrl-C in the view; it should stop the runs, whose run.finished
	// events then arrive as usual. It may be called more than once.
	Interrupt func()
}

// redraw is how often the view is drawn anew.
const redraw = 100 * time.Millisecond

// maxPending is how many written lines wait for the next frame; past it
// the oldest are left out, so that a flood of log never holds a run up.
const maxPending = 500

// UI is the live view of a set of runs.
type UI struct {
	w       io.Writer
	opts    Options
	program *tea.Program
	styles  styles
	now     func() time.Time
	start   time.Time

	mu           sync.Mutex
	runs         []*runState
	interrupting bool
	started      bool
	closed       bool
	released     bool     // Close has returned: writes go straight to w
	partial      []byte   // written, not yet ended by a newline
	pending      []string // written lines the next frame prints
	dropped      int      // lines left out of pending

	// built is each run as the view last drew it, rebuilt by snapshot
	// only when the run has changed, under snapMu and not mu, so that
	// Event never waits for it.
	snapMu sync.Mutex
	built  []builtRun

	done chan struct{} // closed when the program has returned
	err  error
}

// New returns the view of runs on the terminal w. Nothing is drawn before
// Start.
func New(w io.Writer, runs []Run, opts Options) *UI {
	if f, ok := opts.Input.(term.File); ok && !term.IsTerminal(f.Fd()) {
		opts.Input = nil
	}
	u := &UI{w: w, opts: opts, now: time.Now, done: make(chan struct{})}
	u.start = u.now()
	for i, r := range runs {
		r.Index = i
		st := &runState{Run: r, status: StatusBuilding}
		u.runs = append(u.runs, st)
		u.built = append(u.built, st.build())
	}
	u.styles = newStyles(lipgloss.NewRenderer(w))
	u.program = tea.NewProgram(&model{ui: u},
		tea.WithOutput(w),
		tea.WithInput(opts.Input),
		// The caller owns SIGINT and SIGTERM: it stops the runs and then
		// closes the view.
		tea.WithoutSignalHandler(),
	)
	return u
}

// Start draws the view and keeps it up to date until Close.
func (u *UI) Start() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started || u.closed {
		return
	}
	u.started = true
	go func() {
		defer close(u.done)
		_, u.err = u.program.Run()
	}()
}

// Event records e as an event of the run at index. It is safe to call from
// many goroutines and does not wait for the screen.
func (u *UI) Event(index int, e transcript.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if index < 0 || index >= len(u.runs) {
		return
	}
	u.runs[index].apply(e, u.now())
}

// Close draws the last frame, leaves it on the terminal, gives the
// terminal back and returns. Calling it again, or without Start, does
// nothing.
func (u *UI) Close() error {
	u.mu.Lock()
	started, closed := u.started, u.closed
	u.closed = true
	u.mu.Unlock()
	if started {
		if !closed {
			u.program.Send(closeMsg{})
		}
		<-u.done
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.released {
		u.released = true
		if lines := u.takeLines(true); len(lines) > 0 {
			_, _ = io.WriteString(u.w, strings.Join(lines, "\n")+"\n")
		}
	}
	return u.err
}

// Write prints p above the view, each line once it is ended by a newline
// (Close prints the rest), sanitized, as the view draws its next frame.
// It never waits for the terminal. Once Close has returned, p goes
// straight to the terminal, as it is.
func (u *UI) Write(p []byte) (int, error) {
	u.mu.Lock()
	if u.released {
		u.mu.Unlock()
		return u.w.Write(p)
	}
	defer u.mu.Unlock()
	u.partial = append(u.partial, p...)
	for {
		i := bytes.IndexByte(u.partial, '\n')
		if i < 0 {
			break
		}
		u.pending = append(u.pending, sanitize(string(u.partial[:i])))
		u.partial = u.partial[i+1:]
	}
	u.partial = append([]byte(nil), u.partial...)
	if over := len(u.pending) - maxPending; over > 0 {
		u.pending = append(u.pending[:0], u.pending[over:]...)
		u.dropped += over
	}
	return len(p), nil
}

// takeLines returns the written lines to print and forgets them; all
// includes a last line with no newline. The caller holds mu.
func (u *UI) takeLines(all bool) []string {
	lines := u.pending
	if all && len(u.partial) > 0 {
		lines = append(lines, sanitize(string(u.partial)))
		u.partial = nil
	}
	if u.dropped > 0 {
		lines = append([]string{fmt.Sprintf("(%d lines left out)", u.dropped)}, lines...)
		u.dropped = 0
	}
	u.pending = nil
	return lines
}

// printCmd prints the written lines above the view, or is nil.
func (u *UI) printCmd(all bool) tea.Cmd {
	u.mu.Lock()
	lines := u.takeLines(all)
	u.mu.Unlock()
	if len(lines) == 0 {
		return nil
	}
	return tea.Println(strings.Join(lines, "\n"))
}

// interrupt is the user asking to stop.
func (u *UI) interrupt() {
	u.mu.Lock()
	u.interrupting = true
	u.mu.Unlock()
	if u.opts.Interrupt != nil {
		go u.opts.Interrupt()
	}
}
