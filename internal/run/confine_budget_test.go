package run_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/chalk-rl/chalk/internal/run"
)

func TestDiskBudget(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < 1<<30 {
		t.Skipf("only %d MiB free at %s: too little to measure the budget's shares", free>>20, dir)
	}
	all, err := run.DiskBudget(dir, 0, 1)
	require.NoError(t, err)
	// 80% of what is free; the disk may change a little between calls.
	require.InDelta(t, float64(free)*0.8, float64(all), float64(free)*0.01)

	quarter, err := run.DiskBudget(dir, 0, 4)
	require.NoError(t, err)
	require.InDelta(t, float64(all)/4, float64(quarter), float64(free)*0.01)

	capped, err := run.DiskBudget(dir, 256<<20, 1)
	require.NoError(t, err)
	require.Equal(t, int64(256<<20), capped, "the hardware's disk budget caps it")

	split, err := run.DiskBudget(dir, 256<<20, 2)
	require.NoError(t, err)
	require.Equal(t, int64(128<<20), split)

	_, err = run.DiskBudget(dir, 256<<20, 8)
	require.ErrorContains(t, err, "at least 64 MiB is needed")
}
