package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// These tests attack the student's limits for real, on this host, as the
// harness does in a sandbox: the host's cgroups and loop devices stand
// in for the sandbox's.

func confinementOf(t *testing.T, res runResult) *transcript.ConfinementInfo {
	t.Helper()
	for _, e := range res.events {
		if e.Type == transcript.Confinement {
			return e.Confinement
		}
	}
	t.Fatal("no confinement event")
	return nil
}

func hitsOf(res runResult) map[string]transcript.Event {
	out := map[string]transcript.Event{}
	for _, e := range res.events {
		if e.Type == transcript.LimitHit {
			out[e.Limit.Name] = e
		}
	}
	return out
}

func TestConfinedMemoryHog(t *testing.T) {
	sb := newSandbox(t)
	// The hog doubles a shell variable until something stops it.
	hog := `x=xxxxxxxxxxxxxxxx; while :; do x="$x$x"; done`
	cfg := &Config{
		UID:     testUID,
		Limits:  confine.Limits{MemoryBytes: 64 << 20},
		Student: Process{Command: sh(hog), Workdir: sb.work, Timeout: Duration(time.Minute)},
		Grader:  &Process{Command: sh(`echo graded; printf 1 > "$OUT/reward"`), Timeout: Duration(time.Minute)},
	}
	res := sb.run(t, context.Background(), cfg)
	c := confinementOf(t, res)
	require.Equal(t, int64(64<<20), c.MemoryBytes)
	hit, ok := hitsOf(res)["memory"]
	require.True(t, ok, "no limit.hit for memory: %v", res.events)
	require.Equal(t, c.Enforcement["memory"], hit.Limit.Enforcement)
	require.Equal(t, "killed", hit.Limit.Action)
	require.Equal(t, transcript.StatusFailed, res.status)
	last := res.events[len(res.events)-1]
	require.Contains(t, last.Message, "memory limit of 64 MiB")
	// The harness lived on: the grader ran and /out was packed.
	require.Contains(t, shape(res.events), "process.exited(grader)")
	require.Contains(t, shape(res.events), "reward")
	require.Contains(t, shape(res.events), "out.copied")
}

func TestConfinedForkBomb(t *testing.T) {
	sb := newSandbox(t)
	// Each process starts two more that sleep; the limit stops the tree.
	bomb := `b() { sleep 30 & sleep 30 & b & wait; }; b`
	cfg := &Config{
		UID:     testUID,
		Limits:  confine.Limits{Processes: 32},
		Student: Process{Command: sh(`(` + bomb + `) 2>/dev/null & sleep 2; echo still here`), Workdir: sb.work, Timeout: Duration(time.Minute)},
		Grader:  &Process{Command: sh(`echo graded`), Timeout: Duration(time.Minute)},
	}
	res := sb.run(t, context.Background(), cfg)
	c := confinementOf(t, res)
	require.Equal(t, 32, c.Processes)
	_, ok := hitsOf(res)["processes"]
	require.True(t, ok, "no limit.hit for processes")
	require.Contains(t, shape(res.events), "process.exited(grader)")
	// run() checked that nothing of the student's is left.
}

func TestConfinedDiskFiller(t *testing.T) {
	sb := newSandbox(t)
	cfg := &Config{
		UID:    testUID,
		Limits: confine.Limits{DiskBytes: 16 << 20},
		Student: Process{Command: sh(`echo kept > "$OUT/kept.txt";
dd if=/dev/zero of="$OUT/fill" bs=1M count=64 2>&1; echo "dd: $?"; true`), Workdir: sb.work, Timeout: Duration(time.Minute)},
		Grader: &Process{Command: sh(`printf 0.5 > "$OUT/reward"`), Timeout: Duration(time.Minute)},
	}
	res := sb.run(t, context.Background(), cfg)
	c := confinementOf(t, res)
	if c.Enforcement["disk"] != confine.Kernel {
		t.Fatalf("the student's disk is not held by the kernel on this host: %s", c.Why["disk"])
	}
	require.Contains(t, string(output(res.events, "student", "stdout")), "No space left on device")
	hit, ok := hitsOf(res)["disk"]
	require.True(t, ok, "no limit.hit for disk")
	require.Equal(t, confine.Kernel, hit.Limit.Enforcement)
	// /out still reached the archive, and the grader's reward too.
	files := unpacked(t, sb)
	require.Equal(t, "kept\n", files["kept.txt"])
	require.Equal(t, "0.5", files["reward"])
	_, err := os.Stat(filepath.Join(sb.base, "disk.img"))
	require.ErrorIs(t, err, os.ErrNotExist, "the disk image is removed after the run")
}

