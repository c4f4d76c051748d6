// Package runtimetest is the conformance suite every runtime passes: the
// same cases, run against the real engine where the machine has it and
// against a faithful fake of the engine's client where it cannot exist.
package runtimetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/runtime"
)

// Config says how to exercise a runtime.
type Config struct {
	// BaseImage is an image the engine already has, with /bin/sh.
	BaseImage string
	// MemoryLimitFile is where a sandbox reads its own memory limit
	// (cgroup v1 or v2); empty skips that read-back.
	MemoryLimitFile string
}

// Run runs every conformance case against rt.
func Run(t *testing.T, rt runtime.Runtime, c Config) {
	s := &suite{rt: rt, c: c, label: "dev.chalk.conformance", run: randomID()}
	t.Cleanup(s.removeAll)
	t.Run("Preflight", s.preflight)
	t.Run("Build", s.build)
	t.Run("MissingImage", s.missingImage)
	t.Run("ExitCodeAndStreams", s.exitCodeAndStreams)
	t.Run("Mounts", s.mounts)
	t.Run("CopyToAndFrom", s.copyToAndFrom)
	t.Run("ListAndRemove", s.listAndRemove)
	t.Run("Signal", s.signal)
	t.Run("Resources", s.resources)
	t.Run("CancelLeavesSandbox", s.cancelLeavesSandbox)
}

type suite struct {
	rt    runtime.Runtime
	c     Config
	label string
	run   string
	image string // built by the Build case
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// create makes a sandbox from the base image running sh -c script.
func (s *suite) create(t *testing.T, script string, edit ...func(*runtime.SandboxSpec)) string {
	t.Helper()
	spec := runtime.SandboxSpec{
		Name:       "chalk-conformance-" + randomID(),
		Image:      s.c.BaseImage,
		Labels:     map[string]string{s.label: s.run},
		Entrypoint: []string{"/bin/sh", "-c", script},
	}
	for _, f := range edit {
		f(&spec)
	}
	id, err := s.rt.Create(ctxFor(t), spec)
	require.NoError(t, err)
	require.NotEmpty(t, id)
	t.Cleanup(func() { _ = s.rt.Remove(context.Background(), id) })
	return id
}

func (s *suite) start(t *testing.T, id string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code, err := s.rt.Start(ctxFor(t), id, &stdout, &stderr)
	require.NoError(t, err, "stderr: %s", stderr.String())
	return code, stdout.String(), stderr.String()
}

func (s *suite) removeAll() {
	ctx := context.Background()
	boxes, _ := s.rt.List(ctx, map[string]string{s.label: s.run})
	for _, b := range boxes {
		_ = s.rt.Remove(ctx, b.ID)
	}
}

func (s *suite) preflight(t *testing.T) {
	checks := s.rt.Preflight(ctxFor(t))
	require.NotEmpty(t, checks, "a runtime reports at least one check")
	for _, c := range checks {
		require.Equal(t, s.rt.Name(), c.Runtime)
		require.NotEqual(t, runtime.Fail, c.Status, "%s: %s (fix: %s)", c.Name, c.Detail, c.Fix)
	}
}

func (s *suite) build(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("Containerfile", "FROM "+s.c.BaseImage+"\nCOPY . /ctx/\nRUN echo built > /built\n")
	write("kept.txt", "kept")
	write("secret.txt", "must not reach the image")
	write(".dockerignore", "secret.txt\n")
	tag := "chalk-conformance:" + s.run
	var log bytes.Buffer
	err := s.rt.Build(ctxFor(t), runtime.BuildRequest{
		Dir: dir, Containerfile: filepath.Join(dir, "Containerfile"), Tag: tag,
		Labels: map[string]string{s.label: s.run}, Output: &log,
	})
	require.NoError(t, err, "build log:\n%s", log.String())
	require.NotEmpty(t, log.String(), "the build log streams to Output")
	info, err := s.rt.Image(ctxFor(t), tag)
	require.NoError(t, err)
	require.NotNil(t, info, "the built image exists")
	require.NotEmpty(t, info.Architecture)
	s.image = tag
	t.Cleanup(func() { removeImage(s.rt, tag) })

	id := s.create(t, "cat /built /ctx/kept.txt; test ! -e /ctx/secret.txt", func(sp *runtime.SandboxSpec) { sp.Image = tag })
	code, out, stderr := s.start(t, id)
	require.Equal(t, 0, code, "stdout %q stderr %q", out, stderr)
	require.Equal(t, "built\nkept", out)

	broken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(broken, "Containerfile"), []byte("FROM "+s.c.BaseImage+"\nRUN exit 3\n"), 0o644))
	err = s.rt.Build(ctxFor(t), runtime.BuildRequest{Dir: broken, Containerfile: filepath.Join(broken, "Containerfile"), Tag: "chalk-conformance:broken-" + s.run, Output: io.Discard})
	require.Error(t, err, "a failing RUN fails the build")
}

// removeImage deletes a test image through the engine's own client when the
// runtime is one of the CLI engines.
func removeImage(rt runtime.Runtime, tag string) {
	type remover interface {
		RemoveImage(ctx context.Context, ref string) error
	}
	if r, ok := rt.(remover); ok {
		_ = r.RemoveImage(context.Background(), tag)
	}
}

func (s *suite) missingImage(t *testing.T) {
	info, err := s.rt.Image(ctxFor(t), "chalk-conformance-missing:"+s.run)
	require.NoError(t, err)
	require.Nil(t, info)
}

