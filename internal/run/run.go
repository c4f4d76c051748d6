// Package run orchestrates runs: it builds the environment's image if
// needed, creates a sandbox on a runtime with the harness inside, streams
// the harness's events into the run's transcript, copies /out back next to
// it, and removes the sandbox, on success, failure, timeout and Ctrl-C
// alike.
package run

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/harness"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// Options configure one run.
type Options struct {
	Env     *env.Env
	Runtime runtime.Runtime
	// RunsDir holds one directory per run.
	RunsDir string
	Mounts  []runtime.Mount
	// Forward are host variables passed to the student and the grader.
	Forward        map[string]string
	KeepContainers bool
	// PrepareOnly builds and creates the sandbox, and runs nothing in it.
	PrepareOnly bool
	// Rebuild builds the image even when it exists.
	Rebuild bool
	// DiskBytes is the student's disk budget; zero means DiskBudget for
	// one run.
	DiskBytes int64
	// Network is the student's network policy (confine.NetworkPolicies);
	// empty means the default.
	Network string
	// Allow are addresses the student may reach whatever the policy.
	Allow []netip.AddrPort
	// Model is the run's model proxy; the harness serves the student an
	// endpoint that forwards to it.
	Model *harness.ModelConfig
	// DevMount, when set, makes a --dev run: the environment directory is
	// mounted there, live and read-only, and the image is rebuilt only
	// when the Containerfile changes.
	DevMount string
	// Unconfined runs the student with no limits or firewall: for the
	// benchmark that measures what confinement adds, never from the CLI.
	Unconfined bool
	// FaultDropStreamEvery, for tests, drops the connection to the
	// harness's event stream after every that many events.
	FaultDropStreamEvery int
	// Image, when set, is what Prepare returned for these options: the
	// run takes it instead of hashing the environment and asking the
	// runtime for its image again.
	Image *Image
	// ExtraArgs are engine flags for the sandbox (container_run_args).
	ExtraArgs []string
	// Event, when set, sees every event as it is written.
	Event func(transcript.Event)
	// BuildLog receives the build's output.
	BuildLog io.Writer
	Log      *slog.Logger
	// Grace is how long the harness gets to wrap up after Ctrl-C before
	// the sandbox is removed under it. Zero means 10 seconds.
	Grace time.Duration
}

// Result is what a run left behind.
type Result struct {
	ID         string
	Dir        string // the run's directory on the host
	Transcript string
	Out        string
	Sandbox    string // the sandbox's name
	SandboxID  string
	Kept       bool // the sandbox was left in place
	Status     string
	Message    string
	Reward     *float64
	// StreamConnections counts the connections made to the harness's
	// event stream; EventsFromLog the events read from its log instead,
	// after the sandbox ended.
	StreamConnections int
	EventsFromLog     int
}

// Run runs the environment once. An error means the run could not be
// carried out (preflight, build, sandbox); a run that happened returns a
// Result whose Status says how it went, and its transcript and /out are
// on the host whatever the status.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Grace == 0 {
		o.Grace = 10 * time.Second
	}
	e, rt := o.Env, o.Runtime
	if o.DevMount != "" {
		// Runs of -n share o's Mounts: append to a copy.
		o.Mounts = append(slices.Clip(o.Mounts), runtime.Mount{Source: e.Dir, Target: o.DevMount, ReadOnly: true})
	}
	img := o.Image
	if img == nil {
		var err error
		if img, err = Prepare(ctx, o); err != nil {
			return nil, err
		}
	}
	tag, bin := img.Tag, img.Harness

	runsDir, err := filepath.Abs(o.RunsDir)
	if err != nil {
		return nil, err
	}
	id := newID()
	res := &Result{ID: id, Sandbox: "chalk-" + e.Name + "-" + id}
	res.Dir = filepath.Join(runsDir, time.Now().UTC().Format("20060102T150405Z")+"-"+id)
	res.Transcript = filepath.Join(res.Dir, "transcript.jsonl")
	res.Out = filepath.Join(res.Dir, "out")
	private := filepath.Join(res.Dir, ".sandbox")
	if err := os.MkdirAll(res.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("make run directory: %w", err)
	}
	if err := os.Mkdir(private, 0o700); err != nil {
		return nil, fmt.Errorf("make run directory: %w", err)
	}
	defer os.RemoveAll(private) // the config may hold secrets
	tf, err := os.OpenFile(res.Transcript, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create transcript: %w", err)
	}
	defer tf.Close()

	if o.DiskBytes == 0 {
		if o.DiskBytes, err = DiskBudget(res.Dir, e.Hardware.DiskBytes, 1); err != nil {
			return nil, err
		}
	}
	if o.Network == "" {
		o.Network = confine.NetworkProxy
	}
	r := &runner{o: o, res: res, rt: rt, tw: transcript.NewWriter(tf), private: private, token: secret(), began: time.Now()}
	r.emit(transcript.Event{Type: transcript.RunStarted, Run: &transcript.RunInfo{
		ID: id, Environment: e.Name, Image: tag, Runtime: rt.Name(), Hardware: e.Hardware.Name,
		CPUs: e.Hardware.CPUs, MemoryBytes: e.Hardware.MemoryBytes, StudentMemoryBytes: e.StudentMemoryBytes(),
		StudentDiskBytes: o.DiskBytes, StudentProcesses: confine.DefaultProcesses, Network: o.Network, Owner: Owner(),
	}})
	if err := r.writeConfig(); err != nil {
		return r.fail(err)
	}
	defer r.cleanup()
	spec := runtime.SandboxSpec{
		Name:        res.Sandbox,
		Image:       tag,
		CPUs:        e.Hardware.CPUs,
		MemoryBytes: e.Hardware.MemoryBytes,
		Labels:      sandboxLabels(id, e.Name, o.KeepContainers || o.PrepareOnly),
		Mounts: append([]runtime.Mount{
			{Source: bin, Target: harness.Binary, ReadOnly: true},
			{Source: private, Target: harness.RunDir},
		}, o.Mounts...),
		Entrypoint:  []string{harness.Binary, "harness", harness.ConfigPath},
		ExtraArgs:   o.ExtraArgs,
		CapAdd:      HarnessCaps,
		DeviceRules: HarnessDevices,
	}
	sid, err := rt.Create(ctx, spec)
	if err != nil {
		return r.fail(err)
	}
	res.SandboxID = sid
	if err := r.copyFiles(ctx); err != nil {
		return r.fail(err)
	}
	if o.PrepareOnly {
		res.Kept, res.Status = true, "prepared"
		res.Message = fmt.Sprintf("sandbox %s is created and not started", res.Sandbox)
		r.emit(transcript.Event{Type: transcript.Note, Message: res.Message})
		return res, nil
	}
	r.start(ctx)
	r.collectOut(ctx)
	r.finish(ctx)
	return res, nil
}

