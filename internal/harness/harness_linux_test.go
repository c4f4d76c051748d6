package harness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/outdir"
	"github.com/chalk-rl/chalk/internal/transcript"
	"github.com/stretchr/testify/require"
)

// testUID is the student's uid in these tests: not StudentUID, because the
// harness kills every process of the student's uid, and students of
// sandboxes that other tests run on this host at the same time run as
// StudentUID (there is no user namespace between them and the host).
const testUID = 62017

// These tests run real processes as testUID, and the harness kills
// every process of that uid after the student: they must not run in
// parallel with each other.

// sandbox is a run's directories on the test machine. The student runs as
// testUID, so every parent must be searchable by others.
type sandbox struct {
	base    string // root-owned, 0755
	out     string // the run's /out; the harness makes it
	archive string
	work    string // the student's workdir; the harness makes it
}

func newSandbox(t *testing.T) sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the harness tests run the student as another uid: they need root")
	}
	base, err := os.MkdirTemp("", "chalk-harness-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	for d := filepath.Dir(base); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		if fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by other users; set TMPDIR to a directory that is", d)
		}
		if d == "/" {
			break
		}
	}
	return sandbox{
		base:    base,
		out:     filepath.Join(base, "out"),
		archive: filepath.Join(base, "out.tar"),
		work:    filepath.Join(base, "home", "student"),
	}
}

// places keeps the student's box inside the test's directory: its disk
// image is there and only /out is moved onto it, and there is no
// firewall (the host's network is not the tests' to filter; the
// firewall is tested in real sandboxes).
func (sb sandbox) places() Places {
	return Places{
		Give:       []string{sb.out},
		DiskImage:  filepath.Join(sb.base, "disk.img"),
		DiskMount:  filepath.Join(sb.base, "disk"),
		Cgroup:     "chalk_harness_test",
		NoFirewall: true,
	}
}

// TestMain lets the test binary be the student's exec helper, as the
// chalk binary is in a sandbox.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == confine.ExecArgs[0] && os.Args[2] == confine.ExecArgs[1] {
		err := confine.Exec()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	os.Exit(m.Run())
}

// sh is a /bin/sh -c command line.
func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

type runResult struct {
	status  string
	events  []transcript.Event
	elapsed time.Duration
}

// run runs cfg to the end in sb and checks what every transcript must
// satisfy.
func (sb sandbox) run(t *testing.T, ctx context.Context, cfg *Config) runResult {
	t.Helper()
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	if _, ok := cfg.Env["OUT"]; !ok {
		cfg.Env["OUT"] = sb.out
	}
	var buf bytes.Buffer
	h := &Harness{
		Config:     cfg,
		Events:     transcript.NewWriter(&buf),
		Log:        slog.New(slog.DiscardHandler),
		OutDir:     sb.out,
		OutArchive: sb.archive,
		Places:     sb.places(),
		EventsAddr: "127.0.0.1:0",
	}
	start := time.Now()
	status := h.Run(ctx)
	res := runResult{status: status, elapsed: time.Since(start)}

	r := transcript.NewReader(&buf)
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		res.events = append(res.events, e)
	}
	checkTranscript(t, res)
	requireNoStudentProcesses(t)
	return res
}

// checkTranscript checks the invariants of any transcript.
func checkTranscript(t *testing.T, res runResult) {
	t.Helper()
	ev := res.events
	require.NotEmpty(t, ev)
	for i, e := range ev {
		require.Equal(t, transcript.Version, e.V, "event %d", i)
		require.Equal(t, int64(i+1), e.Seq, "events are numbered from 1 without gaps")
		require.False(t, e.Time.IsZero())
	}
	require.Equal(t, transcript.Note, ev[0].Type)
	require.Contains(t, ev[0].Message, "harness started")
	last := ev[len(ev)-1]
	require.Equal(t, transcript.RunFinished, last.Type)
	require.Equal(t, res.status, last.Status)
	require.NotEmpty(t, last.Message)
	require.Len(t, ofType(ev, transcript.RunFinished, ""), 1)

	// Each process: output only between its start and its exit, and one
	// exit per start.
	for _, p := range []string{"student", "grader"} {
		started, exited := -1, -1
		for i, e := range ev {
			if e.Process != p {
				continue
			}
			switch e.Type {
			case transcript.ProcessStarted:
				require.Equal(t, -1, started, "%s started twice", p)
				started = i
			case transcript.ProcessExited:
				require.Equal(t, -1, exited, "%s exited twice", p)
				exited = i
			case transcript.Output:
				require.NotEqual(t, -1, started, "%s output before it started", p)
				require.Equal(t, -1, exited, "%s output after it exited", p)
				require.Contains(t, []string{"stdout", "stderr"}, e.Stream)
			}
		}
		if started != -1 {
			require.Greater(t, exited, started, "%s started but never exited", p)
		}
	}
}

// ofType returns the events of type typ (and process, when set).
func ofType(ev []transcript.Event, typ, process string) []transcript.Event {
	var out []transcript.Event
	for _, e := range ev {
		if e.Type == typ && (process == "" || e.Process == process) {
			out = append(out, e)
		}
	}
	return out
}

