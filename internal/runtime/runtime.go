// Package runtime defines what Chalk asks of a runtime: the thing that builds
// an environment's image and runs it as a sandbox, either a VM with its own
// kernel or a container engine sharing the host's. Each runtime lives in its
// own package below this one and passes the conformance suite in
// runtimetest.
package runtime

import (
	"context"
	"io"
)

// BuildxVersion is the buildx release the fixes for Debian (which has no
// package for it) build from source.
const BuildxVersion = "v0.38.2"

// Capabilities is what a runtime can do, reported before anything runs.
type Capabilities struct {
	// Mounts is how --mount behaves: "live" (shared), "copied" (copied in
	// at start and back at the end), "read-only" (only :ro accepted) or ""
	// (not supported).
	Mounts string
}

// Mount joins a host path to a path in the sandbox.
type Mount struct {
	Source   string
	Target   string
	ReadOnly bool
}

// BuildRequest asks for an image built from an environment directory.
type BuildRequest struct {
	Dir           string // build context
	Containerfile string // path of the Containerfile, absolute
	Tag           string // image reference to produce
	Labels        map[string]string
	Output        io.Writer // build log, streamed as it happens
}

// SandboxSpec describes one sandbox to create.
type SandboxSpec struct {
	Name        string
	Image       string
	CPUs        float64
	MemoryBytes int64
	Mounts      []Mount
	Env         []string // KEY=value, in order
	Labels      map[string]string
	Entrypoint  []string
	// CapAdd are capabilities the sandbox's root gets beyond the
	// engine's defaults, and DeviceRules device-cgroup rules ("b 7:* rwm"):
	// what the harness needs to confine the student.
	CapAdd      []string
	DeviceRules []string
	// ExtraArgs are engine flags added verbatim before the image, e.g. the
	// device flags of a container_run_args plugin.
	ExtraArgs []string
}

// SandboxInfo is what a runtime reports about an existing sandbox.
type SandboxInfo struct {
	ID      string
	Name    string
	Image   string
	Labels  map[string]string
	Running bool
}

// ImageInfo is what a runtime reports about an image.
type ImageInfo struct {
	ID           string
	OS           string
	Architecture string // GOARCH spelling, e.g. amd64
}

// Runtime builds images and runs sandboxes.
type Runtime interface {
	// Name is the value of --runtime that selects this runtime.
	Name() string
	Capabilities() Capabilities
	// Preflight reports each requirement, with the fix for each one that
	// is not met. It never changes the machine.
	Preflight(ctx context.Context) []Check

	// Image describes the image ref, or returns nil when there is none.
	Image(ctx context.Context, ref string) (*ImageInfo, error)
	Build(ctx context.Context, req BuildRequest) error

	// Create makes a sandbox without starting it and returns its ID.
	Create(ctx context.Context, spec SandboxSpec) (string, error)
	// CopyTo extracts the tar stream r into the sandbox at dir.
	CopyTo(ctx context.Context, id, dir string, r io.Reader) error
	// Start starts the sandbox's entrypoint, streams its output to stdout
	// and stderr, and waits for it to end, returning its exit code. When
	// ctx ends first, Start returns ctx's error and leaves the sandbox
	// running: the caller decides whether to signal or remove it.
	Start(ctx context.Context, id string, stdout, stderr io.Writer) (int, error)
	// Signal sends a signal (by name, e.g. "TERM") to the entrypoint.
	Signal(ctx context.Context, id, signal string) error
	// CopyFrom returns a tar stream of path inside the sandbox.
	CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error)
	// Remove stops and deletes the sandbox. Removing one that is gone is
	// not an error.
	Remove(ctx context.Context, id string) error
	// List returns the sandboxes carrying every label in labels.
	List(ctx context.Context, labels map[string]string) ([]SandboxInfo, error)
}

// Addresser is a runtime whose sandboxes the host can reach at an
// address: chalk run follows the harness's events there.
type Addresser interface {
	Address(ctx context.Context, id string) (string, error)
}

type buildChecksKey struct{}

// Which checks a preflight makes, as ctx asks.
const (
	allChecks = iota
	noBuildChecks
	onlyBuildChecks
)

// WithoutBuildChecks marks ctx for a preflight that leaves out the checks
// only a build needs (docker's buildx, nerdctl's buildctl): a run whose
// image exists needs none of them, and a runtime's Build makes those
// checks itself before it builds.
func WithoutBuildChecks(ctx context.Context) context.Context {
	return context.WithValue(ctx, buildChecksKey{}, noBuildChecks)
}

// OnlyBuildChecks marks ctx for the checks a build makes before it
// builds: those a preflight that passed without them left out.
func OnlyBuildChecks(ctx context.Context) context.Context {
	return context.WithValue(ctx, buildChecksKey{}, onlyBuildChecks)
}

// SkipCheck says whether ctx leaves out a check that is, or is not, only
// for builds.
func SkipCheck(ctx context.Context, forBuild bool) bool {
	v, _ := ctx.Value(buildChecksKey{}).(int)
	return v == noBuildChecks && forBuild || v == onlyBuildChecks && !forBuild
}
