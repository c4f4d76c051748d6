package testenv

import (
	"os/exec"
	"testing"
)

// Chromium returns the path of a Chromium (or Chrome) binary that can run
// headless. It skips t when there is none, unless CI is set, where a
// missing browser is a failure: scripts/setup.sh installs Debian's
// chromium package.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	skipOrFail(t, "no chromium on PATH for the browser tests; run scripts/setup.sh (apt-get install chromium)")
	return ""
}
