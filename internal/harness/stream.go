package harness

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// Stream is where the harness's events go: appended to the run's event
// log (a file in the run's private directory, which the host can read
// after the sandbox ends) and served to the host over a websocket, each
// event under its sequence number, so that a client that reconnects
// resumes after the last one it saw, losing none and repeating none.
type Stream struct {
	f *os.File

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every append
	offsets   []int64       // offsets[i] is where event seq i+1 starts
	size      int64
	finished  bool // run.finished is in
	delivered bool // a client took every event through run.finished and closed cleanly
	clients   int  // clients that ever connected
}

// NewStream writes the event log at path.
func NewStream(path string) (*Stream, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the event log: %w", err)
	}
	return &Stream{f: f, changed: make(chan struct{})}, nil
}

// Write takes one encoded event, newline included, as transcript.Writer
// writes them.
func (s *Stream) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.f.Write(b)
	if err != nil {
		return n, err
	}
	s.offsets = append(s.offsets, s.size)
	s.size += int64(n)
	if h, ok := transcript.ReadHeader(b); ok && h.Type == transcript.RunFinished {
		s.finished = true
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return n, nil
}

// Close closes the log.
func (s *Stream) Close() error { return s.f.Close() }

// event reads event seq (from 1) and what comes after.
func (s *Stream) event(seq int64) (line []byte, more <-chan struct{}, done bool, err error) {
	s.mu.Lock()
	n := int64(len(s.offsets))
	if seq > n {
		ch, fin := s.changed, s.finished
		s.mu.Unlock()
		return nil, ch, fin, nil
	}
	start, end := s.offsets[seq-1], s.size
	if seq < n {
		end = s.offsets[seq]
	}
	s.mu.Unlock()
	line = make([]byte, end-start)
	if _, err := s.f.ReadAt(line, start); err != nil {
		return nil, nil, false, err
	}
	return bytes.TrimRight(line, "\n"), nil, false, nil
}

// Drained waits until a client has taken every event up to
// run.finished (it answered the closing handshake that follows it): the harness lingers for the host before the sandbox
// ends, up to d when a client is following, and a moment when none ever
// connected (the host then reads the event log from the run's directory).
func (s *Stream) Drained(d time.Duration) {
	start := time.Now()
	for time.Since(start) < d {
		s.mu.Lock()
		done, nobody := s.delivered, s.clients == 0
		s.mu.Unlock()
		if done || nobody && time.Since(start) > 2*time.Second {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Handler serves GET /events?after=N as a websocket to a client that
// presents token as a bearer token: every event after seq N, one text
// message each, then every new one as it comes. Once it has sent
// run.finished, it waits for the client's "ack N" (or for the client to
// go), then closes.
func (s *Stream) Handler(token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) != 1 {
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		if r.URL.Query().Get("after") == "" {
			after, err = 0, nil
		}
		if err != nil || after < 0 {
			http.Error(w, "after must be a sequence number", http.StatusBadRequest)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.clients++
		s.mu.Unlock()
		defer c.CloseNow()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		acked := make(chan struct{})
		go s.readAcks(ctx, cancel, c, acked)
		for seq := after + 1; ; {
			line, more, done, err := s.event(seq)
			if err != nil {
				c.Close(websocket.StatusInternalError, "read the event log")
				return
			}
			if line == nil {
				if done {
					// Stay until the client acknowledges run.finished,
					// or goes.
					select {
					case <-acked:
						c.Close(websocket.StatusNormalClosure, "run finished")
					case <-ctx.Done():
					}
					return
				}
				select {
				case <-more:
					continue
				case <-ctx.Done():
					return
				}
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = c.Write(wctx, websocket.MessageText, line)
			cancel()
			if err != nil {
				return
			}
			seq++
		}
	})
}

// readAcks reads the client's acknowledgements, "ack N": an ack of
// run.finished's number means the client has every event, and the
// harness need not linger for it. The client going away ends ctx.
func (s *Stream) readAcks(ctx context.Context, cancel func(), c *websocket.Conn, acked chan struct{}) {
	defer cancel()
	once := false
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(string(msg), "ack "), 10, 64)
		if err != nil {
			continue
		}
		s.mu.Lock()
		all := s.finished && n >= int64(len(s.offsets))
		if all {
			s.delivered = true
		}
		s.mu.Unlock()
		if all && !once {
			once = true
			close(acked)
		}
	}
}
