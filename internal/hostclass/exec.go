package hostclass

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// ExecSpec is a process to start inside a running container.
type ExecSpec struct {
	Cmd []string
	Env []string
	TTY bool
	// Cols and Rows are the terminal's first size (TTY only).
	Cols, Rows int
}

// Exec is a process running inside a container, attached over one
// connection to the docker daemon: writes go to its stdin, and Read
// functions deliver its stdout and stderr.
type Exec struct {
	h    *Host
	ID   string
	tty  bool
	conn net.Conn
	br   *bufio.Reader

	closeOnce sync.Once
}

// ErrNoExecutable is returned by Start when Cmd[0] does not exist in the
// container.
var ErrNoExecutable = errors.New("executable not found in the container")

// apiCall makes one plain request to the daemon's API and decodes the
// JSON answer into out (when out is not nil).
func (h *Host) apiCall(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://docker"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("docker API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		var e struct{ Message string }
		_ = json.Unmarshal(data, &e)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		return &APIError{Status: resp.StatusCode, Message: e.Message}
	}
	if out != nil && len(data) > 0 {
		return json.Unmarshal(data, out)
	}
	return nil
}

// APIError is an error answer from the docker daemon.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("docker: %s (HTTP %d)", e.Message, e.Status) }

func (h *Host) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", h.Socket)
}

func (h *Host) httpClient() *http.Client {
	h.clientOnce.Do(func() {
		h.client = &http.Client{Transport: &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return h.dial(ctx) },
			MaxIdleConnsPerHost: 16,
		}}
	})
	return h.client
}

// StartExec starts spec in the container and attaches to it.
func (h *Host) StartExec(ctx context.Context, engineID string, spec ExecSpec) (*Exec, error) {
	create := map[string]any{
		"AttachStdin": true, "AttachStdout": true, "AttachStderr": true,
		"Tty": spec.TTY, "Cmd": spec.Cmd, "Env": h.markEnv(spec.Env),
	}
	startBody := map[string]any{"Detach": false, "Tty": spec.TTY}
	if spec.TTY && spec.Cols > 0 && spec.Rows > 0 {
		// Daemons from API 1.42 size the terminal before the process
		// starts; older ones ignore this and get a Resize right after.
		size := []int{spec.Rows, spec.Cols}
		create["ConsoleSize"], startBody["ConsoleSize"] = size, size
	}
	var created struct{ Id string }
	if err := h.apiCall(ctx, "POST", "/containers/"+url.PathEscape(engineID)+"/exec", create, &created); err != nil {
		return nil, err
	}
	conn, err := h.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker API: %w", err)
	}
	body, _ := json.Marshal(startBody)
	req, _ := http.NewRequest("POST", "http://docker/exec/"+created.Id+"/start", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("docker API: start exec: %w", err)
	}
	br := bufio.NewReaderSize(conn, 128<<10)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("docker API: start exec: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		conn.Close()
		msg := strings.TrimSpace(string(data))
		var e struct{ Message string }
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		if notExecutable(msg) {
			return nil, fmt.Errorf("%s: %w", spec.Cmd[0], ErrNoExecutable)
		}
		return nil, &APIError{Status: resp.StatusCode, Message: msg}
	}
	_ = conn.SetDeadline(time.Time{})
	return &Exec{h: h, ID: created.Id, tty: spec.TTY, conn: conn, br: br}, nil
}

// markEnv is env with the Host's Mark added, when it has one.
func (h *Host) markEnv(env []string) []string {
	if h.Mark == "" {
		return env
	}
	return append(slices.Clip(env), SessionEnv+"="+h.Mark)
}

func notExecutable(msg string) bool {
	return strings.Contains(msg, "executable file not found") || strings.Contains(msg, "no such file or directory")
}

// Write sends p to the process's stdin.
func (e *Exec) Write(p []byte) (int, error) { return e.conn.Write(p) }

