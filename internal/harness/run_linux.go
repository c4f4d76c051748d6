package harness

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/transcript"
)

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
