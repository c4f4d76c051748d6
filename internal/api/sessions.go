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
	l, err := s.launch(ctx, c, port)
	if err != nil {
		writeError(w, err)
		return
	}
	defer func() { l.close() }()
	ws, err := s.accept(w, r)
	if err != nil {
		_ = l.x.Kill(context.WithoutCancel(ctx))
		l.x.Close()
		return
	}
	log := s.Log.With("owner", who.Owner, "container", c.ID, "kind", "proxy", "port", port)
	log.Info("session opened", "connector", string(l.conn), "socket", l.sock != nil)
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // after finish: ending ctx closes ws
	go session.KeepAlive(ctx, ws, s.Keepalive, func() { log.Info("session peer stopped answering pings") })
	lower := streamConn(r)
	in := s.takeInput(ctx, ws)
	var ex session.Exit
	for {
		stderr := &connectorErrors{conn: l.conn, x: l.x}
		var why error
		if l.sock == nil {
			ex = s.bridge(ctx, ws, lower, l.x, stderr, in)
		} else {
			ex, why = s.bridgeSocket(ctx, ws, lower, l.x, l.sock, stderr, in)
		}
		if why == nil || errors.Is(why, errConnectorMissing) && !l.known || isClosed(in.gone) {
			if ex.Kind == session.ErrNotFound && l.known {
				// Through stdio the missing connector shows only once
				// input has gone its way: no second try, but the next
				// session probes again.
				s.forgetConnector(c.ID)
			}
			ex = s.explain(ctx, ws, ex, stderr, l.conn, c.Name, port)
			break
		}
		// Nothing has moved yet: start another connector.
		if errors.Is(why, errConnectorMissing) {
			// The connector noted at an earlier session is gone from
			// the container: look again.
			s.forgetConnector(c.ID)
		} else {
			// The socket was out of socat's reach (a directory replaced
			// on the host, a security module), or its connection could
			// not be checked: carry on as without one, from now on.
			s.note(c.ID, func(n *connectorNote) { n.socketless = true })
			log.Warn("session socket unusable; using docker exec's stdio", "why", why.Error(), "complaint", strings.TrimSpace(stderr.text()))
		}
		l.close()
		if l, err = s.launch(ctx, c, port); err != nil {
			ex = session.Exit{Code: -1, Error: err.Error(), Kind: session.ErrFailed}
			if ae := (*apiError)(nil); errors.As(err, &ae) {
				ex = session.Exit{Code: -1, Error: ae.Msg, Kind: ae.Code, Hint: ae.Hint}
			}
			l = &launched{}
			break
		}
		log.Info("session connector replaced", "connector", string(l.conn), "socket", l.sock != nil)
	}
	s.finish(ws, ex)
	log.Info("session closed", "duration_ms", time.Since(start).Milliseconds(), "exit", ex.Code)
}

// launched is a session's connector, started.
type launched struct {
	conn  session.Connector
	known bool // conn was noted at an earlier session, not probed for
	sock  *hostclass.SessionSocket
	x     *hostclass.Exec
}

// close closes the session's socket, if it has one.
func (l *launched) close() {
	if l.sock != nil {
		l.sock.Close()
	}
}

// launch starts a connector in container c for a session to port: the
// best the container has, dialling a session socket when it can.
func (s *Server) launch(ctx context.Context, c store.Container, port int) (*launched, error) {
	for {
		conn, known, err := s.connectorFor(ctx, c.ID, c.EngineID)
		if err != nil {
			return nil, err
		}
		l := &launched{conn: conn, known: known, sock: s.sessionSocket(c.ID, conn)}
		cmd := conn.Command(port)
		if l.sock != nil {
			cmd = conn.SocketCommand(port, l.sock.Path)
		}
		l.x, err = s.Host.StartExec(ctx, c.EngineID, hostclass.ExecSpec{Cmd: cmd})
		if err == nil {
			return l, nil
		}
		l.close()
		if !known || !errors.Is(err, hostclass.ErrNoExecutable) {
			return nil, fmt.Errorf("start the connector (%s) in container %s: %w", conn, c.Name, err)
		}
		// The connector noted at an earlier session is gone from the
		// container: look again (this time not from a note).
		s.forgetConnector(c.ID)
	}
}

// explain turns a proxy session's exit into words: a refused port, a
// connector that failed, or its complaints passed on to the person.
func (s *Server) explain(ctx context.Context, ws *websocket.Conn, ex session.Exit, stderr *connectorErrors, conn session.Connector, name string, port int) session.Exit {
	switch {
	case ex.Code != 0 && session.Refused(stderr.text()):
		ex.Kind = session.ErrNotListening
		ex.Error = fmt.Sprintf("nothing is listening on 127.0.0.1:%d in container %s", port, name)
		ex.Hint = fmt.Sprintf("start the server in the container, or check the port it listens on: chalk session exec %s sh -- -c 'ss -ltn || netstat -ltn'", name)
		return ex
	case ex.Kind == session.ErrNotFound:
		ex.Error = fmt.Sprintf("the connector (%s) is no longer in container %s", conn, name)
		ex.Hint = "try again: the next session looks for another; " + session.NoConnectorHint
	case ex.Code > 128 && ex.Code < 128+65 && ex.Error == "":
		// Killed: by the server ending its sessions, or with its
		// container.
		ex.Kind = session.ErrFailed
		ex.Error = fmt.Sprintf("the connector (%s) in container %s was killed (signal %d): the container stopped, or the server ended the session", conn, name, ex.Code-128)
	case ex.Code > 0 && ex.Error == "":
		ex.Kind = session.ErrFailed
		ex.Error = fmt.Sprintf("the connector (%s) in container %s failed with exit status %d", conn, name, ex.Code)
	}
	if t := stderr.text(); t != "" {
		// What the connector complained about, for the person to read.
		_ = ws.Write(ctx, websocket.MessageBinary, append([]byte{session.KindStderr}, t...))
	}
	return ex
}

