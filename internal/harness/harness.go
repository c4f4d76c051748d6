package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/outdir"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// Harness runs one episode: the student, then the grader.
type Harness struct {
	Config *Config
	Events *transcript.Writer
	Log    *slog.Logger
	// OutDir and OutArchive default to the sandbox paths; tests move them.
	OutDir     string
	OutArchive string
	// Stream, when set, serves the events over the websocket; Events
	// then writes to it.
	Stream *Stream
	// Ports are the harness's own ports, which the student may not reach.
	Ports []uint16
	// EventsAddr moves the events listener from EventsPort on every
	// address (tests: "127.0.0.1:0").
	EventsAddr string
	// Places moves what the student's box puts in the sandbox; tests set
	// it so that nothing of the host's is mounted over.
	Places Places
}

// Places are the paths and names the student's box uses.
type Places struct {
	// Give are the directories moved onto the student's disk: /out, the
	// workdir, /tmp and /var/tmp in a sandbox.
	Give []string
	// DiskImage and DiskMount: DiskImage and DiskMount in a sandbox.
	DiskImage, DiskMount string
	// Cgroup names the student's cgroup: confine.StudentCgroup.
	Cgroup string
	// Table names the firewall's nftables table; NoFirewall leaves it
	// out (tests of the other limits on a host).
	Table      string
	NoFirewall bool
}

// Run runs the episode and returns the run's status. ctx ending (SIGTERM
// from the host) stops the student at once, skips the grader, and still
// packs /out.
func (h *Harness) Run(ctx context.Context) string {
	if h.OutDir == "" {
		h.OutDir = OutDir
	}
	if h.OutArchive == "" {
		h.OutArchive = OutArchive
	}
	c := h.Config
	uid := c.studentUID()
	h.emit(transcript.Event{Type: transcript.Note, Message: fmt.Sprintf("harness started; the student runs as uid %d", uid)})

	status := transcript.StatusOK
	var reasons []string
	if err := h.prepare(uid); err != nil {
		h.emit(transcript.Event{Type: transcript.RunFinished, Status: transcript.StatusError, Message: err.Error()})
		return transcript.StatusError
	}

	ln, err := h.listenEvents()
	if err != nil {
		h.emit(transcript.Event{Type: transcript.RunFinished, Status: transcript.StatusError, Message: err.Error()})
		return transcript.StatusError
	}
	if h.Stream == nil {
		defer ln.Close()
	} // else it outlives Run, for the host to drain the stream; the process's end closes it
	model, err := h.startModel(ctx)
	if err != nil {
		h.emit(transcript.Event{Type: transcript.RunFinished, Status: transcript.StatusError, Message: err.Error()})
		return transcript.StatusError
	}
	box, err := h.buildBox(uid)
	if err != nil {
		h.Log.Error("confine the student", "err", err)
		h.emit(transcript.Event{Type: transcript.Note, Message: "the student cannot be confined: " + err.Error()})
		if perr := h.packOut(); perr != nil {
			h.Log.Error("pack /out", "err", perr)
		}
		h.emit(transcript.Event{Type: transcript.RunFinished, Status: transcript.StatusError, Message: "the student cannot be confined: " + err.Error()})
		return transcript.StatusError
	}
	defer func() {
		start := time.Now()
		if err := box.Teardown(); err != nil {
			h.Log.Warn("undo the student's box", "err", err)
		}
		h.Log.Info("undid the student's box", "took", time.Since(start).Round(time.Millisecond), "setup", box.Setup.Round(time.Millisecond))
	}()
	h.emit(transcript.Event{Type: transcript.Confinement, Confinement: &transcript.ConfinementInfo{
		UID: uid, MemoryBytes: c.Limits.MemoryBytes, Processes: c.Limits.Processes, DiskBytes: c.Limits.DiskBytes,
		Network: c.Network, Enforcement: map[string]string{
			"memory": box.Enforced.Memory, "processes": box.Enforced.Processes,
			"disk": box.Enforced.Disk, "network": box.Enforced.Network,
		},
		Why: box.Enforced.Why, SetupMS: box.Setup.Milliseconds(),
	}})
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		box.Watch(watchCtx, func(hit confine.LimitHit) {
			h.emit(transcript.Event{Type: transcript.LimitHit, Message: hit.Detail,
				Limit: &transcript.LimitInfo{Name: hit.Name, Enforcement: hit.Enforcement, Action: hit.Action}})
		})
	}()
	res := h.runProcess(ctx, "student", c.Student, box)
	stopWatch()
	<-watched
	model.close()
	for _, hit := range box.Hits() {
		if hit.Action == "killed" {
			status = transcript.StatusFailed
			reasons = append(reasons, "student: killed: "+hit.Detail)
		}
	}
	switch {
	case ctx.Err() != nil:
		status = transcript.StatusInterrupted
		reasons = append(reasons, "interrupted")
	case res.err != nil:
		status = transcript.StatusFailed
		reasons = append(reasons, "student: "+res.err.Error())
	case res.timedOut:
		status = transcript.StatusFailed
		reasons = append(reasons, fmt.Sprintf("student: timed out after %s", time.Duration(c.Student.Timeout)))
	case res.code != 0 && len(reasons) == 0:
		status = transcript.StatusFailed
		reasons = append(reasons, "student: "+res.describe())
	}

	if c.Grader != nil && ctx.Err() == nil {
		h.clearReward()
		g := h.runProcess(ctx, "grader", *c.Grader, nil)
		switch {
		case ctx.Err() != nil:
			status = transcript.StatusInterrupted
			reasons = append(reasons, "interrupted")
		case g.err != nil || g.timedOut || g.code != 0:
			status = transcript.StatusFailed
			msg := g.describe()
			if g.err != nil {
				msg = g.err.Error()
			} else if g.timedOut {
				msg = fmt.Sprintf("timed out after %s", time.Duration(c.Grader.Timeout))
			}
			reasons = append(reasons, "grader: "+msg)
		default:
			h.readReward()
		}
	}

	if err := h.packOut(); err != nil {
		h.Log.Error("pack /out", "err", err)
		h.emit(transcript.Event{Type: transcript.Note, Message: "could not pack /out: " + err.Error()})
	}
	msg := "the student and the grader succeeded"
	if c.Grader == nil {
		msg = "the student succeeded"
	}
	if len(reasons) > 0 {
		msg = strings.Join(reasons, "; ")
	}
	h.emit(transcript.Event{Type: transcript.RunFinished, Status: status, Message: msg})
	return status
}

