// Package engine drives an OCI container engine through its command-line
// client. docker, podman and nerdctl share one CLI shape for everything Chalk
// needs, so one driver serves all three (and docker with gVisor); each
// runtime package configures it with its own binary, build command and
// preflight.
package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/runtime"
)

// Engine is a runtime.Runtime backed by a docker-compatible CLI.
type Engine struct {
	// RuntimeName is the --runtime value, e.g. "docker:gvisor".
	RuntimeName string
	// Bin is the client binary, e.g. "docker".
	Bin string
	// BuildArgs returns the client arguments that build req; the build
	// context directory comes last.
	BuildArgs func(req runtime.BuildRequest) []string
	// CreateArgs are added to every create, before the spec's own flags
	// (e.g. --runtime=runsc).
	CreateArgs []string
	// RemoveArgs replace "rm --force --volumes" (podman needs --time 0 to
	// kill at once rather than wait for SIGTERM).
	RemoveArgs []string
	// Checks is the runtime's preflight.
	Checks func(ctx context.Context) []runtime.Check
	Caps   runtime.Capabilities
}

var _ runtime.Runtime = (*Engine)(nil)

func (e *Engine) Name() string                       { return e.RuntimeName }
func (e *Engine) Capabilities() runtime.Capabilities { return e.Caps }

func (e *Engine) Preflight(ctx context.Context) []runtime.Check {
	if e.Checks == nil {
		return nil
	}
	return e.Checks(ctx)
}

// command runs the client with args. stdin may be nil. It returns stdout;
// a failure carries the client's stderr in its message, and is an
// absentError when the client said only that what it names does not exist.
func (e *Engine) command(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, e.Bin, args...)
	cmd.Stdin = stdin
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), e.clientError(verb(args), stderr.String(), err)
	}
	return stdout.Bytes(), nil
}

// verb names a client call in errors: "rm", or "image inspect".
func verb(args []string) string {
	if len(args) > 1 && (args[0] == "image" || args[0] == "container") {
		return args[0] + " " + args[1]
	}
	return args[0]
}

// clientError turns a failed client call into an error naming the call,
// with what the client said, and a hint for the failures people hit.
func (e *Engine) clientError(verb, stderr string, err error) error {
	msg := strings.TrimSpace(stderr)
	if errors.Is(err, exec.ErrNotFound) {
		return hint.Newf(fmt.Sprintf("install %s, or pick another runtime with --runtime; run 'chalk doctor' to see what is set up", e.Bin),
			"%s %s: %s is not installed (not found on PATH)", e.Bin, verb, e.Bin)
	}
	var exit *exec.ExitError
	ran := errors.As(err, &exit)
	if msg == "" {
		return fmt.Errorf("%s %s: %w", e.Bin, verb, err)
	}
	err = fmt.Errorf("%s %s: %s: %w", e.Bin, verb, msg, err)
	switch {
	case daemonDown(msg):
		return hint.Wrap(err, e.daemonFix())
	case ran && onlyAbsent(msg):
		return absentError{err}
	}
	return err
}

func daemonDown(msg string) bool {
	return strings.Contains(msg, "Cannot connect to the Docker daemon") ||
		strings.Contains(msg, "Is the docker daemon running") ||
		strings.Contains(msg, "unable to connect to Podman") ||
		strings.Contains(msg, "cannot access containerd socket")
}

func (e *Engine) daemonFix() string {
	switch e.Bin {
	case "podman":
		return "start podman's service: on macOS 'podman machine init && podman machine start'"
	case "nerdctl":
		return "start containerd: 'sudo systemctl start containerd'"
	}
	return "start the docker daemon: 'sudo systemctl start docker' (or run dockerd); if it runs, add yourself to the docker group: 'sudo usermod -aG docker $USER' and log in again"
}

