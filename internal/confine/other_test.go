//go:build !linux

package confine

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// Off Linux every entry point says the box needs Linux, and none
// pretends to have confined anything.
func TestOffLinux(t *testing.T) {
	if err := Exec(); !errors.Is(err, errNotLinux) {
		t.Fatalf("Exec: %v", err)
	}
	rep := CheckConfinement(context.Background(), CheckOptions{Hardware: "default"})
	if rep.OK || len(rep.Checks) != 1 || rep.Checks[0].Status != Fail || rep.Checks[0].Reason != errNotLinux.Error() {
		t.Fatalf("CheckConfinement: %+v", rep)
	}
	var out bytes.Buffer
	if code := Probe("status", "", &out); code != 2 || !bytes.Contains(out.Bytes(), []byte("needs Linux")) {
		t.Fatalf("Probe: exit %d, %q", code, out.String())
	}
}