// ofProcess returns the events about process.
func ofProcess(ev []transcript.Event, process string) []transcript.Event {
	var out []transcript.Event
	for _, e := range ev {
		if e.Process == process {
			out = append(out, e)
		}
	}
	return out
}

func only(t *testing.T, ev []transcript.Event, typ, process string) transcript.Event {
	t.Helper()
	got := ofType(ev, typ, process)
	require.Len(t, got, 1, "%s %s events", process, typ)
	return got[0]
}

// output is everything process wrote to stream.
func output(ev []transcript.Event, process, stream string) []byte {
	var b []byte
	for _, e := range ofType(ev, transcript.Output, process) {
		if e.Stream == stream {
			b = append(b, e.Data()...)
		}
	}
	return b
}

// shape is the event types in order, with a run of output events shown
// as one, and each process event suffixed with its process.
func shape(ev []transcript.Event) []string {
	var out []string
	for _, e := range ev {
		s := e.Type
		if e.Process != "" {
			s += "(" + e.Process + ")"
		}
		if len(out) > 0 && out[len(out)-1] == s && e.Type == transcript.Output {
			continue
		}
		out = append(out, s)
	}
	return out
}

// notes are the messages of the note events after the first.
func notes(ev []transcript.Event) []string {
	var out []string
	for _, e := range ofType(ev, transcript.Note, "")[1:] {
		out = append(out, e.Message)
	}
	return out
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if st, ok := strings.CutPrefix(s.Text(), "State:"); ok {
			st = strings.TrimSpace(st)
			return !strings.HasPrefix(st, "Z") && !strings.HasPrefix(st, "X")
		}
	}
	return false
}

func requireNoStudentProcesses(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return len(confine.PidsOf(testUID)) == 0 },
		5*time.Second, 20*time.Millisecond, "the student left processes behind: %v", confine.PidsOf(testUID))
}

// unpacked extracts the run's archive and returns its files' contents.
func unpacked(t *testing.T, sb sandbox) map[string]string {
	t.Helper()
	f, err := os.Open(sb.archive)
	require.NoError(t, err, "the archive was not written")
	defer f.Close()
	dest := filepath.Join(t.TempDir(), "out")
	_, err = outdir.Unpack(f, dest, "")
	require.NoError(t, err)
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			r, err := filepath.Rel(dest, p)
			require.NoError(t, err)
			files[filepath.ToSlash(r)] = string(b)
		}
		return nil
	}))
	return files
}

func TestRunSuccess(t *testing.T) {
	sb := newSandbox(t)
	student := sh(`echo hello; echo "a file" > "$OUT/student.txt"`)
	grader := sh(`printf 0.75 > "$OUT/reward"`)
	cfg := &Config{
		RunID:   "run-1",
		UID:     testUID,
		Student: Process{Command: student, Workdir: sb.work, Timeout: Duration(time.Minute)},
		Grader:  &Process{Command: grader, Timeout: Duration(time.Minute)},
	}
	res := sb.run(t, context.Background(), cfg)

	require.Equal(t, transcript.StatusOK, res.status)
	require.Equal(t, []string{
		"note",
		"confinement",
		"process.started(student)",
		"output(student)",
		"process.exited(student)",
		"process.started(grader)",
		"process.exited(grader)",
		"reward",
		"out.copied",
		"run.finished",
	}, shape(res.events))
	ev := res.events
	require.Contains(t, ev[0].Message, "uid 62017")

	s := only(t, ev, transcript.ProcessStarted, "student")
	require.Equal(t, student, s.Command)
	require.NotNil(t, s.UID)
	require.Equal(t, testUID, *s.UID)
	require.Equal(t, "hello\n", string(output(ev, "student", "stdout")))
	require.Empty(t, output(ev, "student", "stderr"))
	se := only(t, ev, transcript.ProcessExited, "student")
	require.NotNil(t, se.ExitCode)
	require.Equal(t, 0, *se.ExitCode)
	require.False(t, se.TimedOut)
	require.Empty(t, se.Signal)

	g := only(t, ev, transcript.ProcessStarted, "grader")
	require.Equal(t, grader, g.Command)
	require.Nil(t, g.UID, "the grader runs as the harness's own uid")
	ge := only(t, ev, transcript.ProcessExited, "grader")
	require.NotNil(t, ge.ExitCode)
	require.Equal(t, 0, *ge.ExitCode)

	r := only(t, ev, transcript.Reward, "")
	require.NotNil(t, r.Reward)
	require.Equal(t, 0.75, *r.Reward)

	c := only(t, ev, transcript.OutCopied, "")
	require.Equal(t, 2, c.Files)
	require.Equal(t, int64(len("a file\n")+len("0.75")), c.Bytes)
	require.Empty(t, c.Skipped)

	fin := ev[len(ev)-1]
	require.Equal(t, "the student and the grader succeeded", fin.Message)

	require.Equal(t, map[string]string{"student.txt": "a file\n", "reward": "0.75"}, unpacked(t, sb))
	_, err := os.Stat(sb.archive + ".part")
	require.ErrorIs(t, err, os.ErrNotExist, "the partial archive was left behind")

	// /out and the workdir were made for the student.
	for _, d := range []string{sb.out, sb.work} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		st := fi.Sys().(*syscall.Stat_t)
		require.Equal(t, uint32(testUID), st.Uid, d)
		require.Equal(t, uint32(testUID), st.Gid, d)
	}
}

