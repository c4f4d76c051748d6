package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	chalkOnce sync.Once
	chalkBin  string
	chalkErr  string
)

// StaticChalk builds a static chalk once per test binary, for sandboxes
// (a test binary is not static) and returns its path.
func StaticChalk(t testing.TB) string {
	t.Helper()
	chalkOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chalk-test-harness-")
		if err != nil {
			chalkErr = err.Error()
			return
		}
		_ = os.Chmod(dir, 0o755) // sandboxes' students run it too
		bin := filepath.Join(dir, "chalk")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/chalk")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			chalkErr = "build the static chalk: " + err.Error() + "\n" + string(out)
			return
		}
		chalkBin = bin
	})
	if chalkErr != "" {
		t.Fatal(chalkErr)
	}
	return chalkBin
}
