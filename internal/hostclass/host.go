// Package hostclass runs API containers on the "host" compute class: the
// docker daemon on the server's own machine. Containers are created and
// managed through the docker CLI (the same driver chalk run uses), on an
// internal network with no route out of the host; sessions attach to
// processes started inside them through the daemon's exec API, and a
// connector that can dial a unix socket moves a session's bytes through
// one in the container's socket directory (see SocketMount).
package hostclass

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/docker"
	"github.com/chalk-rl/chalk/internal/runtime/engine"
)

// DefaultNetwork is the internal docker network API containers join.
const DefaultNetwork = "chalk-api-internal"

// Labels every engine object the API makes carries.
const (
	LabelOwner     = "chalk.api.owner"
	LabelContainer = "chalk.api.container"
	LabelManaged   = "chalk.api"
)

// Host runs containers on the local docker daemon.
type Host struct {
	Engine  *engine.Engine
	Bin     string
	Network string
	// Socket is the docker daemon's unix socket, for exec.
	Socket string
	// Mark tells the processes this server starts in containers from
	// others (see SessionEnv); "" marks none.
	Mark string
	// SocketRoot is a directory on this host holding, for each
	// container, the directory of its session sockets (see SocketMount).
	// Empty: sessions go through docker exec's stdio alone.
	SocketRoot string

	clientOnce sync.Once
	client     *http.Client
}

// errLinuxOnly: the host compute class runs the server's containers on
// the Linux machine it runs on.
var errLinuxOnly = errors.New("the host compute class needs Linux")

// Supported returns nil on Linux, the one system the host compute class
// runs on, and an error saying so elsewhere.
func Supported() error {
	if goruntime.GOOS != "linux" {
		return errLinuxOnly
	}
	return nil
}

// New returns a Host on the docker daemon DOCKER_HOST names (or the
// default socket), with containers on network.
func New(network string, dockerHost string) (*Host, error) {
	sock := "/var/run/docker.sock"
	if dockerHost != "" {
		p, ok := strings.CutPrefix(dockerHost, "unix://")
		if !ok {
			return nil, fmt.Errorf("DOCKER_HOST=%s: the host compute class needs the daemon's unix socket (unix:///path)", dockerHost)
		}
		sock = p
	}
	if network == "" {
		network = DefaultNetwork
	}
	return &Host{Engine: docker.New(), Bin: "docker", Network: network, Socket: sock}, nil
}

func (h *Host) docker(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	cmd.Stdin = stdin
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return nil, fmt.Errorf("docker %s: %w", args[0], err)
		}
		return nil, fmt.Errorf("docker %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
}

// EnsureNetwork makes the internal network when it is missing. An
// internal docker network has no gateway out of the host: containers on
// it reach each other and nothing else.
func (h *Host) EnsureNetwork(ctx context.Context) error {
	out, err := h.docker(ctx, nil, "network", "inspect", "--format", "{{.Internal}}", h.Network)
	if err == nil {
		if strings.TrimSpace(string(out)) != "true" {
			return fmt.Errorf("docker network %s exists but is not internal: containers on it could reach the internet; remove it ('docker network rm %s') and restart the server", h.Network, h.Network)
		}
		return nil
	}
	_, err = h.docker(ctx, nil, "network", "create", "--internal", "--label", LabelManaged+"=1", h.Network)
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("create the internal network %s: %w", h.Network, err)
	}
	return nil
}

// RunSpec is a container to start.
type RunSpec struct {
	ID, Owner, Name string
	Image           string
	Entrypoint      []string
	Command         []string
	Env             []string
	CPUs            float64
	MemoryBytes     int64
	Volumes         [][2]string // engine volume name, path
}

// EngineName is the docker name of API container id.
func EngineName(id string) string { return "chalk-api-" + id }

// Run creates and starts the container and returns the engine's ID.
func (h *Host) Run(ctx context.Context, s RunSpec) (string, error) {
	spec := runtime.SandboxSpec{
		Name:        EngineName(s.ID),
		Image:       s.Image,
		CPUs:        s.CPUs,
		MemoryBytes: s.MemoryBytes,
		Env:         s.Env,
		Labels:      map[string]string{LabelManaged: "1", LabelOwner: s.Owner, LabelContainer: s.ID},
		// docker's init as PID 1 reaps what a session leaves orphaned
		// when it is ended (the cats of the bash connector), which the
		// image's own entrypoint, not written to be an init, would leave
		// as zombies.
		ExtraArgs: []string{"--network", h.Network, "--hostname", hostname(s.Name), "--init"},
	}
	sockets, err := h.makeSocketDir(s.ID)
	if err != nil {
		return "", err
	}
	spec.ExtraArgs = append(spec.ExtraArgs, sockets...)
	for _, v := range s.Volumes {
		spec.ExtraArgs = append(spec.ExtraArgs, "--mount", "type=volume,source="+v[0]+",target="+v[1])
	}
	switch {
	case len(s.Entrypoint) > 0:
		// engine.Create runs Entrypoint[0] with the rest as arguments.
		spec.Entrypoint = append(slices.Clone(s.Entrypoint), s.Command...)
	case len(s.Command) > 0:
		return "", errors.New("a command needs an entrypoint")
	}
	id, err := h.Engine.Create(ctx, spec)
	if err != nil {
		_ = h.RemoveSockets(s.ID)
		return "", err
	}
	if _, err := h.docker(ctx, nil, "start", id); err != nil {
		_ = h.Engine.Remove(context.WithoutCancel(ctx), id)
		_ = h.RemoveSockets(s.ID)
		return "", fmt.Errorf("start container %s: %w", s.Name, err)
	}
	return id, nil
}