// buildBox confines the student: see package confine.
func (h *Harness) buildBox(uid int) (*confine.Box, error) {
	c, pl := h.Config, h.Places
	if c.Unconfined {
		return confine.Bare(uid), nil
	}
	if pl.Give == nil {
		pl.Give = []string{h.OutDir, "/tmp", "/var/tmp"}
		if c.Student.Workdir != "" {
			pl.Give = append(pl.Give, c.Student.Workdir)
		}
	}
	if pl.DiskImage == "" {
		pl.DiskImage, pl.DiskMount = DiskImage, DiskMount
	}
	if pl.Cgroup == "" {
		pl.Cgroup = confine.StudentCgroup
	}
	if pl.Table == "" {
		pl.Table = "chalk_student"
	}
	o := confine.Options{
		UID: uid, Limits: c.Limits, CgroupName: pl.Cgroup,
		DiskImage: pl.DiskImage, DiskMount: pl.DiskMount, Give: pl.Give,
		Table: pl.Table, Log: h.Log,
	}
	if o.Limits.Processes == 0 {
		o.Limits.Processes = confine.DefaultProcesses
	}
	if !pl.NoFirewall {
		o.Network = c.Network
		if o.Network == "" {
			o.Network = confine.NetworkProxy
		}
		for _, a := range c.Allow {
			ap, err := netip.ParseAddrPort(a)
			if err != nil {
				return nil, err
			}
			o.Allow = append(o.Allow, ap)
		}
		o.BlockPorts = h.Ports
	}
	return confine.Build(o)
}

