package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// recorder is a net.Conn that keeps what is written to it.
type recorder struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, bytes.Clone(p))
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// TestFrameBatcherUnderWebsocket sends messages of many sizes, among
// them the sizes whose frames fill the library's 4 KiB buffer exactly,
// through a real websocket client on a frameBatcher while pings go by:
// every message arrives whole and in order, nothing is left held after
// a write returns, and a large message leaves in a few writes rather
// than one per 4 KiB.
func TestFrameBatcherUnderWebsocket(t *testing.T) {
	got := make(chan []byte, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(4 << 20)
		for {
			_, msg, err := ws.Read(context.Background())
			if err != nil {
				close(got)
				return
			}
			got <- msg
		}
	}))
	defer srv.Close()

	var fb *frameBatcher
	var rec *recorder
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		rec = &recorder{Conn: c}
		fb = &frameBatcher{Conn: rec}
		return fb, nil
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+srv.URL[4:], &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	fb.Frames()
	go ws.CloseRead(ctx) // answers the server's pongs
	stopPings := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		for {
			select {
			case <-stopPings:
				return
			case <-time.After(time.Millisecond):
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				_ = ws.Ping(pctx)
				pcancel()
			}
		}
	}()

	// A frame of a masked binary message of n bytes is 6, 8 or 14 bytes
	// of header and n of payload; these sizes make it 4096*k exactly.
	sizes := []int{0, 1, 125, 126, 4090, 4096 - 8, 8192 - 8, 65535, 65536 - 14, 65536, 512 << 10, 3 << 20}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		sizes = append(sizes, rng.IntN(1<<20))
	}
	for i, n := range sizes {
		msg := make([]byte, n)
		for j := range msg {
			msg[j] = byte(i + j)
		}
		rec.mu.Lock()
		before := len(rec.writes)
		rec.mu.Unlock()
		if err := ws.Write(ctx, websocket.MessageBinary, msg); err != nil {
			t.Fatal(err)
		}
		fb.mu.Lock()
		held, inFrame := len(fb.held), fb.inFrame
		fb.mu.Unlock()
		if held != 0 || inFrame {
			t.Fatalf("message %d (%d bytes): %d bytes held after the write returned (in a frame: %v)", i, n, held, inFrame)
		}
		select {
		case m := <-got:
			if !bytes.Equal(m, msg) {
				t.Fatalf("message %d (%d bytes) arrived as %d different bytes", i, n, len(m))
			}
		case <-ctx.Done():
			t.Fatalf("message %d (%d bytes) never arrived", i, n)
		}
		rec.mu.Lock()
		writes := len(rec.writes) - before
		rec.mu.Unlock()
		// Pings may add writes of their own; a 512 KiB message alone
		// would take 128 without batching.
		if n == 512<<10 && writes > 8 {
			t.Fatalf("a 512 KiB message took %d writes", writes)
		}
	}
	close(stopPings)
	<-pinged
	ws.Close(websocket.StatusNormalClosure, "")
}

// FuzzFrameBatcher: whatever frames are written, split at whatever
// points, every byte goes out in order, and the batcher holds nothing
// exactly when the last write ended on a frame's end.
func FuzzFrameBatcher(f *testing.F) {
	f.Add([]byte{3, 200, 7, 0, 126}, []byte{1, 5, 9})
	f.Add([]byte{255, 255, 1}, []byte{4})
	f.Fuzz(func(t *testing.T, lens []byte, cuts []byte) {
		var stream []byte
		for i, l := range lens {
			n := int(l) * (1 + i%3) * 97 // up to ~74 KiB: all three length forms
			stream = append(stream, frameHeader(n, i%2 == 0)...)
			stream = append(stream, bytes.Repeat([]byte{byte(i)}, n)...)
		}
		out := &sink{}
		fb := &frameBatcher{Conn: out}
		fb.Frames()
		rest := stream
		for _, c := range cuts {
			k := min(len(rest), int(c)*31)
			if _, err := fb.Write(rest[:k]); err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		if _, err := fb.Write(rest); err != nil {
			t.Fatal(err)
		}
		if fb.inFrame || len(fb.held) != 0 || len(fb.hdr) != 0 {
			t.Fatalf("after whole frames: in a frame %v, %d held, %d header bytes", fb.inFrame, len(fb.held), len(fb.hdr))
		}
		if !bytes.Equal(out.buf.Bytes(), stream) {
			t.Fatalf("wrote %d bytes, want the %d given, in order", out.buf.Len(), len(stream))
		}
	})
}

func frameHeader(n int, masked bool) []byte {
	h := []byte{0x82, 0}
	switch {
	case n < 126:
		h[1] = byte(n)
	case n < 1<<16:
		h[1] = 126
		h = binary.BigEndian.AppendUint16(h, uint16(n))
	default:
		h[1] = 127
		h = binary.BigEndian.AppendUint64(h, uint64(n))
	}
	if masked {
		h[1] |= 0x80
		h = append(h, 1, 2, 3, 4)
	}
	return h
}

// sink is a net.Conn that only collects writes.
type sink struct {
	net.Conn
	buf bytes.Buffer
}

func (s *sink) Write(p []byte) (int, error) { return s.buf.Write(p) }
