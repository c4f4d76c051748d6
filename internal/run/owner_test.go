package run

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/runtime"
)

func TestParseOwner(t *testing.T) {
	for _, tt := range []struct {
		label string
		want  OwnerID
		err   string
	}{
		{"vm/4242/987654", OwnerID{Host: "vm", PID: 4242, Start: 987654}, ""},
		{"build-7.example.org/12", OwnerID{Host: "build-7.example.org", PID: 12}, ""},
		{"vm", OwnerID{}, "wrong number of parts"},
		{"vm/1/2/3", OwnerID{}, "wrong number of parts"},
		{"/12", OwnerID{}, "no host name"},
		{"vm/x", OwnerID{}, "the pid is not a positive number"},
		{"vm/0", OwnerID{}, "the pid is not a positive number"},
		{"vm/-3/5", OwnerID{}, "the pid is not a positive number"},
		{"vm/12/", OwnerID{}, "the start time is not a positive number"},
		{"vm/12/0", OwnerID{}, "the start time is not a positive number"},
	} {
		t.Run(tt.label, func(t *testing.T) {
			o, err := ParseOwner(tt.label)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				require.ErrorContains(t, err, "want HOST/PID/START or HOST/PID")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, o)
			require.Equal(t, tt.label, o.String())
		})
	}
}

func TestOwnerDead(t *testing.T) {
	owner := OwnerID{Host: "vm", PID: 4242, Start: 1000}
	legacy := OwnerID{Host: "vm", PID: 4242}
	for _, tt := range []struct {
		name  string
		owner OwnerID
		host  string
		proc  proc
		dead  bool
		why   string
	}{
		{"pid gone", owner, "vm", proc{}, true, "no longer running"},
		{"pid gone, old label", legacy, "vm", proc{}, true, "no longer running"},
		{"same process", owner, "vm", proc{Alive: true, Start: 1000}, false, "still running"},
		{"pid reused by a later process", owner, "vm", proc{Alive: true, Start: 5000}, true, "now another process"},
		{"pid reused by an earlier process (after a reboot)", owner, "vm", proc{Alive: true, Start: 10}, true, "now another process"},
		{"pid running, start time unreadable", owner, "vm", proc{Alive: true}, false, "cannot be read"},
		{"pid running, old label", legacy, "vm", proc{Alive: true, Start: 1000}, false, "no start time"},
		{"another host, pid gone here", owner, "laptop", proc{}, false, "another host (vm)"},
		{"another host, pid reused here", owner, "laptop", proc{Alive: true, Start: 5}, false, "another host (vm)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dead, why := ownerDead(tt.owner, tt.host, tt.proc)
			require.Equal(t, tt.dead, dead, why)
			require.Contains(t, why, tt.why)
		})
	}
}

func TestJudge(t *testing.T) {
	gone := func(int) proc { return proc{} }
	owner := func(v string) map[string]string { return map[string]string{LabelRun: "1a2b3c4d", LabelOwner: v} }
	for _, tt := range []struct {
		name    string
		labels  map[string]string
		running bool
		dead    bool
		why     string
	}{
		{"owner gone", owner("vm/42/7"), false, true, "no longer running"},
		{"owner gone, still running", owner("vm/42/7"), true, true, "no longer running"},
		{"kept", map[string]string{LabelOwner: "vm/42/7", LabelKeep: "true"}, false, false, "kept on purpose"},
		{"owner label unreadable", owner("vm"), true, false, "want HOST/PID/START or HOST/PID"},
		{"another host", owner("laptop/42/7"), true, false, "another host (laptop)"},
		{"old label, owner gone, still running", owner("vm/42"), true, true, "no longer running"},
		{"old label, owner gone, stopped: may have been kept", owner("vm/42"), false, false, "cannot tell a sandbox kept with --keep-containers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dead, why := judge(runtime.SandboxInfo{Labels: tt.labels, Running: tt.running}, "vm", gone)
			require.Equal(t, tt.dead, dead, why)
			require.Contains(t, why, tt.why)
		})
	}
}

func TestSweepDue(t *testing.T) {
	stamp := filepath.Join(t.TempDir(), "cache", "chalk", "gc-swept")
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	require.True(t, SweepDue(stamp, 10*time.Minute, now), "no stamp yet")
	require.FileExists(t, stamp)
	require.False(t, SweepDue(stamp, 10*time.Minute, now.Add(time.Minute)), "swept a minute ago")
	require.True(t, SweepDue(stamp, 10*time.Minute, now.Add(11*time.Minute)), "swept eleven minutes ago")
	require.True(t, SweepDue(stamp, 10*time.Minute, now.Add(-time.Hour)), "a stamp in the future (the clock went back) does not stop the sweep")
}

func TestOwnerGone(t *testing.T) {
	host, _ := os.Hostname()
	gone, _ := OwnerGone(Owner())
	require.False(t, gone, "this very process is not gone")
	gone, why := OwnerGone(FormatOwner(host, 1<<22+12345))
	require.True(t, gone, why)
	gone, _ = OwnerGone("another-host/1/1")
	require.False(t, gone, "another host's process is never judged from here")
	gone, _ = OwnerGone("not a label")
	require.False(t, gone)
}