// Self is the chalk binary, through which the harness starts the student
// and `chalk check confinement` its probes: the running executable while
// it is still at its path, else Binary, where the host mounts chalk in
// every sandbox. Anywhere else the error says it cannot be found, before
// anything is started through it.
func Self() (string, error) {
	p, err := os.Executable()
	if err == nil {
		if _, err = exec.LookPath(p); err == nil {
			return p, nil
		}
	}
	if _, berr := exec.LookPath(Binary); berr == nil {
		return Binary, nil
	}
	return "", fmt.Errorf("find the chalk binary (it is not at %s either): %w", Binary, err)
}

func (h *Harness) emit(e transcript.Event) {
	if err := h.Events.Emit(e); err != nil {
		h.Log.Error("write event", "type", e.Type, "err", err)
	}
}

// prepare makes /out and the student's workdir, owned by the student.
func (h *Harness) prepare(uid int) error {
	if err := os.MkdirAll(h.OutDir, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", h.OutDir, err)
	}
	if err := os.Lchown(h.OutDir, uid, uid); err != nil {
		return fmt.Errorf("give %s to the student: %w", h.OutDir, err)
	}
	wd := h.Config.Student.Workdir
	if wd == "" {
		return nil
	}
	if _, err := os.Lstat(wd); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(wd, 0o755); err != nil {
			return fmt.Errorf("make the student's workdir %s: %w", wd, err)
		}
		if err := os.Lchown(wd, uid, uid); err != nil {
			return fmt.Errorf("give %s to the student: %w", wd, err)
		}
	}
	return nil
}

// clearReward removes whatever the student left at /out/reward before the
// grader runs, so that the reward read afterwards is the grader's: else a
// number the student wrote would stand whenever the grader writes none,
// and a symlink, hard link or fifo it planted would take the root
// grader's write elsewhere, or block it.
func (h *Harness) clearReward() {
	p := filepath.Join(h.OutDir, filepath.Base(RewardFile))
	if _, err := os.Lstat(p); err != nil {
		return
	}
	if err := os.RemoveAll(p); err != nil { // never follows a symlink
		h.emit(transcript.Event{Type: transcript.Note, Message: "could not remove the " + RewardFile + " the student left: " + err.Error()})
		return
	}
	h.emit(transcript.Event{Type: transcript.Note, Message: "removed the " + RewardFile + " the student left, before the grader ran"})
}

// readReward reads the number the grader wrote to /out/reward. The file is
// in the student's /out, so it is opened without following links and
// read no further than a number's length.
func (h *Harness) readReward() {
	p := filepath.Join(h.OutDir, filepath.Base(RewardFile))
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		h.emit(transcript.Event{Type: transcript.Note, Message: "the grader wrote no reward to " + RewardFile})
		return
	}
	if err != nil {
		h.emit(transcript.Event{Type: transcript.Note, Message: "cannot read the reward: " + err.Error()})
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		h.emit(transcript.Event{Type: transcript.Note, Message: RewardFile + " is not a regular file; no reward recorded"})
		return
	}
	b, _ := io.ReadAll(io.LimitReader(f, 64))
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		// NaN and ±Inf parse, but JSON cannot carry them: the reward
		// event would be lost without a word.
		h.emit(transcript.Event{Type: transcript.Note, Message: fmt.Sprintf("%s holds %q, not a number; no reward recorded", RewardFile, strings.TrimSpace(string(b)))})
		return
	}
	h.emit(transcript.Event{Type: transcript.Reward, Reward: transcript.Float(v)})
}

// packOut writes /out, regular files and directories only, to the
// archive the host collects.
func (h *Harness) packOut() error {
	tmp := h.OutArchive + ".part"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	sum, err := outdir.Pack(h.OutDir, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, h.OutArchive); err != nil {
		return err
	}
	h.emit(transcript.Event{Type: transcript.OutCopied, Files: sum.Files, Bytes: sum.Bytes, Skipped: sum.Skipped})
	return nil
}
