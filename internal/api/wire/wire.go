// Package wire holds the JSON shapes of the Chalk API, shared by the
// server (internal/api) and its client (internal/client).
package wire

import "time"

// Error is every error answer's body.
type Error struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
	// Code classifies the error for programs: see the Code* constants.
	Code string `json:"code,omitempty"`
}

// Error codes.
const (
	CodeUnauthorized  = "unauthorized"
	CodeNotFound      = "not-found"
	CodeExists        = "exists"
	CodeBadRequest    = "bad-request"
	CodeNotHostBacked = "not-host-backed"
	CodeNotRunning    = "not-running"
	CodeUnsupported   = "unsupported"
	CodeInternal      = "internal"
)

// RunRequest asks for a container.
type RunRequest struct {
	Name         string   `json:"name,omitempty"`
	Image        string   `json:"image"`
	ComputeClass string   `json:"compute_class,omitempty"`
	Lifetime     string   `json:"lifetime,omitempty"`
	Entrypoint   []string `json:"entrypoint,omitempty"`
	Command      []string `json:"command,omitempty"`
	Env          []string `json:"env,omitempty"`
	CPUs         float64  `json:"cpus,omitempty"`
	MemoryBytes  int64    `json:"memory_bytes,omitempty"`
	Volumes      []string `json:"volumes,omitempty"` // NAME:/path
}

// Container is what the API says about one container.
type Container struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Image        string    `json:"image"`
	ComputeClass string    `json:"compute_class"`
	State        string    `json:"state"`
	Reason       string    `json:"reason,omitempty"`
	ExitCode     *int      `json:"exit_code,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	Entrypoint   []string  `json:"entrypoint,omitempty"`
	Command      []string  `json:"command,omitempty"`
	Env          []string  `json:"env,omitempty"`
	CPUs         float64   `json:"cpus,omitempty"`
	MemoryBytes  int64     `json:"memory_bytes,omitempty"`
	Volumes      []string  `json:"volumes,omitempty"`
}

// Volume is a named persistent volume.
type Volume struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// VolumeRequest asks for a volume.
type VolumeRequest struct {
	Name string `json:"name"`
}

// Image is an image built through the API.
type Image struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Whoami is the owner a token belongs to.
type Whoami struct {
	Owner string `json:"owner"`
	Token string `json:"token_id"`
}

// BuildResult is the last line of an image build's streamed log,
// prefixed by BuildResultPrefix.
type BuildResult struct {
	Image string `json:"image,omitempty"`
	Error string `json:"error,omitempty"`
}

// BuildResultPrefix starts the build log's last line.
const BuildResultPrefix = "\x00chalk-build-result "