func TestRunStudentIdentity(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   func(sb sandbox) string
	}{
		{"uid", `id -u`, func(sandbox) string { return "62017\n" }},
		{"gid", `id -g`, func(sandbox) string { return "62017\n" }},
		{"no supplementary groups", `id -G`, func(sandbox) string { return "62017\n" }},
		{"runs in its workdir", `pwd`, func(sb sandbox) string { return sb.work + "\n" }},
		{"writes /out and its workdir", `echo x > "$OUT/x" && echo y > ./y && echo ok`, func(sandbox) string { return "ok\n" }},
		{"own session", `read -r pid comm state ppid pgrp sid rest < /proc/self/stat; [ "$sid" = "$pid" ] && [ "$pgrp" = "$pid" ] && echo leader`, func(sandbox) string { return "leader\n" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			cfg := &Config{UID: testUID, Student: Process{Command: sh(tc.script), Workdir: sb.work}}
			res := sb.run(t, context.Background(), cfg)
			require.Equal(t, transcript.StatusOK, res.status, "stderr: %s", output(res.events, "student", "stderr"))
			require.Equal(t, tc.want(sb), string(output(res.events, "student", "stdout")))
			require.Equal(t, "the student succeeded", res.events[len(res.events)-1].Message)
		})
	}
}

func TestRunStudentCannotReachRootFiles(t *testing.T) {
	const secret = "s3cr3t-t0k3n"
	tests := []struct {
		name   string
		script func(sb sandbox) string
		stderr string
	}{
		{
			name:   "read a root-only file",
			script: func(sb sandbox) string { return `cat "` + filepath.Join(sb.base, "secret") + `"` },
			stderr: "Permission denied",
		},
		{
			name:   "write a root-owned directory",
			script: func(sb sandbox) string { return `echo x > "` + filepath.Join(sb.base, "planted") + `"` },
			stderr: "ermission denied",
		},
		{
			name:   "overwrite the archive",
			script: func(sb sandbox) string { return `echo x > "` + sb.archive + `"` },
			stderr: "ermission denied",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			require.NoError(t, os.WriteFile(filepath.Join(sb.base, "secret"), []byte(secret), 0o600))
			cfg := &Config{UID: testUID, Student: Process{Command: sh(tc.script(sb)), Workdir: sb.work}}
			res := sb.run(t, context.Background(), cfg)
			require.Equal(t, transcript.StatusFailed, res.status)
			se := only(t, res.events, transcript.ProcessExited, "student")
			require.NotNil(t, se.ExitCode)
			require.NotZero(t, *se.ExitCode)
			require.Contains(t, string(output(res.events, "student", "stderr")), tc.stderr)
			for _, e := range res.events {
				require.NotContains(t, string(e.Data()), secret)
			}
			_, err := os.Stat(filepath.Join(sb.base, "planted"))
			require.ErrorIs(t, err, os.ErrNotExist)
		})
	}
}

