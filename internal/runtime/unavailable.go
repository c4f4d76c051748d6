package runtime

import (
	"context"
	"fmt"
	"io"

	"github.com/chalk-rl/chalk/internal/hint"
)

// Unavailable is a runtime whose preflight Chalk runs but which this
// release cannot start sandboxes on yet. Every operation says so, with the
// runtime to use instead.
type Unavailable struct {
	RuntimeName string
	Caps        Capabilities
	Checks      func(ctx context.Context) []Check
}

var _ Runtime = (*Unavailable)(nil)

func (u *Unavailable) Name() string               { return u.RuntimeName }
func (u *Unavailable) Capabilities() Capabilities { return u.Caps }

func (u *Unavailable) Preflight(ctx context.Context) []Check {
	if u.Checks == nil {
		return nil
	}
	return u.Checks(ctx)
}

func (u *Unavailable) err() error {
	return hint.Newf("pass --runtime docker (or podman) to run in a container instead",
		"the %s runtime cannot start sandboxes in this release of chalk (its preflight, 'chalk doctor --runtime %s', does run)", u.RuntimeName, u.RuntimeName)
}

func (u *Unavailable) Image(context.Context, string) (*ImageInfo, error) { return nil, u.err() }
func (u *Unavailable) Build(context.Context, BuildRequest) error         { return u.err() }
func (u *Unavailable) Create(context.Context, SandboxSpec) (string, error) {
	return "", u.err()
}
func (u *Unavailable) CopyTo(context.Context, string, string, io.Reader) error { return u.err() }
func (u *Unavailable) Start(context.Context, string, io.Writer, io.Writer) (int, error) {
	return -1, u.err()
}
func (u *Unavailable) Signal(context.Context, string, string) error { return u.err() }
func (u *Unavailable) CopyFrom(context.Context, string, string) (io.ReadCloser, error) {
	return nil, u.err()
}
func (u *Unavailable) Remove(context.Context, string) error { return u.err() }
func (u *Unavailable) List(context.Context, map[string]string) ([]SandboxInfo, error) {
	return nil, nil
}

// String is for logs.
func (u *Unavailable) String() string { return fmt.Sprintf("%s (unavailable)", u.RuntimeName) }
