package api

import (
	"context"
	"sync"

	"github.com/coder/websocket"
)

// heldMax is how much of the client's input a session holds while no
// process takes it yet (a connector starting): enough for any protocol's
// greeting, and the websocket is read, and its pings answered, meanwhile.
const heldMax = 1 << 20

// sessionInput takes the client's input for a session's whole life and
// passes it to the process serving the session, once one is attached.
// A session's input has one reader (see takeInput), started as soon as
// the websocket is open.
type sessionInput struct {
	mu        sync.Mutex
	changed   *sync.Cond
	to        input  // nil until attached
	stop      func() // ends the attached process; for when the client goes
	held      []byte
	size      *pendingSize
	eof       bool // the client's input ended before a process took it
	attaching bool // held input is being handed over
	left      bool
	gone      chan struct{} // closed when the client left or stopped answering
}

func newSessionInput() *sessionInput {
	in := &sessionInput{gone: make(chan struct{})}
	in.changed = sync.NewCond(&in.mu)
	return in
}

// takeInput starts reading the client's messages on ws into a new
// sessionInput, until the client goes.
func (s *Server) takeInput(ctx context.Context, ws *websocket.Conn) *sessionInput {
	in := newSessionInput()
	go func() {
		_ = s.readInput(ctx, ws, in)
		in.leave()
	}()
	return in
}

// Write passes p to the attached process, or holds it until one is. With
// heldMax bytes held it waits.
func (in *sessionInput) Write(p []byte) (int, error) {
	in.mu.Lock()
	for !in.left && (in.attaching || in.to == nil && len(in.held)+len(p) > heldMax) {
		in.changed.Wait()
	}
	to, left := in.to, in.left
	if to == nil && !left {
		in.held = append(in.held, p...)
	}
	in.mu.Unlock()
	if to != nil {
		return to.Write(p)
	}
	return len(p), nil
}

// CloseWrite passes the end of the client's input on.
func (in *sessionInput) CloseWrite() error {
	in.mu.Lock()
	to := in.to
	if to == nil {
		in.eof = true
	}
	in.mu.Unlock()
	if to != nil {
		return to.CloseWrite()
	}
	return nil
}

// Resize passes a terminal's new size to a process that has one; before
// one is attached, the last size waits for it.
func (in *sessionInput) Resize(ctx context.Context, cols, rows int) error {
	in.mu.Lock()
	to := in.to
	if to == nil {
		in.size = &pendingSize{ctx: ctx, cols: cols, rows: rows}
	}
	in.mu.Unlock()
	if to == nil {
		return nil
	}
	return resize(ctx, to, cols, rows)
}

// pendingSize is a terminal size that came before the process.
type pendingSize struct {
	ctx        context.Context
	cols, rows int
}

func resize(ctx context.Context, to input, cols, rows int) error {
	t, ok := to.(interface {
		Resize(ctx context.Context, cols, rows int) error
	})
	if !ok {
		return nil
	}
	return t.Resize(ctx, cols, rows)
}

// attach makes to the session's input; stop ends to's process when the
// client goes (at once if it has). What was held is handed over in the
// background, so the caller can start taking the process's output at
// once (a process that answers its input would otherwise stall on a full
// output while its input is written); input that arrives meanwhile waits
// its turn. The channel is closed when the handover is done. A session
// attaches one process.
func (in *sessionInput) attach(to input, stop func()) <-chan struct{} {
	in.mu.Lock()
	in.stop, in.attaching = stop, true
	held, left, size := in.held, in.left, in.size
	in.held, in.size = nil, nil
	in.mu.Unlock()
	if left {
		stop()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !left && len(held) > 0 {
			_, _ = to.Write(held)
		}
		if size != nil {
			_ = resize(size.ctx, to, size.cols, size.rows)
		}
		in.mu.Lock()
		in.to, in.attaching = to, false
		eof := in.eof
		in.changed.Broadcast()
		in.mu.Unlock()
		if eof {
			_ = to.CloseWrite()
		}
	}()
	return done
}

// leave records that the client went, and stops the attached process.
func (in *sessionInput) leave() {
	in.mu.Lock()
	if in.left {
		in.mu.Unlock()
		return
	}
	in.left = true
	close(in.gone)
	in.changed.Broadcast()
	stop := in.stop
	in.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