// Image describes ref, or returns nil when the engine has no such image.
func (e *Engine) Image(ctx context.Context, ref string) (*runtime.ImageInfo, error) {
	out, err := e.command(ctx, nil, "image", "inspect", "--format", "{{.Id}}\t{{.Os}}\t{{.Architecture}}", ref)
	if isAbsent(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	answer := strings.TrimSpace(string(out))
	if answer == "" { // nerdctl 2 answers a missing image with nothing
		return nil, nil
	}
	f := strings.Split(answer, "\t")
	info := &runtime.ImageInfo{ID: f[0]}
	if len(f) == 3 {
		info.OS, info.Architecture = f[1], f[2]
	}
	return info, nil
}

// Build runs the engine's build, streaming its log to req.Output.
func (e *Engine) Build(ctx context.Context, req runtime.BuildRequest) error {
	// A run's preflight left out what only a build needs: check it now
	// (the rest of the preflight has passed already).
	if failed := runtime.Failed(e.Preflight(runtime.OnlyBuildChecks(ctx))); len(failed) > 0 {
		var b strings.Builder
		runtime.WriteChecks(&b, failed)
		return hint.Newf(fmt.Sprintf("fix the above, then check again with 'chalk doctor --runtime %s'", e.RuntimeName),
			"the %s runtime cannot build %s:\n%s", e.RuntimeName, req.Tag, strings.TrimRight(b.String(), "\n"))
	}
	args := e.BuildArgs(req)
	cmd := exec.CommandContext(ctx, e.Bin, args...)
	var tail tailBuffer
	out := req.Output
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout = io.MultiWriter(out, &tail)
	cmd.Stderr = io.MultiWriter(out, &tail)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("build %s: %w", req.Tag, ctx.Err())
		}
		err = e.clientError(strings.Join(args[:min(2, len(args))], " "), tail.String(), err)
		return fmt.Errorf("build %s: %w", req.Tag, err)
	}
	return nil
}

// Create makes the sandbox and returns its ID.
func (e *Engine) Create(ctx context.Context, spec runtime.SandboxSpec) (string, error) {
	args, err := createArgs(e.CreateArgs, spec)
	if err != nil {
		return "", err
	}
	out, err := e.command(ctx, nil, args...)
	if err != nil {
		return "", fmt.Errorf("create sandbox %s: %w", spec.Name, err)
	}
	id := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(id, '\n'); i >= 0 { // pull progress may precede the ID
		id = id[i+1:]
	}
	return id, nil
}

// createArgs turns spec into the client's create command line.
func createArgs(base []string, spec runtime.SandboxSpec) ([]string, error) {
	args := []string{"create"}
	args = append(args, base...)
	if spec.Name != "" {
		args = append(args, "--name", spec.Name)
	}
	args = append(args, LabelArgs(spec.Labels)...)
	if spec.CPUs > 0 {
		args = append(args, "--cpus", fmt.Sprintf("%g", spec.CPUs))
	}
	if spec.MemoryBytes > 0 {
		args = append(args, "--memory", fmt.Sprintf("%db", spec.MemoryBytes))
	}
	for _, c := range spec.CapAdd {
		args = append(args, "--cap-add", c)
	}
	for _, r := range spec.DeviceRules {
		args = append(args, "--device-cgroup-rule", r)
	}
	for _, m := range spec.Mounts {
		if strings.ContainsAny(m.Source, ",\n") || strings.ContainsAny(m.Target, ",\n") {
			return nil, hint.Newf("rename the directory, or mount a parent directory whose path has no comma",
				"mount %s:%s: a path with a comma or newline cannot be passed to the engine's --mount", m.Source, m.Target)
		}
		v := "type=bind,source=" + m.Source + ",target=" + m.Target
		if m.ReadOnly {
			v += ",readonly"
		}
		args = append(args, "--mount", v)
	}
	for _, kv := range spec.Env {
		args = append(args, "--env", kv)
	}
	var cmdArgs []string
	if len(spec.Entrypoint) > 0 {
		args = append(args, "--entrypoint", spec.Entrypoint[0])
		cmdArgs = spec.Entrypoint[1:]
	}
	args = append(args, spec.ExtraArgs...)
	args = append(args, spec.Image)
	return append(args, cmdArgs...), nil
}

// CopyTo extracts the tar stream r into the sandbox at dir.
func (e *Engine) CopyTo(ctx context.Context, id, dir string, r io.Reader) error {
	_, err := e.command(ctx, r, "cp", "-", id+":"+dir)
	return err
}

// Start starts the sandbox attached and waits for its entrypoint to end.
func (e *Engine) Start(ctx context.Context, id string, stdout, stderr io.Writer) (int, error) {
	var clientErr tailBuffer
	cmd := exec.Command(e.Bin, "start", "--attach", id)
	cmd.Stdout = stdout
	cmd.Stderr = io.MultiWriter(stderr, &clientErr)
	// Its own process group: a Ctrl-C at the terminal reaches chalk, which
	// decides what the sandbox gets, not the client.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return -1, e.clientError("start", "", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return -1, ctx.Err()
	case err := <-done:
		if err == nil {
			// The client exits 0 only when the entrypoint did.
			return 0, nil
		}
	}
	// Otherwise the client's own exit status mixes its failures with the
	// entrypoint's; ask the engine what the entrypoint did.
	st, err := e.state(context.WithoutCancel(ctx), id)
	if err != nil {
		return -1, err
	}
	if st.Running {
		return -1, fmt.Errorf("%s start: the client exited while sandbox %s still runs: %s", e.Bin, id, strings.TrimSpace(clientErr.String()))
	}
	if st.Error != "" {
		return st.ExitCode, fmt.Errorf("start sandbox: %s", st.Error)
	}
	if st.OOMKilled {
		return st.ExitCode, ErrOOMKilled
	}
	return st.ExitCode, nil
}

