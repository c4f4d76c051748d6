package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/chalk-rl/chalk/internal/runtime"
)

// What Collect did with a sandbox.
const (
	Removed     = "removed"
	WouldRemove = "would remove"
	Left        = "left alone"
	NotRemoved  = "not removed"
)

// Leftover is a sandbox Collect looked at: one that carries an owner
// label.
type Leftover struct {
	Runtime     string `json:"runtime"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	Run         string `json:"run,omitempty"`
	Environment string `json:"environment,omitempty"`
	Owner       string `json:"owner"`
	Action      string `json:"action"`
	Why         string `json:"why"`
}

// GCOptions configure Collect.
type GCOptions struct {
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// Host is this machine's name; empty means os.Hostname.
	Host string
	Log  *slog.Logger
}

// Collect removes the sandboxes on rt whose chalk died: those whose owner
// label names this host and a process that is no longer running (or
// whose pid now belongs to another process). It leaves alone sandboxes
// without an owner label, those of other hosts, those whose owner lives
// or cannot be shown dead, and those kept on purpose. It returns every
// sandbox with an owner label and what it did with it; the error joins
// the failures, listing and removing.
func Collect(ctx context.Context, rt runtime.Runtime, o GCOptions) ([]Leftover, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("host name: %w", err)
		}
		o.Host = h
	}
	boxes, err := rt.List(ctx, map[string]string{LabelOwner: ""})
	if err != nil {
		return nil, fmt.Errorf("%s: list sandboxes: %w", rt.Name(), err)
	}
	var out []Leftover
	var errs []error
	for _, b := range boxes {
		l := Leftover{Runtime: rt.Name(), ID: b.ID, Name: b.Name, Run: b.Labels[LabelRun],
			Environment: b.Labels[LabelEnv], Owner: b.Labels[LabelOwner], Action: Left}
		var dead bool
		dead, l.Why = judge(b, o.Host, lookupProc)
		switch {
		case !dead:
		case o.DryRun:
			l.Action = WouldRemove
		default:
			if err := rt.Remove(ctx, b.ID); err != nil {
				l.Action = NotRemoved
				errs = append(errs, fmt.Errorf("%s: remove sandbox %s: %w", rt.Name(), b.Name, err))
			} else {
				l.Action = Removed
				o.Log.Debug("removed a sandbox whose chalk died", "runtime", rt.Name(), "sandbox", b.Name, "run", l.Run, "owner", l.Owner, "why", l.Why)
			}
		}
		out = append(out, l)
	}
	return out, errors.Join(errs...)
}

// judge decides whether sandbox b was left by a dead chalk, and says why
// or why not.
func judge(b runtime.SandboxInfo, host string, lookup func(pid int) proc) (dead bool, why string) {
	if b.Labels[LabelKeep] == "true" {
		return false, "kept on purpose (--keep-containers or --prepare-only)"
	}
	owner, err := ParseOwner(b.Labels[LabelOwner])
	if err != nil {
		return false, err.Error()
	}
	dead, why = ownerDead(owner, host, lookup(owner.PID))
	if dead && owner.Start == 0 && !b.Running {
		// An older chalk wrote no keep label either: a stopped sandbox
		// may have been kept on purpose.
		return false, fmt.Sprintf("its chalk (pid %d) is gone, but the label, from an older chalk, cannot tell a sandbox kept with --keep-containers from one left behind; remove it with the engine's rm if it is not needed", owner.PID)
	}
	return dead, why
}

// SweepDue says whether the automatic clean-up is due: whether stamp is
// missing or older than every. When it is, it touches stamp (making its
// directory), so that the next chalk waits again; a stamp it cannot
// write still lets this sweep happen.
func SweepDue(stamp string, every time.Duration, now time.Time) bool {
	if fi, err := os.Stat(stamp); err == nil && now.Sub(fi.ModTime()) < every && !fi.ModTime().After(now) {
		return false
	}
	if err := os.MkdirAll(filepath.Dir(stamp), 0o755); err == nil {
		if f, err := os.Create(stamp); err == nil {
			f.Close()
			_ = os.Chtimes(stamp, now, now)
		}
	}
	return true
}
