package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sys/unix"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/session"
	"github.com/chalk-rl/chalk/internal/store"
)

// ErrNotHostBacked is the seed's own words for a session on a container
// of another compute class.
const ErrNotHostBacked = "container sessions require a host-backed container"

// sessionTarget resolves the container a session is for and checks that
// it can have one.
func (s *Server) sessionTarget(ctx context.Context, owner, ref string) (store.Container, error) {
	c, err := s.find(ctx, owner, ref)
	if err != nil {
		return c, err
	}
	if c.ComputeClass != ClassHost {
		return c, &apiError{Status: http.StatusConflict, Code: wire.CodeNotHostBacked, Msg: ErrNotHostBacked,
			Hint: "recreate the container with --compute-class host; the setting cannot be changed in place"}
	}
	d := s.describe(ctx, c)
	if d.State != store.StateRunning {
		why := d.State
		if d.Reason != "" {
			why += ": " + d.Reason
		}
		return c, &apiError{Status: http.StatusConflict, Code: wire.CodeNotRunning,
			Msg:  fmt.Sprintf("container %s is not running (%s)", c.Name, why),
			Hint: "start a new one with 'chalk container run'; 'chalk container logs " + c.Name + "' shows what it did"}
	}
	return c, nil
}

func (s *Server) accept(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:    []string{session.Subprotocol},
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(session.MaxMessage)
	return ws, nil
}

func (s *Server) proxySession(w http.ResponseWriter, r *http.Request, who store.Token) {
	ctx := r.Context()
	port := 22
	if p := r.URL.Query().Get("port"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			writeError(w, badRequest("pass --port a TCP port number, 1 to 65535", fmt.Sprintf("port %q is not a TCP port", p)))
			return
		}
		port = n
	}
	c, err := s.sessionTarget(ctx, who.Owner, r.PathValue("ref"))
	if err != nil {
		writeError(w, err)
		return
	}
	conn, err := s.pickConnector(ctx, c.EngineID)
	if err != nil {
		writeError(w, err)
		return
	}
	// The bytes go through a unix socket when the container has a
	// socket directory and the connector can dial one; else through the
	// connector's stdio.
	cmd := conn.Command(port)
	sock := s.sessionSocket(c.ID, conn)
	if sock != nil {
		defer sock.Close()
		cmd = conn.SocketCommand(port, sock.Path)
	}
	x, err := s.Host.StartExec(ctx, c.EngineID, hostclass.ExecSpec{Cmd: cmd})
	if err != nil {
		writeError(w, fmt.Errorf("start the connector (%s) in container %s: %w", conn, c.Name, err))
		return
	}
	ws, err := s.accept(w, r)
	if err != nil {
		_ = x.Kill(context.WithoutCancel(ctx))
		x.Close()
		return
	}
	log := s.Log.With("owner", who.Owner, "container", c.ID, "kind", "proxy", "port", port, "connector", string(conn), "socket", sock != nil)
	log.Info("session opened")
	start := time.Now()
	stderr := &connectorErrors{conn: conn, x: x}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // after finish: ending ctx closes ws
	go session.KeepAlive(ctx, ws, s.Keepalive, func() { log.Info("session peer stopped answering pings") })
	lower := streamConn(r)
	var ex session.Exit
	stdio := sock == nil
	if sock != nil {
		var why error
		ex, why = s.bridgeSocket(ctx, ws, lower, x, sock, stderr)
		if stdio = why != nil; stdio {
			// The socket was out of socat's reach (a directory replaced
			// on the host, a security module), or its connection could
			// not be checked: carry on as without one, from now on.
			s.noSockets(c.ID)
			log.Warn("session socket unusable; using docker exec's stdio", "why", why.Error(), "complaint", strings.TrimSpace(stderr.text()))
			x, err = s.Host.StartExec(ctx, c.EngineID, hostclass.ExecSpec{Cmd: conn.Command(port)})
			if err != nil {
				ex = session.Exit{Code: -1, Error: fmt.Sprintf("start the connector (%s) in container %s: %v", conn, c.Name, err), Kind: session.ErrFailed}
				stdio = false
			}
			stderr = &connectorErrors{conn: conn, x: x}
		}
	}
	if stdio {
		ex = s.bridge(ctx, ws, lower, x, stderr)
	}
	if ex.Code != 0 && session.Refused(stderr.text()) {
		ex.Kind = session.ErrNotListening
		ex.Error = fmt.Sprintf("nothing is listening on 127.0.0.1:%d in container %s", port, c.Name)
		ex.Hint = fmt.Sprintf("start the server in the container, or check the port it listens on: chalk session exec %s sh -- -c 'ss -ltn || netstat -ltn'", c.Name)
	} else if t := stderr.text(); t != "" {
		// What the connector complained about, for the person to read.
		_ = ws.Write(ctx, websocket.MessageBinary, append([]byte{session.KindStderr}, t...))
	}
	s.finish(ws, ex)
	log.Info("session closed", "duration_ms", time.Since(start).Milliseconds(), "exit", ex.Code)
}

