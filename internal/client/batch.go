package client

import (
	"encoding/binary"
	"net"
	"sync"

	"github.com/chalk-rl/chalk/internal/session"
)

// frameBatcher is the connection under a session's websocket on the
// client's side. A client must mask what it sends, and the websocket
// library masks a message through a 4 KiB buffer that it writes out each
// time it fills: under TLS, one record and one system call per 4 KiB,
// which caps a tunnel's upload well below what TLS can carry.
// frameBatcher reads each frame's header as it passes, holds the writes
// of a frame until the frame is complete, and then sends them in one
// write. Control frames and small messages go out as soon as they are
// whole, so nothing waits on a timer.
//
// Until Frames is called (the HTTP upgrade is still being written) it
// passes writes straight through.
type frameBatcher struct {
	net.Conn
	// lower, when set, is the connection under TLS: the records of one
	// write are gathered there and leave in one system call.
	lower *session.BufConn

	mu      sync.Mutex
	framing bool
	held    []byte
	hdr     []byte // the current frame's header, while incomplete
	left    uint64 // the current frame's payload still to come
	inFrame bool
}

// maxHeld bounds what is held: a frame larger than this is sent in
// pieces of about this size.
const maxHeld = 1 << 20

// Frames starts batching: every write from now on is websocket frames.
func (f *frameBatcher) Frames() {
	f.mu.Lock()
	f.framing = true
	f.mu.Unlock()
}

func (f *frameBatcher) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.framing {
		return f.Conn.Write(p)
	}
	f.scan(p)
	if !f.inFrame && len(f.held) == 0 {
		// Whole frames and nothing held: no copy needed.
		return f.send(p)
	}
	f.held = append(f.held, p...)
	if f.inFrame && len(f.held) < maxHeld {
		return len(p), nil
	}
	_, err := f.send(f.held)
	f.held = f.held[:0]
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *frameBatcher) send(p []byte) (n int, err error) {
	var werr error
	err = f.lower.Gathered(func() error {
		n, werr = f.Conn.Write(p)
		return werr
	})
	if werr == nil && err != nil {
		return 0, err // the gathered records did not leave
	}
	return n, werr
}

// scan follows the frames in p: after it, inFrame says whether p ended
// inside a frame.
func (f *frameBatcher) scan(p []byte) {
	for len(p) > 0 {
		if f.left > 0 {
			k := min(uint64(len(p)), f.left)
			f.left -= k
			p = p[k:]
			f.inFrame = f.left > 0
			continue
		}
		f.hdr = append(f.hdr, p[0])
		p = p[1:]
		f.inFrame = true
		if n, ok := payloadLen(f.hdr); ok {
			f.hdr = f.hdr[:0]
			f.left = n
			f.inFrame = n > 0
		}
	}
}

// payloadLen parses a websocket frame header (RFC 6455, section 5.2):
// the length of its payload, once h holds the whole header.
func payloadLen(h []byte) (uint64, bool) {
	if len(h) < 2 {
		return 0, false
	}
	need := 2
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		need += 2
	case 127:
		need += 8
	}
	if h[1]&0x80 != 0 {
		need += 4 // the masking key
	}
	if len(h) < need {
		return 0, false
	}
	switch n {
	case 126:
		n = uint64(binary.BigEndian.Uint16(h[2:4]))
	case 127:
		n = binary.BigEndian.Uint64(h[2:10])
	}
	return n, true
}
