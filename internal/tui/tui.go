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
	"io"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

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
	// Input is the keyboard (a terminal); nil reads no keys.
	Input io.Reader
	// Interrupt is called, on its own goroutine, when the user presses q
	// or Ctrl-C in the view; it should stop the runs, whose run.finished
	// events then arrive as usual. It may be called more than once.
	Interrupt func()
}

// redraw is how often the view is drawn anew.
const redraw = 100 * time.Millisecond

// UI is the live view of a set of runs.
type UI struct {
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

	done chan struct{} // closed when the program has returned
	err  error
}

// New returns the view of runs on the terminal w. Nothing is drawn before
// Start.
func New(w io.Writer, runs []Run, opts Options) *UI {
	u := &UI{opts: opts, now: time.Now, done: make(chan struct{})}
	u.start = u.now()
	for i, r := range runs {
		r.Index = i
		u.runs = append(u.runs, &runState{Run: r, status: StatusBuilding})
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
	if !started {
		return nil
	}
	if !closed {
		u.program.Send(closeMsg{})
	}
	<-u.done
	return u.err
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

// snapshot copies what the view shows, so drawing holds no lock.
func (u *UI) snapshot() snapshot {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	s := snapshot{
		elapsed:      now.Sub(u.start),
		interrupting: u.interrupting,
		keys:         u.opts.Input != nil,
		runs:         make([]runView, len(u.runs)),
	}
	for i, r := range u.runs {
		end := now
		if r.done() {
			end = r.finished
		}
		v := runView{
			label: sanitize(r.Label), env: sanitize(r.Environment), status: sanitize(r.status),
			elapsed: end.Sub(u.start), done: r.done(), lines: lastLines(r.output, maxOutputLines),
			calls: r.calls, lastCall: r.lastCall, tokens: r.tokens, reward: r.reward,
			exit: sanitize(r.exit), message: sanitize(r.message),
		}
		v.lastCall.Model, v.lastCall.Error = sanitize(v.lastCall.Model), sanitize(v.lastCall.Error)
		for _, l := range r.limits {
			v.limits = append(v.limits, transcript.LimitInfo{Name: sanitize(l.Name), Enforcement: sanitize(l.Enforcement), Action: sanitize(l.Action)})
		}
		s.runs[i] = v
	}
	return s
}
