package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/session"
)

// connectorNote is what the server has learned about a container's
// sessions: the connector to use without probing, and whether its
// session sockets failed. Notes live as long as the server, or until the
// container is removed.
type connectorNote struct {
	// known is set only when the probe found the best connector
	// (socat), so keeping it can never hide a better one installed
	// later. Other connectors are probed for at every session.
	known      session.Connector
	socketless bool
}

// note changes container id's note under the lock.
func (s *Server) note(id string, change func(*connectorNote)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notes == nil {
		s.notes = map[string]*connectorNote{}
	}
	n := s.notes[id]
	if n == nil {
		n = &connectorNote{}
		s.notes[id] = n
	}
	change(n)
}

// noteOf is a copy of container id's note.
func (s *Server) noteOf(id string) connectorNote {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.notes[id]; n != nil {
		return *n
	}
	return connectorNote{}
}

// forgetContainer drops what the server learned about container id.
func (s *Server) forgetContainer(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.notes, id)
}

// connectorFor is the connector for a session in container c: the one
// noted at an earlier session (known reports that), else the best the
// container has now, found by a probe. A known connector that turns out
// to be gone is forgotten by the caller (see forgetConnector).
func (s *Server) connectorFor(ctx context.Context, id, engineID string) (conn session.Connector, known bool, err error) {
	if c := s.noteOf(id).known; c != "" {
		return c, true, nil
	}
	conn, err = s.pickConnector(ctx, engineID)
	if err == nil && conn == session.Order[0] {
		s.note(id, func(n *connectorNote) { n.known = conn })
	}
	return conn, false, err
}

// forgetConnector makes the next session in container id probe again.
func (s *Server) forgetConnector(id string) {
	s.note(id, func(n *connectorNote) { n.known = "" })
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
