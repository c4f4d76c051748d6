package run

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	start, err := parseStat([]byte(line))
	require.NoError(t, err)
	require.Equal(t, uint64(987654), start)
	_, err = parseStat([]byte("4242 (x) S 1 2"))
	require.ErrorContains(t, err, "too few fields")
}

// The owner label of this process names it, alive; a process that has
// exited is dead; and this process's pid with another start time is a
// reused pid.
func TestOwnerOfRealProcesses(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	self, err := ParseOwner(Owner())
	require.NoError(t, err)
	require.Equal(t, OwnerID{Host: host, PID: os.Getpid(), Start: self.Start}, self)
	require.NotZero(t, self.Start, "the label records the start time")
	dead, why := ownerDead(self, host, lookupProc(self.PID))
	require.False(t, dead, why)

	reused := self
	reused.Start++
	dead, why = ownerDead(reused, host, lookupProc(reused.PID))
	require.True(t, dead, why)

	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	gone, err := ParseOwner(FormatOwner(host, cmd.Process.Pid))
	require.NoError(t, err)
	dead, why = ownerDead(gone, host, lookupProc(gone.PID))
	require.True(t, dead, why)
}