// pickConnector finds the best connector in the container: with a shell,
// one probe answers; without one, each connector is tried directly.
func (s *Server) pickConnector(ctx context.Context, engineID string) (session.Connector, error) {
	var out bytes.Buffer
	code, err := s.runQuiet(ctx, engineID, []string{"sh", "-c", session.ProbeScript}, &out)
	if err == nil && code == 0 {
		if c, ok := session.ParseProbe(out.String()); ok {
			return c, nil
		}
	}
	if err == nil && code == 3 {
		return "", noConnector()
	}
	// No shell (or it failed): try the programs themselves.
	for _, c := range session.Order {
		code, err := s.runQuiet(ctx, engineID, c.VersionProbe(), nil)
		if errors.Is(err, hostclass.ErrNoExecutable) || code == 126 || code == 127 {
			continue
		}
		if err != nil {
			return "", err
		}
		return c, nil
	}
	return "", noConnector()
}

func noConnector() error {
	return &apiError{Status: http.StatusConflict, Code: session.ErrNoConnector, Msg: session.ErrNoConnectorText, Hint: session.NoConnectorHint}
}

// runQuiet runs cmd in the container to its end and returns its exit
// code, with its stdout in out.
func (s *Server) runQuiet(ctx context.Context, engineID string, cmd []string, out *bytes.Buffer) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	x, err := s.Host.StartExec(ctx, engineID, hostclass.ExecSpec{Cmd: cmd})
	if err != nil {
		return -1, err
	}
	defer x.Close()
	_ = x.CloseWrite()
	var sink bytes.Buffer
	if out == nil {
		out = &sink
	}
	_ = x.Output(out, &sink)
	st, err := x.Wait(ctx)
	return st.ExitCode, err
}

// bridge moves a session's bytes between ws and the process x until the
// process ends or the client goes away, whichever is first; either way
// the process and everything it started are killed. It returns the exit
// to report. ctx must outlive the call until the exit is sent: ending it
// closes ws. lower, when not nil, is the connection under ws (see
// frameWriter).
func (s *Server) bridge(ctx context.Context, ws *websocket.Conn, lower *session.BufConn, x *hostclass.Exec, stderr stderrSink) session.Exit {
	defer s.attend(ctx, x)()
	clientGone := s.passInput(ctx, ws, x, x, x.Close)
	out := &frameWriter{ws: ws, ctx: ctx, kind: session.KindData, lower: lower}
	var startErr *hostclass.StartError
	if err := x.Output(out, stderr); errors.As(err, &startErr) {
		if startErr.NotFound() {
			return session.Exit{Code: 127, Error: "command not found in the container: " + startErr.Msg, Kind: session.ErrNotFound,
				Hint: "check the command's name, or give its full path"}
		}
		return session.Exit{Code: 126, Error: "the command could not start: " + startErr.Msg, Kind: session.ErrFailed}
	}
	select {
	case <-clientGone:
		return session.Exit{Code: -1}
	default:
	}
	return s.processExit(ctx, x, nil)
}

// attend watches over a session's process x while the session runs: it
// is tracked (EndSessions). The returned func, called when the session
// ends, kills x and everything it started: a docker exec outlives its
// connection, and a session leaves nothing behind in the container.
func (s *Server) attend(ctx context.Context, x *hostclass.Exec) func() {
	forget := s.track(x)
	return func() {
		_ = x.Kill(context.WithoutCancel(ctx))
		x.Close()
		forget()
	}
}

// passInput passes the client's messages to in until the client leaves
// (or stops answering); then it kills the session's process x and calls
// cut, which ends the session's output. The channel is closed when it is
// done.
func (s *Server) passInput(ctx context.Context, ws *websocket.Conn, in input, x *hostclass.Exec, cut func() error) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		if err := s.readInput(ctx, ws, in); err != nil {
			_ = x.Kill(context.WithoutCancel(ctx))
			_ = cut()
		}
	}()
	return gone
}