func (s *suite) exitCodeAndStreams(t *testing.T) {
	id := s.create(t, "echo to-stdout; echo to-stderr >&2; exit 7")
	code, out, stderr := s.start(t, id)
	require.Equal(t, 7, code)
	require.Equal(t, "to-stdout\n", out)
	require.Contains(t, stderr, "to-stderr")
}

func (s *suite) mounts(t *testing.T) {
	ro, rw := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ro, "in.txt"), []byte("from host"), 0o644))
	id := s.create(t, "cat /ro/in.txt; if echo x > /ro/new 2>/dev/null; then echo ro-writable; fi; echo from sandbox > /rw/out.txt",
		func(sp *runtime.SandboxSpec) {
			sp.Mounts = []runtime.Mount{{Source: ro, Target: "/ro", ReadOnly: true}, {Source: rw, Target: "/rw"}}
		})
	code, out, _ := s.start(t, id)
	require.Equal(t, 0, code)
	require.Equal(t, "from host", out, "the read-only mount is readable and not writable")
	b, err := os.ReadFile(filepath.Join(rw, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "from sandbox\n", string(b))
	_, err = os.Stat(filepath.Join(ro, "new"))
	require.True(t, errors.Is(err, os.ErrNotExist))
}

func (s *suite) copyToAndFrom(t *testing.T) {
	id := s.create(t, "cat /data/in.txt > /data/out.txt")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "data/", Mode: 0o777}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "data/in.txt", Mode: 0o644, Size: 5}))
	_, _ = tw.Write([]byte("hello"))
	require.NoError(t, tw.Close())
	require.NoError(t, s.rt.CopyTo(ctxFor(t), id, "/", &buf))
	code, _, stderr := s.start(t, id)
	require.Equal(t, 0, code, stderr)

	rc, err := s.rt.CopyFrom(ctxFor(t), id, "/data")
	require.NoError(t, err)
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[h.Name] = string(b)
		}
	}
	require.NoError(t, rc.Close())
	require.Equal(t, map[string]string{"data/in.txt": "hello", "data/out.txt": "hello"}, files)
}

func (s *suite) listAndRemove(t *testing.T) {
	own := randomID()
	id := s.create(t, "true", func(sp *runtime.SandboxSpec) { sp.Labels["dev.chalk.conformance.own"] = own })
	boxes, err := s.rt.List(ctxFor(t), map[string]string{"dev.chalk.conformance.own": own})
	require.NoError(t, err)
	require.Len(t, boxes, 1)
	require.True(t, strings.HasPrefix(boxes[0].ID, id) || strings.HasPrefix(id, boxes[0].ID), "listed %s, created %s", boxes[0].ID, id)
	require.Equal(t, own, boxes[0].Labels["dev.chalk.conformance.own"])
	require.False(t, boxes[0].Running)

	require.NoError(t, s.rt.Remove(ctxFor(t), id))
	boxes, err = s.rt.List(ctxFor(t), map[string]string{"dev.chalk.conformance.own": own})
	require.NoError(t, err)
	require.Empty(t, boxes)
	require.NoError(t, s.rt.Remove(ctxFor(t), id), "removing a sandbox that is gone is not an error")
}

func (s *suite) signal(t *testing.T) {
	id := s.create(t, "trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.1; done")
	type result struct {
		code int
		out  string
		err  error
	}
	done := make(chan result, 1)
	pr, pw := io.Pipe()
	var out bytes.Buffer
	go func() {
		code, err := s.rt.Start(ctxFor(t), id, pw, io.Discard)
		pw.Close()
		done <- result{code: code, err: err}
	}()
	ready := make(chan struct{})
	go func() {
		buf := make([]byte, 64)
		signalled := false
		for {
			n, err := pr.Read(buf)
			out.Write(buf[:n])
			if !signalled && strings.Contains(out.String(), "ready") {
				signalled = true
				close(ready)
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(time.Minute):
		t.Fatal("the sandbox never printed ready")
	}
	require.NoError(t, s.rt.Signal(ctxFor(t), id, "TERM"))
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Equal(t, 0, r.code)
	case <-time.After(time.Minute):
		t.Fatal("the sandbox did not stop on SIGTERM")
	}
	require.Contains(t, out.String(), "got-term")
}

func (s *suite) resources(t *testing.T) {
	const mem = 256 << 20
	script := "nproc >/dev/null"
	if s.c.MemoryLimitFile != "" {
		script = "cat " + s.c.MemoryLimitFile
	}
	id := s.create(t, script, func(sp *runtime.SandboxSpec) { sp.CPUs, sp.MemoryBytes = 1, mem })
	code, out, stderr := s.start(t, id)
	require.Equal(t, 0, code, stderr)
	if s.c.MemoryLimitFile == "" {
		t.Log("no memory limit file for this runtime: the limit is passed but not read back")
		return
	}
	require.Equal(t, "268435456", strings.TrimSpace(out), "the sandbox's memory limit")
}

func (s *suite) cancelLeavesSandbox(t *testing.T) {
	id := s.create(t, "echo started; sleep 60")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.rt.Start(ctx, id, pw, io.Discard)
		pw.Close()
		done <- err
	}()
	buf := make([]byte, 16)
	_, _ = io.ReadAtLeast(pr, buf, len("started"))
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		t.Fatal("Start did not return after its context ended")
	}
	boxes, err := s.rt.List(ctxFor(t), map[string]string{s.label: s.run})
	require.NoError(t, err)
	var running bool
	for _, b := range boxes {
		if strings.HasPrefix(b.ID, id) || strings.HasPrefix(id, b.ID) {
			running = b.Running
		}
	}
	require.True(t, running, "the sandbox keeps running: the caller decides what to do with it")
	require.NoError(t, s.rt.Remove(ctxFor(t), id))
}