func TestConfinedStudentHasNoPrivilege(t *testing.T) {
	sb := newSandbox(t)
	script := `grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
unshare -U true 2>&1 && echo "unshare: allowed" || echo "unshare: refused"
kill -0 1 2>/dev/null && echo "signal pid 1: allowed" || echo "signal pid 1: refused"
cat /proc/$PPID/environ >/dev/null 2>&1 && echo "parent environ: readable" || echo "parent environ: refused"`
	cfg := &Config{UID: testUID, Student: Process{Command: sh(script), Workdir: sb.work}}
	res := sb.run(t, context.Background(), cfg)
	out := string(output(res.events, "student", "stdout"))
	for _, want := range []string{
		"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
		"unshare: refused", "signal pid 1: refused",
	} {
		require.Contains(t, out, want)
	}
	require.Contains(t, out, "Uid:\t62017\t62017\t62017\t62017")
	require.Regexp(t, `Groups:\s*\n`, out, "no supplementary groups")
	require.Contains(t, out, "parent environ: refused")
}

// The kernel's OOM kill ends the student once: what starts in the box
// afterwards lives. Both ways the kernel can act are tried: holding
// every process at the limit (v1 with its OOM killer off, as the box
// sets it) and killing one and counting it (v2, or v1 where the killer
// could not be turned off), whose count never goes back down.
func TestConfinedOOMKillsOnce(t *testing.T) {
	sb := newSandbox(t)
	self, err := Self()
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		killer string // memory.oom_control on v1; "" leaves it as the box set it
	}{
		{"held at the limit", ""},
		{"killed by the kernel", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			box, err := confine.Build(confine.Options{UID: testUID, Limits: confine.Limits{MemoryBytes: 64 << 20}, CgroupName: "chalk_harness_test_oom"})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, box.Teardown()) })
			if box.Cgroup == nil {
				t.Skipf("no cgroup for the student on this host, so the kernel holds no memory limit: %s", box.Enforced.Why["memory"])
			}
			if tc.killer != "" {
				if box.Cgroup.Version != 1 {
					t.Skip("the kernel's OOM killer is turned off only on cgroup v1")
				}
				require.NoError(t, os.WriteFile(filepath.Join(box.Cgroup.Dirs[0], "memory.oom_control"), []byte(tc.killer), 0))
			}
			ctx, stop := context.WithCancel(context.Background())
			watched := make(chan struct{})
			go func() { box.Watch(ctx, nil); close(watched) }()
			defer func() { stop(); <-watched }()

			start := func(script string) (*exec.Cmd, *bytes.Buffer) {
				spec := box.Spec(sh(script), []string{"PATH=/usr/bin:/bin"}, sb.base)
				cmd := confine.Command(self, spec)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				require.NoError(t, confine.Start(cmd, spec))
				return cmd, &out
			}
			hog, _ := start(`x=xxxxxxxxxxxxxxxx; while :; do x="$x$x"; done`)
			_ = hog.Wait()
			ws, _ := hog.ProcessState.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the hog: %s", hog.ProcessState)
			// The watch acts on the OOM at its next look, up to 100 ms
			// later: a process started before then is rightly killed.
			require.Eventually(t, func() bool { return len(box.Hits()) > 0 }, 5*time.Second, 10*time.Millisecond, "the OOM was not seen")
			after, out := start(`sleep 1; echo lived`)
			require.NoError(t, after.Wait(), "a process started after the OOM kill: %s", out)
			require.Equal(t, "lived\n", out.String())
			hits := box.Hits()
			require.Len(t, hits, 1, "%v", hits)
			require.Equal(t, "memory", hits[0].Name)
			require.Equal(t, "killed", hits[0].Action)
		})
	}
}
