package confine

import (
	"runtime"
	"testing"
)

func TestSupportedOnLinuxOnly(t *testing.T) {
	err := Supported()
	if (err == nil) != (runtime.GOOS == "linux") {
		t.Fatalf("on %s, Supported says %v", runtime.GOOS, err)
	}
}