func hostname(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 63 {
		s = s[:63]
	}
	if s == "" {
		return "chalk"
	}
	return s
}

// State is what the engine says about a container.
type State struct {
	Exists   bool
	Running  bool
	ExitCode int
}

// Inspect reports the container's state; a missing container is not an
// error (Exists is false).
func (h *Host) Inspect(ctx context.Context, engineID string) (State, error) {
	out, err := h.docker(ctx, nil, "inspect", "--type", "container", "--format",
		"{{.State.Running}}\t{{.State.ExitCode}}", engineID)
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "no such") {
			return State{}, nil
		}
		return State{}, err
	}
	f := strings.SplitN(strings.TrimRight(string(out), "\n"), "\t", 2)
	st := State{Exists: true}
	if len(f) == 2 {
		st.Running = f[0] == "true"
		fmt.Sscan(f[1], &st.ExitCode)
	}
	return st, nil
}

// Stop stops the container, giving its entrypoint grace to exit.
func (h *Host) Stop(ctx context.Context, engineID string, grace time.Duration) error {
	_, err := h.docker(ctx, nil, "stop", "--time", fmt.Sprint(int(grace.Seconds())), engineID)
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "no such") {
		return nil
	}
	return err
}

// Remove deletes the container (running or not).
func (h *Host) Remove(ctx context.Context, engineID string) error {
	return h.Engine.Remove(ctx, engineID)
}

// Logs streams the container's output to w: the entrypoint's stdout and
// stderr, interleaved as the engine keeps them.
func (h *Host) Logs(ctx context.Context, engineID string, follow bool, tail string, w io.Writer) error {
	args := []string{"logs"}
	if follow {
		args = append(args, "--follow")
	}
	if tail != "" {
		args = append(args, "--tail", tail)
	}
	args = append(args, engineID)
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	// Two copying goroutines, one writer: take turns.
	var mu sync.Mutex
	cmd.Stdout = &lockedWriter{mu: &mu, w: w}
	cmd.Stderr = &lockedWriter{mu: &mu, w: w, tee: &stderr}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("docker logs: %s: %w", strings.TrimSpace(stderr.String()), err)
	}
	return nil
}

// lockedWriter serialises writes to w, keeping a copy in tee if set.
type lockedWriter struct {
	mu  *sync.Mutex
	w   io.Writer
	tee *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tee != nil && l.tee.Len() < 8<<10 {
		l.tee.Write(p)
	}
	return l.w.Write(p)
}

// CreateVolume makes a docker volume.
func (h *Host) CreateVolume(ctx context.Context, name, owner string) error {
	_, err := h.docker(ctx, nil, "volume", "create", "--label", LabelManaged+"=1", "--label", LabelOwner+"="+owner, name)
	return err
}

// RemoveVolume deletes a docker volume; it fails while a container uses it.
func (h *Host) RemoveVolume(ctx context.Context, name string) error {
	_, err := h.docker(ctx, nil, "volume", "rm", name)
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "no such") {
		return nil
	}
	return err
}

// BuildImage builds the tar build context in r (with its Dockerfile at
// dockerfile inside it) as tag, streaming the build log to log.
func (h *Host) BuildImage(ctx context.Context, tag, dockerfile string, labels map[string]string, r io.Reader, log io.Writer) error {
	args := []string{"build", "--tag", tag, "--file", dockerfile}
	args = append(args, engine.LabelArgs(labels)...)
	args = append(args, "-")
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	cmd.Stdin = r
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(cmd.Environ(), "DOCKER_BUILDKIT=1")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker build: %w", err)
	}
	return nil
}

// ImageExists says whether the engine has image ref.
func (h *Host) ImageExists(ctx context.Context, ref string) (bool, error) {
	info, err := h.Engine.Image(ctx, ref)
	return info != nil, err
}
