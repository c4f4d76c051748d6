package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteFile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".ssh", "config")
	require.NoError(t, WriteFile(path, []byte("one\n")))
	fi, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	fi, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// An existing, looser file is tightened and replaced.
	require.NoError(t, os.Chmod(path, 0o644))
	require.NoError(t, WriteFile(path, []byte("two\n")))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two\n", string(data))
	fi, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
}

func TestWriteFileSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "ssh_config")
	require.NoError(t, os.MkdirAll(filepath.Dir(real), 0o755))
	require.NoError(t, os.WriteFile(real, []byte("old\n"), 0o600))
	link := filepath.Join(dir, "config")
	require.NoError(t, os.Symlink("dotfiles/ssh_config", link))

	require.NoError(t, WriteFile(link, []byte("new\n")))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is kept")
	data, err := os.ReadFile(real)
	require.NoError(t, err)
	require.Equal(t, "new\n", string(data))

	// A dangling link is followed too.
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(dir, "made", "later"), dangling))
	require.NoError(t, WriteFile(dangling, []byte("x\n")))
	data, err = os.ReadFile(filepath.Join(dir, "made", "later"))
	require.NoError(t, err)
	require.Equal(t, "x\n", string(data))
}
