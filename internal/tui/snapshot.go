package tui

import (
	"slices"
	"time"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// builtRun is a run as the view draws it, and the state it was built
// from.
type builtRun struct {
	version  uint64
	finished time.Time
	view     runView // all but elapsed, which moves with the clock
}

// snapshot is what the view shows now. Under mu it only copies the runs
// that changed since the last snapshot; it sanitizes and lays out their
// output after, holding no lock Event needs, and reuses the other runs
// as they were built.
func (u *UI) snapshot() snapshot {
	u.snapMu.Lock()
	defer u.snapMu.Unlock()

	u.mu.Lock()
	now := u.now()
	s := snapshot{
		elapsed:      now.Sub(u.start),
		interrupting: u.interrupting,
		keys:         u.opts.Input != nil,
		runs:         make([]runView, len(u.runs)),
	}
	var changed []runState
	for i, r := range u.runs {
		if r.version != u.built[i].version {
			changed = append(changed, r.clone())
		}
	}
	u.mu.Unlock()

	for _, r := range changed {
		u.built[r.Index] = r.build()
	}
	for i, b := range u.built {
		end := now
		if b.view.done {
			end = b.finished
		}
		s.runs[i] = b.view
		s.runs[i].elapsed = end.Sub(u.start)
	}
	return s
}

// clone copies r, sharing nothing that later events change.
func (r *runState) clone() runState {
	c := *r
	c.output = slices.Clone(r.output)
	c.limits = slices.Clone(r.limits)
	return c
}

// build makes the run's view, every string in it sanitized.
func (r *runState) build() builtRun {
	v := runView{
		label: sanitize(r.Label), env: sanitize(r.Environment), status: sanitize(r.status),
		done: r.done(), lines: lastLines(r.output, maxOutputLines),
		calls: r.calls, lastCall: r.lastCall, tokens: r.tokens, reward: r.reward,
		exit: sanitize(r.exit), message: sanitize(r.message),
	}
	v.lastCall.Model, v.lastCall.Error = sanitize(v.lastCall.Model), sanitize(v.lastCall.Error)
	for _, l := range r.limits {
		v.limits = append(v.limits, transcript.LimitInfo{Name: sanitize(l.Name), Enforcement: sanitize(l.Enforcement), Action: sanitize(l.Action)})
	}
	return builtRun{version: r.version, finished: r.finished, view: v}
}
