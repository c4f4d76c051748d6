package harness

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

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
