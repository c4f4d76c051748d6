package hostclass

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SocketMount is where a container sees its session sockets: a
// directory of the server's host, bind-mounted read-only when the
// container is made. A connector that can open a unix socket (socat)
// moves a session's bytes through one of these instead of through its
// docker exec stdio, which the daemon and the container's shim each
// copy on the way.
const SocketMount = "/run/chalk-session"

// A unix socket's path has room for 107 bytes. Sockets are named
// SocketRoot/<16 of the container's ID>/<16 hex digits>.sock.
const (
	maxSocketPath  = 107
	socketNameHex  = 16 // 64 random bits
	socketNameSize = socketNameHex + len(".sock")
	socketDirSize  = 16
)

// SocketsUsable reports whether the host keeps session sockets: it has
// a SocketRoot, short enough for a socket's path inside it.
func (h *Host) SocketsUsable() bool {
	// The root also goes into docker's --mount, whose value is CSV.
	return h.SocketRoot != "" && len(h.SocketRoot)+1+socketDirSize+1+socketNameSize <= maxSocketPath &&
		!strings.ContainsAny(h.SocketRoot, ",\"\n")
}

// socketDir is container id's directory of session sockets on the host,
// or "" when the host keeps none.
func (h *Host) socketDir(id string) string {
	if !h.SocketsUsable() {
		return ""
	}
	short := strings.ReplaceAll(id, "-", "")
	if len(short) > socketDirSize {
		short = short[:socketDirSize]
	}
	return filepath.Join(h.SocketRoot, short)
}

// makeSocketDir makes container id's socket directory and returns the
// engine flag that mounts it, or nothing when the host keeps none.
func (h *Host) makeSocketDir(id string) ([]string, error) {
	dir := h.socketDir(id)
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make the container's session socket directory: %w", err)
	}
	// Whatever the umask: the container's own user, root or not, must
	// reach the sockets inside it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	return []string{"--mount", "type=bind,source=" + dir + ",target=" + SocketMount + ",readonly"}, nil
}

// PruneSockets deletes the socket directories of containers not in ids
// (removed while the server was not looking, or whose removal failed
// half-way).
func (h *Host) PruneSockets(ids []string) error {
	if !h.SocketsUsable() {
		return nil
	}
	keep := map[string]bool{}
	for _, id := range ids {
		keep[filepath.Base(h.socketDir(id))] = true
	}
	entries, err := os.ReadDir(h.SocketRoot)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && !keep[e.Name()] {
			if err := os.RemoveAll(filepath.Join(h.SocketRoot, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// RemoveSockets deletes container id's socket directory.
func (h *Host) RemoveSockets(id string) error {
	if dir := h.socketDir(id); dir != "" {
		return os.RemoveAll(dir)
	}
	return nil
}

// SessionSocket is a unix socket one connector inside a container dials
// to carry one session.
type SessionSocket struct {
	// Path is the socket's path inside the container.
	Path string
	ln   *net.UnixListener
}

// ListenSession makes a socket for one session in container id's socket
// directory. It returns nil, and no error, when the container has none:
// it was made before the host kept them, or the host keeps none.
func (h *Host) ListenSession(id string) (*SessionSocket, error) {
	dir := h.socketDir(id)
	if dir == "" {
		return nil, nil
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, nil
	}
	var b [socketNameHex / 2]byte
	_, _ = rand.Read(b[:])
	name := hex.EncodeToString(b[:]) + ".sock"
	file := filepath.Join(dir, name)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: file, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen for the connector: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	// The connector runs as the container's user, whoever that is; the
	// name is random and the peer is checked on Accept.
	if err := os.Chmod(file, 0o666); err != nil {
		ln.Close()
		return nil, err
	}
	return &SessionSocket{Path: SocketMount + "/" + name, ln: ln}, nil
}

// Close stops listening and removes the socket's file; later calls do
// nothing more.
func (s *SessionSocket) Close() error { return s.ln.Close() }

// ErrConnectorGone is Accept's answer when the connector ended without
// connecting.
var ErrConnectorGone = errors.New("the connector ended before it connected")

// ErrUnverified is Accept's answer when it cannot tell the connector's
// connection from another process's: the server cannot see the peer's
// pid (it runs in another pid namespace than the daemon's processes), or
// too many other processes dialled first. The session should go through
// the connector's stdio instead.
var ErrUnverified = errors.New("the connector's connection cannot be told from another process's")

// maxRefused is how many connections from other processes Accept turns
// away before it gives up.
const maxRefused = 32

// Process is what Accept asks about the connector: an *Exec.
type Process interface {
	State(ctx context.Context) (ExecState, error)
}

// Accept waits for process x (or a process it started) to connect,
// refusing connections from any other process, which may have found the
// socket too. It gives up when exited is closed (x ended) and nothing
// connected, when ctx ends, or after timeout.
func (s *SessionSocket) Accept(ctx context.Context, x Process, exited <-chan struct{}, timeout time.Duration) (*net.UnixConn, error) {
	type result struct {
		c   *net.UnixConn
		err error
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan result, 1)
	go func() {
		execPid, refused := 0, 0
		for {
			c, err := s.ln.AcceptUnix()
			if err != nil {
				got <- result{err: err}
				return
			}
			pid, err := peerPid(c)
			if err != nil || pid == 0 {
				c.Close()
				got <- result{err: ErrUnverified}
				return
			}
			if execPid == 0 {
				if execPid, err = execPidOf(actx, x); err != nil {
					c.Close()
					got <- result{err: err}
					return
				}
			}
			if pid == execPid || descends(pid, execPid) {
				got <- result{c: c}
				return
			}
			c.Close()
			if refused++; refused >= maxRefused {
				got <- result{err: ErrUnverified}
				return
			}
		}
	}()
	give := time.NewTimer(timeout)
	defer give.Stop()
	for {
		select {
		case r := <-got:
			if r.err != nil && errors.Is(r.err, os.ErrDeadlineExceeded) {
				return nil, ErrConnectorGone
			}
			return r.c, r.err
		case <-exited:
			// A connector that connected before it ended is already in
			// the backlog: look once more, briefly.
			_ = s.ln.SetDeadline(time.Now().Add(200 * time.Millisecond))
			exited = nil
		case <-ctx.Done():
			s.ln.Close()
			cancel()
			if r := <-got; r.c != nil {
				r.c.Close()
			}
			return nil, ctx.Err()
		case <-give.C:
			s.ln.Close()
			cancel()
			if r := <-got; r.c != nil {
				return r.c, nil
			}
			return nil, fmt.Errorf("the connector did not connect within %s", timeout)
		}
	}
}

// execPidOf is x's pid on this host. The daemon records it a moment
// after the process starts, and a connector may be quicker than that.
func execPidOf(ctx context.Context, x Process) (int, error) {
	for i := 0; ; i++ {
		st, err := x.State(ctx)
		if err != nil {
			return 0, err
		}
		if st.Pid != 0 || !st.Running && i > 0 {
			return st.Pid, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
