package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// StandIns puts the stand-in tools names, from the directory dir, first on
// a PATH of bin + rest, for a tool that cannot be installed here. The
// stand-ins run what they can through the real docker, which they find in
// FAKE_REAL_DOCKER, and log each call to the file StandIns returns
// (FAKE_LOG). It returns the directory the stand-ins are in and the log.
func StandIns(t *testing.T, dir string, names []string, rest string) (bin, log string) {
	t.Helper()
	NeedDocker(t)
	real, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin = t.TempDir()
	for _, n := range names {
		if err := os.Symlink(filepath.Join(src, n), filepath.Join(bin, n)); err != nil {
			t.Fatal(err)
		}
	}
	log = filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+rest)
	t.Setenv("FAKE_REAL_DOCKER", real)
	t.Setenv("FAKE_LOG", log)
	return bin, log
}