// CloseWrite ends the process's stdin (EOF), leaving its output open.
func (e *Exec) CloseWrite() error {
	if cw, ok := e.conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close drops the connection. It does not stop the process: see Kill.
func (e *Exec) Close() error {
	var err error
	e.closeOnce.Do(func() { err = e.conn.Close() })
	return err
}

// Output copies the process's stdout and stderr to the two writers until
// the process closes them (with a terminal, everything is stdout). Each
// write carries what the daemon delivered in one piece, at most 128 KiB.
func (e *Exec) Output(stdout, stderr io.Writer) error {
	buf := make([]byte, 128<<10)
	if e.tty {
		for {
			n, err := e.br.Read(buf)
			if n > 0 {
				if _, werr := stdout.Write(buf[:n]); werr != nil {
					return werr
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return ignoreClosed(err)
			}
		}
	}
	var hdr [8]byte
	first := true
	for {
		if _, err := io.ReadFull(e.br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return ignoreClosed(err)
		}
		n := int(binary.BigEndian.Uint32(hdr[4:]))
		if first && n < 4096 {
			// When the process cannot start, the daemon says so as the
			// stream's first and only output.
			first = false
			if p, err := e.br.Peek(n); err == nil && bytes.HasPrefix(p, []byte(startFailure)) {
				msg := strings.TrimSpace(string(p))
				_, _ = e.br.Discard(n)
				return &StartError{Msg: msg}
			}
		}
		w := stdout
		switch hdr[0] {
		case 2:
			w = stderr
		case 0, 1:
		default:
			w = io.Discard
		}
		for n > 0 {
			// Deliver what has arrived without waiting for the rest of
			// the frame: a large frame still moves in pieces.
			chunk := min(n, len(buf))
			if b := e.br.Buffered(); b > 0 && b < chunk {
				chunk = b
			}
			m, err := io.ReadFull(e.br, buf[:chunk])
			if m > 0 {
				if _, werr := w.Write(buf[:m]); werr != nil {
					return werr
				}
			}
			if err != nil {
				return ignoreClosed(err)
			}
			n -= m
		}
	}
}

// startFailure starts the daemon's report of a process that could not
// start.
const startFailure = "OCI runtime exec failed"

// StartError is a process the daemon could not start.
type StartError struct{ Msg string }

func (e *StartError) Error() string { return e.Msg }

// NotFound reports whether the program itself is missing.
func (e *StartError) NotFound() bool { return notExecutable(e.Msg) }

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// ExecState is what the daemon reports about an exec.
type ExecState struct {
	Running  bool
	ExitCode int
	Pid      int
}

// State asks the daemon about the exec.
func (e *Exec) State(ctx context.Context) (ExecState, error) {
	var st ExecState
	err := e.h.apiCall(ctx, "GET", "/exec/"+e.ID+"/json", nil, &st)
	return st, err
}

// Wait waits for a process whose output has ended to be reaped, asking
// the daemon with a growing pause (5 ms to 100 ms), and reports how it
// ended.
func (e *Exec) Wait(ctx context.Context) (ExecState, error) {
	for i := 0; ; i++ {
		st, err := e.State(ctx)
		if err != nil || !st.Running {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(time.Duration(min(i+1, 20)) * 5 * time.Millisecond):
		}
	}
}

// Resize sets the terminal's size.
func (e *Exec) Resize(ctx context.Context, cols, rows int) error {
	if !e.tty || cols <= 0 || rows <= 0 {
		return nil
	}
	return e.h.apiCall(ctx, "POST", fmt.Sprintf("/exec/%s/resize?h=%d&w=%d", e.ID, rows, cols), nil, nil)
}

// Kill ends the process and everything it started, if it still runs.
// A docker exec outlives the connection that started it, so dropping the
// connection is not enough.
func (e *Exec) Kill(ctx context.Context) error {
	st, err := e.State(ctx)
	if err != nil {
		return err
	}
	if !st.Running || st.Pid <= 0 {
		return nil
	}
	return killTree(st.Pid)
}