// bridgeSocket is bridge for a connector that carries the bytes over
// sock rather than its stdio, which then only reports its complaints.
// The session's output ends when the port's side of the connection
// does; the connector is then told its input ended too, and exits.
//
// When the connector could not reach sock, or its connection could not
// be told from another process's, it returns why, having sent nothing:
// the session can go on through a connector's stdio.
func (s *Server) bridgeSocket(ctx context.Context, ws *websocket.Conn, lower *session.BufConn, x *hostclass.Exec, sock *hostclass.SessionSocket, stderr *connectorErrors) (session.Exit, error) {
	defer s.attend(ctx, x)()
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = x.Output(io.Discard, stderr)
	}()
	uc, err := sock.Accept(ctx, x, exited, 30*time.Second)
	sock.Close() // no one else may connect; the file goes at once
	switch {
	case errors.Is(err, hostclass.ErrUnverified):
		return session.Exit{}, err
	case errors.Is(err, hostclass.ErrConnectorGone):
		// socat dials the socket first: a complaint about it means the
		// socket was out of reach, and the port was never touched.
		ex := s.processExit(ctx, x, exited)
		if strings.Contains(stderr.text(), hostclass.SocketMount) {
			return ex, errors.New("the connector could not reach its socket")
		}
		return ex, nil
	case err != nil:
		return session.Exit{Code: -1, Error: "the connector: " + err.Error(), Kind: session.ErrFailed}, nil
	}
	defer uc.Close()
	_ = uc.SetReadBuffer(1 << 20)
	_ = uc.SetWriteBuffer(1 << 20)

	clientGone := s.passInput(ctx, ws, uc, x, uc.Close)
	out := &frameWriter{ws: ws, ctx: ctx, kind: session.KindData, lower: lower}
	// Read after room for the kind byte: each message goes out as it
	// was read, uncopied.
	msg := make([]byte, 1+session.DataSize)
	msg[0] = session.KindData
	buf := msg[1:]
	for {
		n, err := uc.Read(buf)
		if n > 0 && err == nil {
			n += drain(uc, buf[n:])
		}
		if n > 0 {
			if werr := out.send(msg[:1+n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	// The port's side ended (or the connector did). Closing the socket
	// ends the connector's other direction, so it exits.
	uc.Close()
	select {
	case <-clientGone:
		return session.Exit{Code: -1}, nil
	default:
	}
	// A refused port shows here too: socat connected to the socket, then
	// failed to reach the port and exited (the caller explains it).
	return s.processExit(ctx, x, exited), nil
}

// sessionSocket is a socket for conn to carry a session in container
// id, or nil for the connector's stdio: conn cannot dial one, the
// container has no socket directory, or its socket failed before.
func (s *Server) sessionSocket(id string, conn session.Connector) *hostclass.SessionSocket {
	if !conn.DialsSockets() {
		return nil
	}
	s.mu.Lock()
	failed := s.socketless[id]
	s.mu.Unlock()
	if failed {
		return nil
	}
	sock, err := s.Host.ListenSession(id)
	if err != nil {
		s.Log.Warn("session socket unusable; using docker exec's stdio", "container", id, "why", err.Error())
		return nil
	}
	return sock
}

// noSockets makes container id's sessions use their connector's stdio
// from now on.
func (s *Server) noSockets(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.socketless == nil {
		s.socketless = map[string]bool{}
	}
	s.socketless[id] = true
}

// drain reads what c already holds into buf without waiting, so that
// bytes that arrived in pieces leave as one message.
func drain(c syscall.Conn, buf []byte) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	total := 0
	for total < len(buf) {
		var n int
		var rerr error
		if err := raw.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf[total:])
			return true // one attempt: never wait
		}); err != nil || rerr != nil || n <= 0 {
			break
		}
		total += n
	}
	return total
}

// processExit waits for a process whose output has ended, or is about
// to (exited, when not nil, is closed when its stdio has), and reports
// its exit.
func (s *Server) processExit(ctx context.Context, x *hostclass.Exec, exited <-chan struct{}) session.Exit {
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if exited != nil {
		select {
		case <-exited:
		case <-wctx.Done():
		}
	}
	st, err := x.Wait(wctx)
	if err != nil {
		return session.Exit{Code: -1, Error: "the session's process: " + err.Error(), Kind: session.ErrFailed}
	}
	return session.Exit{Code: st.ExitCode}
}

// input is where a session's input goes: a process's stdin, or the
// connector's socket.
type input interface {
	io.Writer
	CloseWrite() error
}

// readInput passes the client's messages to in until the stream ends,
// streaming data through one buffer. Resizes reach in when it has a
// terminal.
func (s *Server) readInput(ctx context.Context, ws *websocket.Conn, in input) error {
	buf := make([]byte, session.DataSize)
	for {
		_, r, err := ws.Reader(ctx)
		if err != nil {
			return err
		}
		var kind [1]byte
		if _, err := io.ReadFull(r, kind[:]); err != nil {
			continue
		}
		switch kind[0] {
		case session.KindData:
			// The whole message at once (TLS hands it over in 16 KiB
			// records): fewer, larger writes to the daemon. A process
			// that stopped reading its input is not the session's end:
			// write errors are ignored, its output may go on.
			for {
				n, rerr := io.ReadFull(r, buf)
				if n > 0 {
					_, _ = in.Write(buf[:n])
				}
				if rerr != nil {
					break
				}
			}
		case session.KindCloseIn:
			_ = in.CloseWrite()
		case session.KindResize:
			data, _ := io.ReadAll(io.LimitReader(r, 4096))
			var rs session.Resize
			t, ok := in.(interface {
				Resize(ctx context.Context, cols, rows int) error
			})
			if ok && json.Unmarshal(data, &rs) == nil {
				_ = t.Resize(ctx, rs.Cols, rs.Rows)
			}
		default:
			_, _ = io.Copy(io.Discard, r)
		}
	}
}