// Owner is this process's owner label: host name and pid (worked out
// once: it labels every run's sandbox and transcript).
var Owner = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return FormatOwner(h, os.Getpid())
})

// secret is a random token for the run's event stream.
func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type runner struct {
	began   time.Time // when run.started was written
	o       Options
	res     *Result
	rt      runtime.Runtime
	tw      *transcript.Writer
	private string
	token   string // the run's secret for the harness's event stream
	shown   bucket // how much of the student's output is shown live
	// finished is the harness's run.finished, held back so that it is
	// always the transcript's last event.
	finished *transcript.Event
	exitCode int
	startErr error
}

// emitRaw writes an output event the harness encoded, and shows it
// unless output is coming faster than anyone can read it: then only a
// sample reaches Options.Event (the transcript has all of it).
func (r *runner) emitRaw(line []byte) {
	if _, err := r.tw.EmitRaw(line); err != nil {
		r.o.Log.Error("write transcript", "err", err)
	}
	if r.o.Event == nil {
		return
	}
	if !r.shown.take(time.Now(), len(line)) {
		if !r.shown.warned {
			r.shown.warned = true
			r.o.Event(transcript.Event{Type: transcript.Note, Message: "the student's output is coming faster than it can be shown; only some of it is shown, and the transcript has all of it"})
		}
		return
	}
	var e transcript.Event
	if err := json.Unmarshal(line, &e); err == nil {
		r.o.Event(e)
	}
}

// bucket lets through bursts of up to shownBurst bytes of output, and
// shownRate bytes a second: more than a person reads.
type bucket struct {
	tokens float64
	last   time.Time
	warned bool
}

const (
	shownBurst = 1 << 20
	shownRate  = 64 << 10
)

func (b *bucket) take(now time.Time, n int) bool {
	if b.last.IsZero() {
		b.tokens, b.last = shownBurst, now
	}
	b.tokens = min(shownBurst, b.tokens+now.Sub(b.last).Seconds()*shownRate)
	b.last = now
	if b.tokens < float64(n) {
		return false
	}
	b.tokens -= float64(n)
	return true
}

func (r *runner) emit(e transcript.Event) {
	if err := r.tw.Emit(e); err != nil {
		r.o.Log.Error("write transcript", "err", err)
	}
	if r.o.Event != nil {
		r.o.Event(e)
	}
}

func (r *runner) writeConfig() error {
	e := r.o.Env
	c := harness.Config{
		EventsToken: r.token,
		RunID:       r.res.ID, Env: r.o.Forward, Student: process(e.Student), Network: r.o.Network,
		Limits: confine.Limits{MemoryBytes: e.StudentMemoryBytes(), Processes: confine.DefaultProcesses, DiskBytes: r.o.DiskBytes},
	}
	c.Model = r.o.Model
	c.Unconfined = r.o.Unconfined
	for _, a := range r.o.Allow {
		c.Allow = append(c.Allow, a.String())
	}
	if e.Grader != nil {
		g := process(*e.Grader)
		c.Grader = &g
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.private, "config.json"), b, 0o600)
}

func process(p env.Process) harness.Process {
	return harness.Process{Command: p.Command, Workdir: p.Workdir, Timeout: harness.Duration(p.Timeout), Env: p.Env}
}

// fail records err as the end of the run and returns it.
func (r *runner) fail(err error) (*Result, error) {
	r.res.Status, r.res.Message = transcript.StatusError, err.Error()
	r.emit(transcript.Event{Type: transcript.RunFinished, Status: transcript.StatusError, Message: err.Error(),
		DurationMS: time.Since(r.began).Milliseconds()})
	return r.res, err
}

// cleanup removes the sandbox unless it is kept. It runs even when ctx
// has ended.
func (r *runner) cleanup() {
	if r.o.KeepContainers || r.res.Kept {
		r.res.Kept = r.res.SandboxID != ""
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r.res.SandboxID != "" {
		if err := r.rt.Remove(ctx, r.res.SandboxID); err != nil {
			r.o.Log.Error("remove sandbox", "sandbox", r.res.Sandbox, "err", err)
		}
		return
	}
	// Create failed or was interrupted: the engine may still have made it.
	boxes, err := r.rt.List(ctx, map[string]string{LabelRun: r.res.ID})
	if err != nil {
		r.o.Log.Debug("list sandboxes", "err", err)
		return
	}
	for _, b := range boxes {
		_ = r.rt.Remove(ctx, b.ID)
	}
}

var errNoFinish = errors.New("the harness ended without finishing the run")
