package tui

import (
	"time"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// Statuses a run shows. The last four are run.finished's.
const (
	StatusBuilding = "building" // no event yet: the image is being built
	StatusStarting = "starting" // run.started: the sandbox is being made
	StatusRunning  = "running"  // the student has started
	StatusGrading  = "grading"  // the grader has started
)

// outputKeep is how much of a student's latest output a run keeps: enough
// for the lines the view shows, however long the run.
const outputKeep = 8 << 10

// runState is what the view knows of one run, changed by its events.
type runState struct {
	Run
	status   string
	finished time.Time // zero while the run goes on
	output   []byte    // the tail of the student's stdout and stderr
	calls    int
	lastCall transcript.ModelCallInfo // without the bodies
	tokens   int
	limits   []transcript.LimitInfo
	reward   *float64
	exit     string // how the student ended
	message  string // the last note, or run.finished's message
	version  uint64 // how many events changed it: the view rebuilds a run when it moves
}

// apply changes the run by one of its events.
func (r *runState) apply(e transcript.Event, now time.Time) {
	r.version++
	switch e.Type {
	case transcript.RunStarted:
		if r.status == StatusBuilding {
			r.status = StatusStarting
		}
		if e.Run != nil && r.Environment == "" {
			r.Environment = e.Run.Environment
		}
	case transcript.ProcessStarted:
		switch e.Process {
		case "student":
			r.status = StatusRunning
		case "grader":
			r.status = StatusGrading
		}
	case transcript.Output:
		if e.Process == "student" {
			r.addOutput(e.Data())
		}
	case transcript.ProcessExited:
		if e.Process == "student" {
			r.exit = transcript.ExitText(e)
		}
	case transcript.ModelCall:
		if m := e.Model; m != nil {
			r.calls++
			r.lastCall = *m
			r.lastCall.Request, r.lastCall.Response = nil, nil
			r.tokens += m.PromptTokens + m.CompletionTokens
		}
	case transcript.LimitHit:
		if l := e.Limit; l != nil {
			r.limits = append(r.limits, *l)
		}
	case transcript.Reward:
		if e.Reward != nil {
			v := *e.Reward
			r.reward = &v
		}
	case transcript.Note:
		r.message = e.Message
	case transcript.RunFinished:
		r.status = e.Status
		if r.status == "" {
			r.status = transcript.StatusError
		}
		if e.Message != "" {
			r.message = e.Message
		}
		r.finished = now
	}
}

// addOutput keeps the last outputKeep bytes of the student's output.
func (r *runState) addOutput(b []byte) {
	if len(b) >= outputKeep {
		r.output = append(r.output[:0], b[len(b)-outputKeep:]...)
		return
	}
	if over := len(r.output) + len(b) - outputKeep; over > 0 {
		r.output = append(r.output[:0], r.output[over:]...)
	}
	r.output = append(r.output, b...)
}

func (r *runState) done() bool { return !r.finished.IsZero() }
