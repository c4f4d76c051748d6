package run

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chalk-rl/chalk/internal/harness"
	"github.com/chalk-rl/chalk/internal/outdir"
	"github.com/chalk-rl/chalk/internal/runtime/engine"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// start runs the sandbox to its end, turning the harness's stdout into
// transcript events. When ctx ends (Ctrl-C) or the run overstays its
// timeouts, the harness gets SIGTERM and Grace to wrap up, then the
// client is cut off.
func (r *runner) start(ctx context.Context) {
	startCtx, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	var interrupted, overtime atomic.Bool
	stopped := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		limit := time.NewTimer(r.deadline())
		defer limit.Stop()
		select {
		case <-stopped:
			return
		case <-ctx.Done():
			interrupted.Store(true)
		case <-limit.C:
			overtime.Store(true)
		}
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := r.rt.Signal(sctx, r.res.SandboxID, "TERM"); err != nil {
			r.o.Log.Debug("signal sandbox", "err", err)
		}
		cancel()
		select {
		case <-stopped:
		case <-time.After(r.o.Grace):
			cut()
		}
	}()

	// The harness's own stdout and stderr, both to harness.log.
	var harnessLog io.Writer = io.Discard
	if f, err := os.Create(filepath.Join(r.res.Dir, "harness.log")); err == nil {
		defer f.Close()
		harnessLog = f
	}
	f := &follower{r: r}
	fctx, stopFollowing := context.WithCancel(startCtx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		f.stream(fctx)
	}()
	r.exitCode, r.startErr = r.rt.Start(startCtx, r.res.SandboxID, harnessLog, harnessLog)
	stopFollowing()
	<-followed
	if r.finished == nil { // the stream did not deliver everything
		f.fromLog()
	}
	close(stopped)
	<-watched
	if interrupted.Load() {
		r.res.Status = transcript.StatusInterrupted
	}
	if overtime.Load() {
		r.emit(transcript.Event{Type: transcript.Note, Message: fmt.Sprintf("the run went past its timeouts (%s in all) and was stopped", r.deadline())})
	}
}

// deadline bounds the whole run: the student's and the grader's timeouts
// and a margin for the sandbox itself.
func (r *runner) deadline() time.Duration {
	d := r.o.Env.Student.Timeout + 2*time.Minute
	if g := r.o.Env.Grader; g != nil {
		d += g.Timeout
	}
	return d
}

// collectOut brings /out to the host: the archive the harness packed, or,
// when the harness did not get that far, straight from the stopped
// sandbox. Either way only regular files and directories arrive.
func (r *runner) collectOut(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if err := os.MkdirAll(r.res.Out, 0o755); err != nil {
		r.emit(transcript.Event{Type: transcript.Note, Message: "cannot make " + r.res.Out + ": " + err.Error()})
		return
	}
	if f, err := os.Open(filepath.Join(r.private, filepath.Base(harness.OutArchive))); err == nil {
		defer f.Close()
		if _, err := outdir.Unpack(f, r.res.Out, ""); err != nil {
			r.emit(transcript.Event{Type: transcript.Note, Message: "unpack /out: " + err.Error()})
		}
		return
	}
	rc, err := r.rt.CopyFrom(ctx, r.res.SandboxID, harness.OutDir)
	if err != nil {
		r.emit(transcript.Event{Type: transcript.Note, Message: "copy /out from the sandbox: " + err.Error()})
		return
	}
	sum, err := outdir.Unpack(rc, r.res.Out, path.Base(harness.OutDir))
	if cerr := rc.Close(); err == nil && cerr != nil && !strings.Contains(cerr.Error(), "Could not find") {
		err = cerr
	}
	if err != nil {
		r.emit(transcript.Event{Type: transcript.Note, Message: "copy /out from the sandbox: " + err.Error()})
	}
	r.emit(transcript.Event{Type: transcript.OutCopied, Files: sum.Files, Bytes: sum.Bytes, Skipped: sum.Skipped,
		Message: "copied from the stopped sandbox: the harness did not pack /out"})
}

// finish writes run.finished, always the last event.
func (r *runner) finish(ctx context.Context) {
	e := transcript.Event{Type: transcript.RunFinished}
	switch {
	case r.finished != nil:
		e = *r.finished
		e.Seq, e.Time = 0, time.Time{}
	case errors.Is(r.startErr, engine.ErrOOMKilled):
		e.Status, e.Message = transcript.StatusError, r.startErr.Error()
	case r.startErr != nil && r.res.Status != transcript.StatusInterrupted:
		e.Status, e.Message = transcript.StatusError, "sandbox: "+r.startErr.Error()
	default:
		e.Status = transcript.StatusError
		e.Message = fmt.Sprintf("%s (the sandbox exited with status %d; see %s)", errNoFinish, r.exitCode, filepath.Join(r.res.Dir, "harness.log"))
	}
	if r.res.Status == transcript.StatusInterrupted {
		e.Status = transcript.StatusInterrupted
		if e.Message == "" || r.finished == nil {
			e.Message = "interrupted"
		}
	}
	r.res.Status, r.res.Message = e.Status, e.Message
	// The whole run's wall time, from run.started, as the host saw it.
	e.DurationMS = time.Since(r.began).Milliseconds()
	r.emit(e)
}

// copyFiles puts the environment's [[files]] into the sandbox.
func (r *runner) copyFiles(ctx context.Context) error {
	if len(r.o.Env.Files) == 0 {
		return nil
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := func() error {
			for _, f := range r.o.Env.Files {
				if err := addTree(tw, f.Source, strings.TrimPrefix(path.Clean(f.Target), "/")); err != nil {
					return err
				}
			}
			return tw.Close()
		}()
		pw.CloseWithError(err)
	}()
	if err := r.rt.CopyTo(ctx, r.res.SandboxID, "/", pr); err != nil {
		pr.CloseWithError(err)
		return fmt.Errorf("copy files into the sandbox: %w", err)
	}
	return nil
}

// addTree writes src (a file or a directory) to tw under name, with its
// parent directories first.
func addTree(tw *tar.Writer, src, name string) error {
	dirs := strings.Split(path.Dir(name), "/")
	for i := range dirs {
		if dirs[i] == "." {
			break
		}
		d := strings.Join(dirs[:i+1], "/")
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		n := path.Join(name, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: n + "/", Mode: int64(info.Mode().Perm())})
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: int64(info.Mode().Perm()), Size: info.Size(), ModTime: info.ModTime()}); err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			return err
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: n, Linkname: target})
		}
		return nil
	})
}
