// Package transcript defines the events a run records and reads and writes
// them as JSON Lines: one event per line, flushed as it happens, so a run
// that dies midway still leaves a valid transcript up to that point.
package transcript

import (
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// Version is the schema version written in every event's "v".
const Version = 1

// Event types.
const (
	RunStarted     = "run.started"
	ProcessStarted = "process.started"
	Output         = "output"
	ProcessExited  = "process.exited"
	Reward         = "reward"
	OutCopied      = "out.copied"
	Note           = "note"
	ModelCall      = "model.call"
	LimitHit       = "limit.hit"
	Confinement    = "confinement"
	RunFinished    = "run.finished"
)

// Run statuses, in run.finished.
const (
	StatusOK          = "ok"          // the student and the grader exited 0
	StatusFailed      = "failed"      // the student or the grader failed
	StatusInterrupted = "interrupted" // stopped by Ctrl-C or SIGTERM
	StatusError       = "error"       // Chalk could not run it to the end
)

// Event is one line of a transcript. Type says which of the optional
// fields are set.
type Event struct {
	V    int       `json:"v"`
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	Type string    `json:"type"`

	// run.started
	Run *RunInfo `json:"run,omitempty"`

	// process.started, output, process.exited: which process ("student"
	// or "grader").
	Process string   `json:"process,omitempty"`
	Command []string `json:"command,omitempty"`
	UID     *int     `json:"uid,omitempty"`

	// output: the stream and the bytes, as text when they are valid UTF-8,
	// else base64 in data_b64.
	Stream  string `json:"stream,omitempty"`
	Text    string `json:"text,omitempty"`
	DataB64 string `json:"data_b64,omitempty"`

	// process.exited (and duration_ms in run.finished: the whole run's)
	ExitCode   *int   `json:"exit_code,omitempty"`
	Signal     string `json:"signal,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`

	// reward
	Reward *float64 `json:"reward,omitempty"`

	// out.copied: files and bytes kept, and what was left out (symlinks,
	// fifos, devices).
	Files   int      `json:"files,omitempty"`
	Bytes   int64    `json:"bytes,omitempty"`
	Skipped []string `json:"skipped,omitempty"`

	// model.call: one request the student made to the model and its answer.
	Model *ModelCallInfo `json:"model,omitempty"`

	// confinement: the student's limits and how each is enforced, from
	// inside the sandbox, before the student starts.
	Confinement *ConfinementInfo `json:"confinement,omitempty"`

	// limit.hit: which limit the student ran into and what was done.
	Limit *LimitInfo `json:"limit,omitempty"`

	// run.finished
	Status string `json:"status,omitempty"`

	// note, run.finished: a sentence for people.
	Message string `json:"message,omitempty"`
}

// RunInfo describes the run in its run.started event.
type RunInfo struct {
	ID          string  `json:"id"`
	Environment string  `json:"environment"`
	Image       string  `json:"image,omitempty"`
	Runtime     string  `json:"runtime,omitempty"`
	Hardware    string  `json:"hardware,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	// StudentMemoryBytes is the student's limit: the sandbox's memory less
	// what is kept for the harness.
	StudentMemoryBytes int64 `json:"student_memory_bytes,omitempty"`
	// StudentDiskBytes is the student's disk budget, StudentProcesses its
	// process limit, Network its network policy. How each is enforced is
	// known inside the sandbox: see the confinement event.
	// Owner is the chalk process that runs it (HOST/PID/START), so that
	// a reader can tell a run still going from one whose chalk was killed.
	Owner            string `json:"owner,omitempty"`
	StudentDiskBytes int64  `json:"student_disk_bytes,omitempty"`
	StudentProcesses int    `json:"student_processes,omitempty"`
	Network          string `json:"network,omitempty"`
}

// ModelCallInfo is one model request forwarded for the student.
type ModelCallInfo struct {
	Model            string `json:"model,omitempty"`
	Stream           bool   `json:"stream,omitempty"`
	Status           int    `json:"status"` // HTTP status from the proxy; 0 when it could not be reached
	LatencyMS        int64  `json:"latency_ms"`
	PromptTokens     int    `json:"prompt_tokens,omitempty"`
	CompletionTokens int    `json:"completion_tokens,omitempty"`
	ServiceTier      string `json:"service_tier,omitempty"`
	// Request and Response are the JSON bodies (a streamed response is
	// stored reassembled as one chat completion).
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// ConfinementInfo is the student's box as the harness built it.
type ConfinementInfo struct {
	UID         int               `json:"uid"`
	MemoryBytes int64             `json:"memory_bytes,omitempty"`
	Processes   int               `json:"processes,omitempty"`
	DiskBytes   int64             `json:"disk_bytes,omitempty"`
	Network     string            `json:"network,omitempty"`
	Enforcement map[string]string `json:"enforcement"` // limit → kernel, watchdog or none
	Why         map[string]string `json:"why,omitempty"`
	SetupMS     int64             `json:"setup_ms"`
}

// LimitInfo says which limit the student hit and how it was enforced.
type LimitInfo struct {
	Name        string `json:"name"`        // memory, processes, disk, network, timeout
	Enforcement string `json:"enforcement"` // kernel, watchdog
	Action      string `json:"action"`      // what happened: "killed", "denied"
}

// SetData stores b in e as text or base64.
func (e *Event) SetData(b []byte) {
	if utf8.Valid(b) {
		e.Text = string(b)
		return
	}
	e.DataB64 = base64.StdEncoding.EncodeToString(b)
}

// Data returns the bytes of an output event.
func (e *Event) Data() []byte {
	if e.DataB64 != "" {
		b, _ := base64.StdEncoding.DecodeString(e.DataB64)
		return b
	}
	return []byte(e.Text)
}

// Int returns a pointer to n, for the optional fields.
func Int(n int) *int { return &n }

// Float returns a pointer to f.
func Float(f float64) *float64 { return &f }

// Marshal encodes e as one line, newline included.
func Marshal(e Event) ([]byte, error) {
	if b, ok := marshalOutput(e); ok {
		return b, nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