// finish sends the exit and closes the stream.
func (s *Server) finish(ws *websocket.Conn, ex session.Exit) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ex.Code != -1 || ex.Error != "" {
		_ = ws.Write(ctx, websocket.MessageBinary, session.Encode(session.KindExit, ex))
	}
	ws.Close(websocket.StatusNormalClosure, "")
}

// frameWriter sends each write as one message of its kind, in one
// system call when the connection is a BufConn.
type frameWriter struct {
	ws    *websocket.Conn
	ctx   context.Context
	kind  byte
	buf   []byte
	lower *session.BufConn
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.buf = append(append(f.buf[:0], f.kind), p...)
	if err := f.send(f.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// send sends msg, its kind byte included, as one message.
func (f *frameWriter) send(msg []byte) error {
	return f.lower.Gathered(func() error {
		return f.ws.Write(f.ctx, websocket.MessageBinary, msg)
	})
}

type stderrSink interface {
	Write(p []byte) (int, error)
}

// connectorErrors handles a proxy connector's stderr: its notices are
// read (socat's note that the port's side is at EOF ends the session),
// its complaints are kept, to be explained or passed on at the end.
type connectorErrors struct {
	conn    session.Connector
	x       *hostclass.Exec
	mu      sync.Mutex
	partial []byte
	kept    strings.Builder
}

func (c *connectorErrors) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		line := string(c.partial[:i+1])
		c.partial = c.partial[i+1:]
		switch {
		case session.PortEOF(c.conn, line):
			// The port's side closed. socat would wait for its input to
			// end too; end it, so socat exits once it has written
			// everything, and the session ends with it.
			_ = c.x.CloseWrite()
		case session.Notice(c.conn, line):
		default:
			if c.kept.Len() < 4096 {
				c.kept.WriteString(line)
			}
		}
	}
	return len(p), nil
}

func (c *connectorErrors) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kept.String() + string(c.partial)
}

func (s *Server) execSession(w http.ResponseWriter, r *http.Request, who store.Token) {
	ctx := r.Context()
	c, err := s.sessionTarget(ctx, who.Owner, r.PathValue("ref"))
	if err != nil {
		writeError(w, err)
		return
	}
	ws, err := s.accept(w, r)
	if err != nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, msg, err := ws.Read(rctx)
	cancel()
	var start session.Start
	if err == nil && (len(msg) == 0 || msg[0] != session.KindStart || session.Decode(msg, &start) != nil || len(start.Cmd) == 0) {
		err = errors.New("the session did not start with a command")
	}
	if err != nil {
		s.finish(ws, session.Exit{Code: -1, Error: err.Error(), Kind: session.ErrFailed})
		return
	}
	log := s.Log.With("owner", who.Owner, "container", c.ID, "kind", "exec", "tty", start.TTY)
	x, err := s.Host.StartExec(ctx, c.EngineID, hostclass.ExecSpec{Cmd: start.Cmd, TTY: start.TTY, Env: start.Env, Cols: start.Cols, Rows: start.Rows})
	if err != nil {
		ex := session.Exit{Code: 126, Error: fmt.Sprintf("start %s in container %s: %v", start.Cmd[0], c.Name, err), Kind: session.ErrFailed}
		if errors.Is(err, hostclass.ErrNoExecutable) {
			ex = session.Exit{Code: 127, Error: fmt.Sprintf("%s: command not found in container %s", start.Cmd[0], c.Name),
				Kind: session.ErrNotFound, Hint: "check the command's name, or give its full path"}
		}
		s.finish(ws, ex)
		return
	}
	if start.TTY {
		_ = x.Resize(ctx, start.Cols, start.Rows)
	}
	log.Info("session opened", "cmd", start.Cmd[0])
	begin := time.Now()
	ctx, stop := context.WithCancel(ctx)
	defer stop() // after finish: ending ctx closes ws
	go session.KeepAlive(ctx, ws, s.Keepalive, func() { log.Info("session peer stopped answering pings") })
	lower := streamConn(r)
	ex := s.bridge(ctx, ws, lower, x, &frameWriter{ws: ws, ctx: ctx, kind: session.KindStderr, lower: lower})
	s.finish(ws, ex)
	log.Info("session closed", "duration_ms", time.Since(begin).Milliseconds(), "exit", ex.Code)
}