func TestRunOutcomes(t *testing.T) {
	const (
		okGrader    = `printf 1 > "$OUT/reward"`
		rewardThen1 = `printf 1 > "$OUT/reward"; exit 1`
	)
	tests := []struct {
		name    string
		student Process
		grader  *Process
		status  string
		message string // run.finished says exactly this, or
		prefix  string // starts with this
		check   func(t *testing.T, res runResult)
	}{
		{
			name:    "student fails, grader still runs",
			student: Process{Command: sh(`echo trying; exit 3`)},
			grader:  &Process{Command: sh(okGrader)},
			status:  transcript.StatusFailed,
			message: "student: exited with status 3",
			check: func(t *testing.T, res runResult) {
				se := only(t, res.events, transcript.ProcessExited, "student")
				require.Equal(t, 3, *se.ExitCode)
				only(t, res.events, transcript.ProcessStarted, "grader")
				require.Equal(t, 0, *only(t, res.events, transcript.ProcessExited, "grader").ExitCode)
				require.Equal(t, 1.0, *only(t, res.events, transcript.Reward, "").Reward)
			},
		},
		{
			name:    "grader fails",
			student: Process{Command: sh(`true`)},
			grader:  &Process{Command: sh(rewardThen1)},
			status:  transcript.StatusFailed,
			message: "grader: exited with status 1",
			check: func(t *testing.T, res runResult) {
				require.Equal(t, 1, *only(t, res.events, transcript.ProcessExited, "grader").ExitCode)
				require.Empty(t, ofType(res.events, transcript.Reward, ""), "a failed grader's reward is not recorded")
				only(t, res.events, transcript.OutCopied, "")
			},
		},
		{
			name:    "both fail",
			student: Process{Command: sh(`exit 3`)},
			grader:  &Process{Command: sh(`exit 1`)},
			status:  transcript.StatusFailed,
			message: "student: exited with status 3; grader: exited with status 1",
		},
		{
			name:    "student killed by a signal",
			student: Process{Command: sh(`kill -TERM $$; sleep 5`)},
			grader:  &Process{Command: sh(okGrader)},
			status:  transcript.StatusFailed,
			message: "student: killed by signal TERM",
			check: func(t *testing.T, res runResult) {
				se := only(t, res.events, transcript.ProcessExited, "student")
				require.Equal(t, "TERM", se.Signal)
				require.Equal(t, 128+int(syscall.SIGTERM), *se.ExitCode)
				require.False(t, se.TimedOut)
			},
		},
		{
			name:    "student cannot start",
			student: Process{Command: []string{"/nonexistent/student"}},
			grader:  &Process{Command: sh(okGrader)},
			status:  transcript.StatusFailed,
			prefix:  "student: start /nonexistent/student: ",
			check: func(t *testing.T, res runResult) {
				require.Empty(t, ofType(res.events, transcript.ProcessStarted, "student"))
				se := only(t, res.events, transcript.ProcessExited, "student")
				require.Contains(t, se.Message, "/nonexistent/student")
				only(t, res.events, transcript.ProcessStarted, "grader")
			},
		},
		{
			name:    "grader cannot start",
			student: Process{Command: sh(`true`)},
			grader:  &Process{Command: []string{"/nonexistent/grader"}},
			status:  transcript.StatusFailed,
			prefix:  "grader: start /nonexistent/grader: ",
		},
		{
			name:    "no grader",
			student: Process{Command: sh(`echo done`)},
			status:  transcript.StatusOK,
			message: "the student succeeded",
			check: func(t *testing.T, res runResult) {
				require.Empty(t, ofProcess(res.events, "grader"))
				require.Empty(t, ofType(res.events, transcript.Reward, ""))
				require.Empty(t, notes(res.events), "no reward is expected without a grader")
			},
		},
		{
			name:    "student times out",
			student: Process{Command: sh(`sleep 30`), Timeout: Duration(300 * time.Millisecond)},
			grader:  &Process{Command: sh(okGrader)},
			status:  transcript.StatusFailed,
			message: "student: timed out after 300ms",
			check: func(t *testing.T, res runResult) {
				se := only(t, res.events, transcript.ProcessExited, "student")
				require.True(t, se.TimedOut)
				require.Equal(t, "KILL", se.Signal)
				require.Equal(t, 128+int(syscall.SIGKILL), *se.ExitCode)
				require.GreaterOrEqual(t, se.DurationMS, int64(250))
				require.Less(t, res.elapsed, 5*time.Second)
				only(t, res.events, transcript.ProcessStarted, "grader")
			},
		},
		{
			name:    "student times out ignoring SIGTERM",
			student: Process{Command: sh(`trap '' TERM INT HUP; while :; do sleep 1; done`), Timeout: Duration(300 * time.Millisecond)},
			status:  transcript.StatusFailed,
			message: "student: timed out after 300ms",
			check: func(t *testing.T, res runResult) {
				require.True(t, only(t, res.events, transcript.ProcessExited, "student").TimedOut)
				require.Less(t, res.elapsed, 5*time.Second)
			},
		},
		{
			name:    "grader times out",
			student: Process{Command: sh(`true`)},
			grader:  &Process{Command: sh(`sleep 30`), Timeout: Duration(300 * time.Millisecond)},
			status:  transcript.StatusFailed,
			message: "grader: timed out after 300ms",
			check: func(t *testing.T, res runResult) {
				require.True(t, only(t, res.events, transcript.ProcessExited, "grader").TimedOut)
				require.Less(t, res.elapsed, 5*time.Second)
			},
		},
		{
			name:    "no timeout means none",
			student: Process{Command: sh(`sleep 0.5; echo late`)},
			status:  transcript.StatusOK,
			message: "the student succeeded",
			check: func(t *testing.T, res runResult) {
				require.Equal(t, "late\n", string(output(res.events, "student", "stdout")))
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			tc.student.Workdir = sb.work
			cfg := &Config{UID: testUID, Student: tc.student, Grader: tc.grader}
			res := sb.run(t, context.Background(), cfg)
			require.Equal(t, tc.status, res.status)
			msg := res.events[len(res.events)-1].Message
			if tc.prefix != "" {
				require.True(t, strings.HasPrefix(msg, tc.prefix), "run.finished says %q", msg)
			} else {
				require.Equal(t, tc.message, msg)
			}
			only(t, res.events, transcript.OutCopied, "")
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// TestRunLeftoverProcesses: whatever a process leaves running is killed,
// and a child still holding the output pipes does not hang the harness.
func TestRunLeftoverProcesses(t *testing.T) {
	tests := []struct {
		name    string
		student string
		grader  string
	}{
		{"background child holds stdout", `sleep 60 & echo $! > "$OUT/pid"; echo bye`, ""},
		{"background child holds stderr", `sleep 60 >/dev/null & echo $! > "$OUT/pid"; echo bye`, ""},
		// The child writes its own pid once it has left the session, and
		// the student waits for that: it has really escaped the group.
		{"child in its own session", `setsid sh -c 'echo $$ > "$OUT/pid"; exec sleep 60' & until [ -s "$OUT/pid" ]; do sleep 0.05; done; echo bye`, ""},
		{"child ignoring signals", `(trap '' TERM HUP INT; exec sleep 60) & echo $! > "$OUT/pid"; echo bye`, ""},
		{"detached child, pipes closed", `nohup setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $! > "$OUT/pid"; echo bye`, ""},
		{"grader's background child", `echo bye`, `sleep 60 & echo $! > "$OUT/pid"; printf 1 > "$OUT/reward"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			cfg := &Config{UID: testUID, Student: Process{Command: sh(tc.student), Workdir: sb.work, Timeout: Duration(time.Minute)}}
			if tc.grader != "" {
				cfg.Grader = &Process{Command: sh(tc.grader), Timeout: Duration(time.Minute)}
			}
			res := sb.run(t, context.Background(), cfg)
			require.Less(t, res.elapsed, 5*time.Second, "the harness waited for a leftover child")
			require.Equal(t, transcript.StatusOK, res.status, res.events[len(res.events)-1].Message)
			require.Equal(t, "bye\n", string(output(res.events, "student", "stdout")))

			b, err := os.ReadFile(filepath.Join(sb.out, "pid"))
			require.NoError(t, err)
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			require.Eventually(t, func() bool { return !processAlive(pid) }, 5*time.Second, 20*time.Millisecond,
				"the leftover sleep (pid %d) is still running", pid)
		})
	}
}

// TestRunGraderEscapedChild: the grader is trusted, but a child of it that
// left its session and holds the output pipe must not hang the harness.
func TestRunGraderEscapedChild(t *testing.T) {
	sb := newSandbox(t)
	cfg := &Config{
		UID:     testUID,
		Student: Process{Command: sh(`true`), Workdir: sb.work},
		Grader: &Process{Command: sh(`setsid sh -c 'echo $$ > "$OUT/gpid"; exec sleep 60' &
			until [ -s "$OUT/gpid" ]; do sleep 0.05; done
			printf 0.5 > "$OUT/reward"; echo graded`)},
	}
	res := sb.run(t, context.Background(), cfg)
	b, err := os.ReadFile(filepath.Join(sb.out, "gpid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	require.Less(t, res.elapsed, 10*time.Second)
	require.Equal(t, transcript.StatusOK, res.status)
	require.Equal(t, "graded\n", string(output(res.events, "grader", "stdout")))
	require.Equal(t, 0.5, *only(t, res.events, transcript.Reward, "").Reward)
}

func TestRunInterrupted(t *testing.T) {
	tests := []struct {
		name string
		// cancelEarly cancels before Run; otherwise once the student has
		// written its marker.
		cancelEarly bool
	}{
		{"while the student sleeps", false},
		{"before the run", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := &Config{
				UID:     testUID,
				Student: Process{Command: sh(`echo started > "$OUT/marker"; echo started; exec sleep 120`), Workdir: sb.work, Timeout: Duration(5 * time.Minute)},
				Grader:  &Process{Command: sh(`printf 1 > "$OUT/reward"; touch "$OUT/graded"`)},
			}
			if tc.cancelEarly {
				cancel()
			} else {
				stop := make(chan struct{})
				defer close(stop)
				go func() {
					tick := time.NewTicker(10 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							if _, err := os.Stat(filepath.Join(sb.out, "marker")); err == nil {
								cancel()
								return
							}
						}
					}
				}()
			}
			res := sb.run(t, ctx, cfg)
			require.Less(t, res.elapsed, 20*time.Second, "the student's sleep was not stopped")

			require.Equal(t, transcript.StatusInterrupted, res.status)
			require.Equal(t, "interrupted", res.events[len(res.events)-1].Message)
			require.Empty(t, ofProcess(res.events, "grader"), "the grader ran after an interrupt")
			require.Empty(t, ofType(res.events, transcript.Reward, ""))
			if !tc.cancelEarly {
				se := only(t, res.events, transcript.ProcessExited, "student")
				require.Equal(t, "KILL", se.Signal)
				require.False(t, se.TimedOut)
			}
			c := only(t, res.events, transcript.OutCopied, "")
			files := unpacked(t, sb)
			require.Equal(t, len(files), c.Files)
			require.NotContains(t, files, "graded")
			if !tc.cancelEarly {
				require.Equal(t, "started\n", files["marker"])
				require.Equal(t, "started\n", string(output(res.events, "student", "stdout")))
			}
		})
	}
}

func TestRunReward(t *testing.T) {
	tests := []struct {
		name   string
		grader string
		reward *float64 // the reward event, or none
		note   string   // a note containing this, when no reward
		skip   string   // out.copied lists this
	}{
		{name: "plain", grader: `printf 0.75 > "$OUT/reward"`, reward: transcript.Float(0.75)},
		{name: "spaces and newline", grader: `printf ' 1\n' > "$OUT/reward"`, reward: transcript.Float(1)},
		{name: "negative exponent", grader: `printf '%s\n' -2.5e-1 > "$OUT/reward"`, reward: transcript.Float(-0.25)},
		{name: "zero", grader: `echo 0 > "$OUT/reward"`, reward: transcript.Float(0)},
		{name: "not a number", grader: `echo abc > "$OUT/reward"`, note: `holds "abc", not a number`},
		{name: "empty", grader: `: > "$OUT/reward"`, note: `holds "", not a number`},
		{name: "two numbers", grader: `echo 1 2 > "$OUT/reward"`, note: "not a number"},
		{name: "NaN", grader: `echo NaN > "$OUT/reward"`, note: "not a number"},
		{name: "infinity", grader: `echo inf > "$OUT/reward"`, note: "not a number"},
		{name: "negative infinity", grader: `echo -Infinity > "$OUT/reward"`, note: "not a number"},
		{name: "out of range", grader: `echo 1e999 > "$OUT/reward"`, note: "not a number"},
		{name: "missing", grader: `true`, note: "wrote no reward"},
		{
			name:   "symlink to a number",
			grader: `echo 1 > "$OUT/../target"; ln -s "$OUT/../target" "$OUT/reward"`,
			note:   "cannot read the reward",
			skip:   "reward (symlink)",
		},
		{
			name:   "relative symlink inside /out",
			grader: `echo 1 > "$OUT/real"; ln -s real "$OUT/reward"`,
			note:   "cannot read the reward",
			skip:   "reward (symlink)",
		},
		{name: "fifo", grader: `mkfifo "$OUT/reward"`, note: "not a regular file", skip: "reward (fifo)"},
		{name: "directory", grader: `mkdir "$OUT/reward"`, note: "not a regular file"},
		{name: "huge file", grader: `head -c 1000000 /dev/zero | tr '\0' ' ' > "$OUT/reward"`, note: "not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			cfg := &Config{
				UID:     testUID,
				Student: Process{Command: sh(`true`), Workdir: sb.work},
				Grader:  &Process{Command: sh(tc.grader), Timeout: Duration(time.Minute)},
			}
			res := sb.run(t, context.Background(), cfg)
			require.Less(t, res.elapsed, 30*time.Second)
			require.Equal(t, transcript.StatusOK, res.status, "a bad reward does not fail the run")
			rewards := ofType(res.events, transcript.Reward, "")
			if tc.reward != nil {
				require.Len(t, rewards, 1)
				require.Equal(t, *tc.reward, *rewards[0].Reward)
				require.Empty(t, notes(res.events))
			} else {
				require.Empty(t, rewards)
				n := notes(res.events)
				require.Len(t, n, 1, "%q", n)
				require.Contains(t, n[0], tc.note)
				require.Contains(t, n[0], "reward")
			}
			c := only(t, res.events, transcript.OutCopied, "")
			if tc.skip != "" {
				require.Contains(t, c.Skipped, tc.skip)
			}
			// The verdict on the reward comes after the grader, before /out
			// is copied.
			sh := shape(res.events)
			want := transcript.Note
			if tc.reward != nil {
				want = transcript.Reward
			}
			require.Equal(t, []string{"process.exited(grader)", want, transcript.OutCopied, transcript.RunFinished}, sh[len(sh)-4:])
		})
	}
}

// TestRunStudentPlantedReward: /out is the student's, so it may leave a
// reward of its own, or a trap, where the grader writes. The reward must
// be the grader's, and the grader's write must land in /out.
func TestRunStudentPlantedReward(t *testing.T) {
	const removed = "removed the /out/reward the student left"
	tests := []struct {
		name    string
		student string
		grader  string // empty: no grader
		reward  *float64
		notes   []string // substrings, in order
		check   func(t *testing.T, sb sandbox, files map[string]string)
	}{
		{
			name:    "grader writes none",
			student: `echo 1 > "$OUT/reward"`,
			grader:  `true`,
			notes:   []string{removed, "wrote no reward"},
		},
		{
			name:    "grader overwrites it",
			student: `echo 1 > "$OUT/reward"`,
			grader:  `echo 0 > "$OUT/reward"`,
			reward:  transcript.Float(0),
			notes:   []string{removed},
		},
		{
			name:    "symlink to a root file",
			student: `ln -s "$OUT/../victim" "$OUT/reward"`,
			grader:  `echo 1 > "$OUT/reward"`,
			reward:  transcript.Float(1),
			notes:   []string{removed},
			check: func(t *testing.T, sb sandbox, files map[string]string) {
				b, err := os.ReadFile(filepath.Join(sb.base, "victim"))
				require.NoError(t, err)
				require.Equal(t, "original\n", string(b), "the grader wrote through the student's symlink")
				require.Equal(t, "1\n", files["reward"])
			},
		},
		{
			name:    "fifo",
			student: `mkfifo "$OUT/reward"`,
			grader:  `echo 0.5 > "$OUT/reward"`,
			reward:  transcript.Float(0.5),
			notes:   []string{removed},
		},
		{
			name:    "directory",
			student: `mkdir -p "$OUT/reward/x" && echo 1 > "$OUT/reward/x/y"`,
			grader:  `echo 0.25 > "$OUT/reward"`,
			reward:  transcript.Float(0.25),
			notes:   []string{removed},
		},
		{
			name:    "no grader: left alone",
			student: `echo 1 > "$OUT/reward"`,
			check: func(t *testing.T, sb sandbox, files map[string]string) {
				require.Equal(t, "1\n", files["reward"])
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			require.NoError(t, os.WriteFile(filepath.Join(sb.base, "victim"), []byte("original\n"), 0o644))
			cfg := &Config{UID: testUID, Student: Process{Command: sh(tc.student), Workdir: sb.work}}
			if tc.grader != "" {
				cfg.Grader = &Process{Command: sh(tc.grader), Timeout: Duration(20 * time.Second)}
			}
			res := sb.run(t, context.Background(), cfg)
			require.Less(t, res.elapsed, 15*time.Second)
			require.Equal(t, transcript.StatusOK, res.status, res.events[len(res.events)-1].Message)
			rewards := ofType(res.events, transcript.Reward, "")
			if tc.reward == nil {
				require.Empty(t, rewards)
			} else {
				require.Len(t, rewards, 1)
				require.Equal(t, *tc.reward, *rewards[0].Reward)
			}
			n := notes(res.events)
			require.Len(t, n, len(tc.notes), "%q", n)
			for i, want := range tc.notes {
				require.Contains(t, n[i], want)
			}
			for i, e := range res.events {
				if e.Type == transcript.Note && strings.Contains(e.Message, removed) {
					// Removed after the student, before the grader.
					require.Equal(t, transcript.ProcessExited, res.events[i-1].Type)
					require.Equal(t, "student", res.events[i-1].Process)
					require.Equal(t, transcript.ProcessStarted, res.events[i+1].Type)
					require.Equal(t, "grader", res.events[i+1].Process)
				}
			}
			files := unpacked(t, sb)
			if tc.check != nil {
				tc.check(t, sb, files)
			}
			b, err := os.ReadFile(filepath.Join(sb.base, "victim"))
			require.NoError(t, err)
			require.Equal(t, "original\n", string(b))
		})
	}
}

func TestRunOutput(t *testing.T) {
	sb0 := newSandbox(t) // for the blob the student reads
	blob := make([]byte, 200_000)
	_, err := rand.Read(blob)
	require.NoError(t, err)
	blob[0], blob[1] = 0xff, 0xfe // surely not UTF-8
	blobPath := filepath.Join(sb0.base, "blob")
	require.NoError(t, os.WriteFile(blobPath, blob, 0o644))

	text := strings.Repeat("héllo wörld ✓ 日本語\n", 10_000) // multi-byte runes across read boundaries
	textPath := filepath.Join(sb0.base, "text")
	require.NoError(t, os.WriteFile(textPath, []byte(text), 0o644))

	tests := []struct {
		name     string
		script   string
		stdout   []byte
		stderr   []byte
		encoding string // "text", "base64", or "any": a read may split a rune
	}{
		{name: "binary", script: `cat "` + blobPath + `"`, stdout: blob, encoding: "base64"},
		{name: "one invalid byte on stderr", script: `printf 'ok\n'; printf '\377' >&2`, stdout: []byte("ok\n"), stderr: []byte{0xff}, encoding: "any"},
		{name: "nul bytes", script: `printf 'a\000b\n'`, stdout: []byte("a\x00b\n"), encoding: "text"},
		{name: "utf-8 text", script: `cat "` + textPath + `"`, stdout: []byte(text), encoding: "any"},
		{name: "short utf-8 text", script: `printf 'héllo ✓\n'`, stdout: []byte("héllo ✓\n"), encoding: "text"},
		{name: "nothing", script: `true`, encoding: "text"},
		{name: "no trailing newline", script: `printf partial`, stdout: []byte("partial"), encoding: "text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			cfg := &Config{UID: testUID, Student: Process{Command: sh(tc.script), Workdir: sb.work}}
			res := sb.run(t, context.Background(), cfg)
			require.Equal(t, transcript.StatusOK, res.status)
			require.True(t, bytes.Equal(tc.stdout, output(res.events, "student", "stdout")), "stdout differs")
			require.True(t, bytes.Equal(tc.stderr, output(res.events, "student", "stderr")), "stderr differs")
			var sawText, sawBase64 bool
			for _, e := range ofType(res.events, transcript.Output, "student") {
				require.False(t, e.Text != "" && e.DataB64 != "", "an event with both text and data_b64")
				require.False(t, e.Text == "" && e.DataB64 == "", "an empty output event")
				sawText = sawText || e.Text != ""
				sawBase64 = sawBase64 || e.DataB64 != ""
			}
			switch tc.encoding {
			case "text":
				require.False(t, sawBase64, "valid UTF-8 was sent as base64")
			case "base64":
				require.True(t, sawBase64)
			}
			if len(tc.stdout)+len(tc.stderr) > 0 {
				require.True(t, sawText || sawBase64)
			}
		})
	}
}

func TestRunEnvironment(t *testing.T) {
	sb := newSandbox(t)
	t.Setenv("CHALK_TEST_IMAGE_ENV", "from-image")
	cfg := &Config{
		UID: testUID,
		Env: map[string]string{"CHALK_TEST_FORWARDED": "fwd", "CHALK_TEST_BOTH": "config", "CHALK_TEST_SPACES": "a b  c"},
		Student: Process{
			Command: sh(`env; echo "--"; echo "$HOME|$USER"`), Workdir: sb.work,
			Env: map[string]string{"CHALK_TEST_STUDENT": "s", "CHALK_TEST_BOTH": "student"},
		},
		Grader: &Process{
			Command: sh(`env`),
			Env:     map[string]string{"CHALK_TEST_GRADER": "g"},
		},
	}
	res := sb.run(t, context.Background(), cfg)
	require.Equal(t, transcript.StatusOK, res.status)

	parse := func(b []byte) map[string]string {
		env := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if line == "--" {
				break
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			_, dup := env[k]
			require.False(t, dup, "%s is set twice", k)
			env[k] = v
		}
		return env
	}
	studentOut := output(res.events, "student", "stdout")
	s := parse(studentOut)
	require.Equal(t, sb.work, s["HOME"])
	require.Equal(t, "student", s["USER"])
	require.Equal(t, "student", s["LOGNAME"])
	require.Equal(t, "fwd", s["CHALK_TEST_FORWARDED"])
	require.Equal(t, "student", s["CHALK_TEST_BOTH"], "the process's own env wins over the forwarded")
	require.Equal(t, "a b  c", s["CHALK_TEST_SPACES"])
	require.Equal(t, "s", s["CHALK_TEST_STUDENT"])
	require.Equal(t, "from-image", s["CHALK_TEST_IMAGE_ENV"])
	require.NotContains(t, s, "CHALK_TEST_GRADER")
	require.NotEmpty(t, s["PATH"])
	require.True(t, strings.HasSuffix(string(studentOut), "--\n"+sb.work+"|student\n"), "%s", studentOut)

	g := parse(output(res.events, "grader", "stdout"))
	require.Equal(t, "fwd", g["CHALK_TEST_FORWARDED"])
	require.Equal(t, "config", g["CHALK_TEST_BOTH"])
	require.Equal(t, "g", g["CHALK_TEST_GRADER"])
	require.Equal(t, "from-image", g["CHALK_TEST_IMAGE_ENV"])
	require.NotContains(t, g, "CHALK_TEST_STUDENT")
	require.NotEqual(t, "student", g["USER"])
	require.NotEqual(t, sb.work, g["HOME"])
}

func TestRunStudentWithoutWorkdir(t *testing.T) {
	sb := newSandbox(t)
	cfg := &Config{UID: testUID, Student: Process{Command: sh(`pwd; echo "$HOME"`)}}
	res := sb.run(t, context.Background(), cfg)
	require.Equal(t, transcript.StatusOK, res.status)
	require.Equal(t, "/\n/tmp\n", string(output(res.events, "student", "stdout")))
}

func TestRunExistingWorkdirIsLeftAlone(t *testing.T) {
	// A workdir the image already has keeps its owner: the harness gives
	// the student only what it makes.
	sb := newSandbox(t)
	wd := filepath.Join(sb.base, "image-workdir")
	require.NoError(t, os.Mkdir(wd, 0o755))
	cfg := &Config{UID: testUID, Student: Process{Command: sh(`pwd; touch ./x`), Workdir: wd}}
	res := sb.run(t, context.Background(), cfg)
	require.Equal(t, transcript.StatusFailed, res.status)
	require.Equal(t, wd+"\n", string(output(res.events, "student", "stdout")))
	fi, err := os.Stat(wd)
	require.NoError(t, err)
	require.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid)
}

func TestRunPrepareError(t *testing.T) {
	sb := newSandbox(t)
	blocker := filepath.Join(sb.base, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	var buf bytes.Buffer
	h := &Harness{
		Config:     &Config{UID: testUID, Student: Process{Command: sh(`true`)}},
		Events:     transcript.NewWriter(&buf),
		Log:        slog.New(slog.DiscardHandler),
		OutDir:     filepath.Join(blocker, "out"),
		OutArchive: sb.archive,
		Places:     sb.places(),
		EventsAddr: "127.0.0.1:0",
	}
	status := h.Run(context.Background())
	require.Equal(t, transcript.StatusError, status)
	var types []string
	r := transcript.NewReader(&buf)
	var last transcript.Event
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		types = append(types, e.Type)
		last = e
	}
	require.Equal(t, []string{transcript.Note, transcript.RunFinished}, types)
	require.Equal(t, transcript.StatusError, last.Status)
	require.Contains(t, last.Message, blocker)
}

func TestRunOutCopiedListsSkipped(t *testing.T) {
	sb := newSandbox(t)
	student := sh(`mkdir -p "$OUT/d/e" && echo a > "$OUT/d/a" && ln -s /etc/shadow "$OUT/shadow" && mkfifo "$OUT/pipe" && ln -s / "$OUT/d/root"`)
	cfg := &Config{UID: testUID, Student: Process{Command: student, Workdir: sb.work}}
	res := sb.run(t, context.Background(), cfg)
	require.Equal(t, transcript.StatusOK, res.status, string(output(res.events, "student", "stderr")))
	c := only(t, res.events, transcript.OutCopied, "")
	require.Equal(t, 1, c.Files)
	require.Equal(t, int64(2), c.Bytes)
	require.ElementsMatch(t, []string{"shadow (symlink)", "pipe (fifo)", "d/root (symlink)"}, c.Skipped)
	require.Equal(t, map[string]string{"d/a": "a\n"}, unpacked(t, sb))
}
