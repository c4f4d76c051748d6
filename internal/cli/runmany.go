package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/transcript"
	"github.com/chalk-rl/chalk/internal/tui"
	"github.com/charmbracelet/x/term"
)

// sink shows the events of one or many runs as they happen.
type sink interface {
	event(i int, e transcript.Event)
	close()
}

// jsonSink prints every event as one JSON line on w, with the run's
// index and ID, for scripts.
type jsonSink struct {
	mu  sync.Mutex
	w   io.Writer
	ids map[int]string
}

func (s *jsonSink) event(i int, e transcript.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Type == transcript.RunStarted && e.Run != nil {
		s.ids[i] = e.Run.ID
	}
	b, err := json.Marshal(struct {
		Index int              `json:"index"`
		Run   string           `json:"run"`
		Event transcript.Event `json:"event"`
	}{i + 1, s.ids[i], e})
	if err == nil {
		s.w.Write(append(b, '\n'))
	}
}

func (s *jsonSink) close() {}

// lineSink prints one line per run for the events that matter when many
// runs share the screen.
type lineSink struct {
	mu  sync.Mutex
	w   io.Writer
	n   int
	ids map[int]string
}

func (s *lineSink) event(i int, e transcript.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tag := fmt.Sprintf("[%d/%d]", i+1, s.n)
	switch e.Type {
	case transcript.RunStarted:
		s.ids[i] = e.Run.ID
		fmt.Fprintf(s.w, "%s run %s started\n", tag, e.Run.ID)
	case transcript.LimitHit:
		fmt.Fprintf(s.w, "%s run %s: limit hit: %s (%s): %s\n", tag, s.ids[i], e.Limit.Name, e.Limit.Action, e.Message)
	case transcript.Reward:
		fmt.Fprintf(s.w, "%s run %s: reward %g\n", tag, s.ids[i], *e.Reward)
	case transcript.RunFinished:
		fmt.Fprintf(s.w, "%s run %s finished: %s (%s)\n", tag, s.ids[i], e.Status, e.Message)
	}
}

func (s *lineSink) close() {}

// oneSink is the plain progress of a single run.
type oneSink struct{ p *progress }

func (s oneSink) event(_ int, e transcript.Event) { s.p.event(e) }
func (s oneSink) close()                          {}

// outcome is how one of the runs went.
type outcome struct {
	res  *run.Result
	err  error
	took time.Duration
}

// runMany runs n copies of the run o at most parallel at a time, and
// prints a summary. One failing run does not stop the others; Ctrl-C
// stops them all.
func (a *app) runMany(ctx context.Context, o run.Options, n, parallel int, show sink) ([]outcome, time.Duration, error) {
	defer show.close()
	e := o.Env
	img, err := run.Prepare(ctx, o)
	if err != nil {
		return nil, 0, err
	}
	o.Image = img
	if err := os.MkdirAll(o.RunsDir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("make the runs directory: %w", err)
	}
	budget, err := run.DiskBudget(o.RunsDir, e.Hardware.DiskBytes, n)
	if err != nil {
		return nil, 0, err
	}
	o.DiskBytes = budget
	outs := make([]outcome, n)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				outs[i].err = ctx.Err()
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				outs[i].err = ctx.Err()
				return
			}
			oi := o
			oi.Event = func(ev transcript.Event) { show.event(i, ev) }
			t0 := time.Now()
			outs[i].res, outs[i].err = run.Run(ctx, oi)
			outs[i].took = time.Since(t0)
		}()
	}
	wg.Wait()
	return outs, time.Since(start), nil
}

// manySummary prints each run's status, reward and duration, and the
// totals; the error says whether any run failed.
func (a *app) manySummary(w io.Writer, outs []outcome, wall time.Duration) error {
	fmt.Fprintf(w, "\n%-4s %-9s %-12s %-8s %-9s %s\n", "#", "run", "status", "reward", "duration", "transcript")
	counts := map[string]int{}
	var rewardSum float64
	var rewards int
	var firstBad *outcome
	for i := range outs {
		o := &outs[i]
		status, id, reward, took, where := "not run", "-", "-", "-", ""
		switch {
		case o.res != nil:
			status, id, where = o.res.Status, o.res.ID, o.res.Transcript
			if o.res.Reward != nil {
				reward = fmt.Sprintf("%g", *o.res.Reward)
				rewardSum += *o.res.Reward
				rewards++
			}
			took = o.took.Round(time.Millisecond).String()
		case errors.Is(o.err, context.Canceled):
			status = transcript.StatusInterrupted
		case o.err != nil:
			status, where = transcript.StatusError, o.err.Error()
		}
		if status == "not run" && o.err == nil {
			status = transcript.StatusInterrupted
		}
		counts[status]++
		if status != transcript.StatusOK && firstBad == nil {
			firstBad = o
		}
		fmt.Fprintf(w, "%-4d %-9s %-12s %-8s %-9s %s\n", i+1, id, status, reward, took, where)
	}
	fmt.Fprintf(w, "\n%d runs in %s: %d ok, %d failed, %d error, %d interrupted",
		len(outs), wall.Round(time.Millisecond), counts[transcript.StatusOK], counts[transcript.StatusFailed],
		counts[transcript.StatusError], counts[transcript.StatusInterrupted])
	if rewards > 0 {
		fmt.Fprintf(w, "; mean reward %.4g over %d", rewardSum/float64(rewards), rewards)
	}
	fmt.Fprintln(w)
	switch {
	case counts[transcript.StatusInterrupted] > 0:
		return hint.WithCode(errors.New("runs interrupted; their transcripts and /out so far are kept"), ExitInterrupt)
	case firstBad != nil:
		dir := ""
		if len(outs) > 0 && outs[0].res != nil {
			dir = filepath.Dir(outs[0].res.Dir)
		}
		return hint.Wrap(fmt.Errorf("%d of %d runs did not succeed", len(outs)-counts[transcript.StatusOK], len(outs)),
			fmt.Sprintf("read their transcripts, or browse them with 'chalk view %s'", dir))
	}
	return nil
}

// tuiSink is the live terminal view.
type tuiSink struct{ ui *tui.UI }

func newTUISink(w io.Writer, n int, env string, in io.Reader, interrupt func()) *tuiSink {
	runs := make([]tui.Run, n)
	for i := range runs {
		runs[i] = tui.Run{Label: fmt.Sprintf("run %d/%d", i+1, n), Environment: env}
	}
	ui := tui.New(w, runs, tui.Options{Input: in, Interrupt: interrupt})
	ui.Start()
	return &tuiSink{ui: ui}
}

func (s *tuiSink) event(i int, e transcript.Event) { s.ui.Event(i, e) }
func (s *tuiSink) close()                          { _ = s.ui.Close() }

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