// bridge moves a session's bytes between ws and the process x until the
// process ends or the client goes away, whichever is first; either way
// the process and everything it started are killed. It returns the exit
// to report. ctx must outlive the call until the exit is sent: ending it
// closes ws. lower, when not nil, is the connection under ws (see
// frameWriter).
func (s *Server) bridge(ctx context.Context, ws *websocket.Conn, lower *session.BufConn, x *hostclass.Exec, stderr stderrSink, in *sessionInput) session.Exit {
	defer s.attend(ctx, x)()
	in.attach(x, func() { s.cut(ctx, x, x.Close) })
	out := &frameWriter{ws: ws, ctx: ctx, kind: session.KindData, lower: lower}
	if ex, failed := startExit(x.Output(out, stderr)); failed {
		return ex
	}
	select {
	case <-in.gone:
		return session.Exit{Code: -1}
	default:
	}
	return s.processExit(ctx, x, nil)
}

// startExit is the exit of a process that could not start, when err
// says so (the daemon reports a missing program once it runs it).
func startExit(err error) (session.Exit, bool) {
	var se *hostclass.StartError
	if !errors.As(err, &se) {
		return session.Exit{}, false
	}
	if se.NotFound() {
		return session.Exit{Code: 127, Error: "command not found in the container: " + se.Msg, Kind: session.ErrNotFound,
			Hint: "check the command's name, or give its full path"}, true
	}
	return session.Exit{Code: 126, Error: "the command could not start: " + se.Msg, Kind: session.ErrFailed}, true
}

// errConnectorMissing is a session's connector that was not in the
// container.
var errConnectorMissing = errors.New("the connector is not in the container")

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

// cut ends a session's process x when its client has gone, and calls
// close, which ends the session's output.
func (s *Server) cut(ctx context.Context, x *hostclass.Exec, close func() error) {
	_ = x.Kill(context.WithoutCancel(ctx))
	_ = close()
}

// bridgeSocket is bridge for a connector that carries the bytes over
// sock rather than its stdio, which then only reports its complaints.
// The session's output ends when the port's side of the connection
// does; the connector is then told its input ended too, and exits.
//
// When the connector could not reach sock, or its connection could not
// be told from another process's, it returns why, having sent nothing:
// the session can go on through a connector's stdio.
func (s *Server) bridgeSocket(ctx context.Context, ws *websocket.Conn, lower *session.BufConn, x *hostclass.Exec, sock *hostclass.SessionSocket, stderr *connectorErrors, in *sessionInput) (session.Exit, error) {
	defer s.attend(ctx, x)()
	exited := make(chan struct{})
	outErr := make(chan error, 1)
	go func() {
		defer close(exited)
		outErr <- x.Output(io.Discard, stderr)
	}()
	// The client's input is held meanwhile; its going ends the wait.
	actx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-in.gone:
			cancel()
		case <-actx.Done():
		}
	}()
	uc, err := sock.Accept(actx, x, exited, 30*time.Second)
	cancel()
	sock.Close() // no one else may connect; the file goes at once
	switch {
	case isClosed(in.gone):
		if uc != nil {
			uc.Close()
		}
		return session.Exit{Code: -1}, nil
	case errors.Is(err, hostclass.ErrUnverified):
		return session.Exit{}, err
	case errors.Is(err, hostclass.ErrConnectorGone):
		// socat dials the socket first: a complaint about it means the
		// socket was out of reach, and the port was never touched.
		ex := s.processExit(ctx, x, exited)
		var err error
		select {
		case err = <-outErr:
		default:
		}
		if sx, failed := startExit(err); failed {
			ex = sx
			if sx.Kind == session.ErrNotFound {
				return ex, errConnectorMissing
			}
			return ex, nil
		}
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

	in.attach(uc, func() { s.cut(ctx, x, uc.Close) })
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
	if isClosed(in.gone) {
		return session.Exit{Code: -1}, nil
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
	if s.noteOf(id).socketless {
		return nil
	}
	sock, err := s.Host.ListenSession(id)
	if err != nil {
		s.Log.Warn("session socket unusable; using docker exec's stdio", "container", id, "why", err.Error())
		return nil
	}
	return sock
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
	ex := s.bridge(ctx, ws, lower, x, &frameWriter{ws: ws, ctx: ctx, kind: session.KindStderr, lower: lower}, s.takeInput(ctx, ws))
	s.finish(ws, ex)
	log.Info("session closed", "duration_ms", time.Since(begin).Milliseconds(), "exit", ex.Code)
}