// ErrOOMKilled says the engine killed the sandbox for going over its
// memory.
var ErrOOMKilled = errors.New("the sandbox ran out of memory and the engine killed it")

type state struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
	Error     string
}

func (e *Engine) state(ctx context.Context, id string) (state, error) {
	out, err := e.command(ctx, nil, "inspect", "--type", "container", "--format",
		"{{.State.Running}}\t{{.State.ExitCode}}\t{{.State.OOMKilled}}\t{{.State.Error}}", id)
	if err != nil {
		return state{}, err
	}
	var st state
	f := strings.SplitN(strings.TrimRight(string(out), "\n"), "\t", 4)
	if len(f) < 3 {
		return state{}, fmt.Errorf("%s inspect: unexpected answer %q", e.Bin, out)
	}
	st.Running = f[0] == "true"
	fmt.Sscan(f[1], &st.ExitCode)
	st.OOMKilled = f[2] == "true"
	if len(f) == 4 {
		st.Error = strings.TrimSpace(f[3])
	}
	return st, nil
}

// Signal sends signal to the sandbox's entrypoint.
func (e *Engine) Signal(ctx context.Context, id, signal string) error {
	_, err := e.command(ctx, nil, "kill", "--signal", signal, id)
	return err
}

// Address is the sandbox's IP address on its first network, which the
// host can reach on Linux; empty while it has none.
func (e *Engine) Address(ctx context.Context, id string) (string, error) {
	out, err := e.command(ctx, nil, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", id)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(strings.SplitN(strings.TrimSpace(string(out))+" ", " ", 2)[0]), nil
}

// CopyFrom streams path out of the sandbox as a tar archive.
func (e *Engine) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	cmd := exec.CommandContext(ctx, e.Bin, "cp", id+":"+path, "-")
	var stderr tailBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, e.clientError("cp", "", err)
	}
	return &cmdReader{ReadCloser: out, cmd: cmd, stderr: &stderr, e: e}, nil
}

type cmdReader struct {
	io.ReadCloser
	cmd    *exec.Cmd
	stderr *tailBuffer
	e      *Engine
}

func (r *cmdReader) Close() error {
	_, _ = io.Copy(io.Discard, r.ReadCloser)
	if err := r.cmd.Wait(); err != nil {
		return r.e.clientError("cp", r.stderr.String(), err)
	}
	return nil
}

// Remove force-removes the sandbox and its anonymous volumes.
func (e *Engine) Remove(ctx context.Context, id string) error {
	_, err := e.command(ctx, nil, append(e.removeArgs(), id)...)
	if isAbsent(err) {
		return nil
	}
	return err
}

// List returns the sandboxes that carry all of labels.
func (e *Engine) List(ctx context.Context, labels map[string]string) ([]runtime.SandboxInfo, error) {
	args := []string{"ps", "--all", "--quiet", "--no-trunc"}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f := k
		if labels[k] != "" {
			f += "=" + labels[k]
		}
		args = append(args, "--filter", "label="+f)
	}
	out, err := e.command(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return nil, nil
	}
	return e.inspect(ctx, ids)
}

// LabelArgs renders labels as --label flags, in a stable order.
func LabelArgs(labels map[string]string) []string {
	var args []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	return args
}

// BuildArgs builds req with the client's own build command (BuildKit
// underneath for nerdctl, podman's builder for podman).
func BuildArgs(req runtime.BuildRequest) []string {
	args := []string{"build", "--tag", req.Tag, "--file", req.Containerfile}
	return append(append(args, LabelArgs(req.Labels)...), req.Dir)
}

// RemoveImage deletes an image.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	_, err := e.command(ctx, nil, "image", "rm", "--force", ref)
	return err
}

// RemoveCommand is the command a person runs to remove a kept sandbox.
func (e *Engine) RemoveCommand(name string) string {
	return e.Bin + " " + strings.Join(append(e.removeArgs(), name), " ")
}

func (e *Engine) removeArgs() []string {
	if e.RemoveArgs != nil {
		return slices.Clone(e.RemoveArgs)
	}
	return []string{"rm", "--force", "--volumes"}
}
