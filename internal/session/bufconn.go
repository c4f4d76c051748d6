package session

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
)

// BufConn is the TCP connection under a session stream's TLS, on either
// side. TLS reads one record (16 KiB at most) at a time, and writes each
// record as it seals it: after ReadLarge, BufConn reads in large pieces,
// and between Hold and Release it gathers writes, so that the records of
// one message leave in one system call. Outside Hold, writes go straight
// through.
type BufConn struct {
	net.Conn
	r atomic.Pointer[bufio.Reader]

	mu      sync.Mutex
	holding int
	w       []byte
}

// NewBufConn wraps c.
func NewBufConn(c net.Conn) *BufConn {
	return &BufConn{Conn: c}
}

// ReadLarge makes reads go through a 256 KiB buffer from now on. Only a
// connection that carries a session needs one: a server does not give
// each connection it accepts this much before it knows what it is for.
func (b *BufConn) ReadLarge() {
	if b.r.Load() == nil {
		b.r.CompareAndSwap(nil, bufio.NewReaderSize(b.Conn, 256<<10))
	}
}

func (b *BufConn) Read(p []byte) (int, error) {
	if r := b.r.Load(); r != nil {
		return r.Read(p)
	}
	return b.Conn.Read(p)
}

func (b *BufConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holding == 0 {
		return b.Conn.Write(p)
	}
	b.w = append(b.w, p...)
	return len(p), nil
}

// Gathered runs write with writes gathered (between Hold and Release),
// and returns write's error, else Release's. On a nil BufConn it only
// runs write.
func (b *BufConn) Gathered(write func() error) error {
	if b == nil {
		return write()
	}
	b.Hold()
	err := write()
	if rerr := b.Release(); err == nil {
		err = rerr
	}
	return err
}

// Hold starts gathering writes. Holds nest: writes are gathered until
// each Hold has had its Release.
func (b *BufConn) Hold() {
	b.mu.Lock()
	b.holding++
	b.mu.Unlock()
}

// Release ends a Hold; the last one sends what was gathered.
func (b *BufConn) Release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holding > 0 {
		b.holding--
	}
	if b.holding > 0 || len(b.w) == 0 {
		return nil
	}
	_, err := b.Conn.Write(b.w)
	b.w = b.w[:0]
	return err
}

// BufListener makes every connection it accepts a BufConn.
type BufListener struct{ net.Listener }

// Accept waits for the next connection.
func (l BufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return NewBufConn(c), nil
}
