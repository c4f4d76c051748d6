package session

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// countConn counts the writes that reach it.
type countConn struct {
	net.Conn
	writes int
	buf    bytes.Buffer
}

func (c *countConn) Write(p []byte) (int, error) {
	c.writes++
	return c.buf.Write(p)
}

// TestBufConnGathersWhileHeld: between Hold and Release writes leave in
// one; outside, each goes straight through.
func TestBufConnGathersWhileHeld(t *testing.T) {
	under := &countConn{}
	b := &BufConn{Conn: under}
	_, _ = b.Write([]byte("a"))
	if under.writes != 1 {
		t.Fatalf("a write outside Hold: %d writes underneath, want 1", under.writes)
	}
	b.Hold()
	for range 32 {
		_, _ = b.Write(bytes.Repeat([]byte("r"), 16<<10))
	}
	if under.writes != 1 {
		t.Fatalf("held writes reached the connection: %d writes", under.writes)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if under.writes != 2 || under.buf.Len() != 1+32*16<<10 {
		t.Fatalf("after Release: %d writes, %d bytes; want 2 writes, %d bytes", under.writes, under.buf.Len(), 1+32*16<<10)
	}
	if err := b.Release(); err != nil || under.writes != 2 {
		t.Fatalf("a Release with nothing held wrote (%d writes, %v)", under.writes, err)
	}
	// Nested holds: only the last Release sends.
	b.Hold()
	b.Hold()
	_, _ = b.Write([]byte("x"))
	_ = b.Release()
	if under.writes != 2 {
		t.Fatalf("an inner Release sent the gathered writes (%d writes)", under.writes)
	}
	_ = b.Release()
	if under.writes != 3 {
		t.Fatalf("the outer Release did not send (%d writes)", under.writes)
	}
}

// TestBufConnReads: reads through the buffer lose and reorder nothing.
func TestBufConnReads(t *testing.T) {
	a, c := net.Pipe()
	b := NewBufConn(c)
	want := bytes.Repeat([]byte("0123456789"), 100<<10)
	go func() {
		_, _ = a.Write(want)
		a.Close()
	}()
	// Part before ReadLarge, the rest after.
	head := make([]byte, 1000)
	if _, err := io.ReadFull(b, head); err != nil {
		t.Fatal(err)
	}
	b.ReadLarge()
	rest, err := io.ReadAll(b)
	got := append(head, rest...)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the %d written", len(got), err, len(want))
	}
}
