package api

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// inputRecorder is an input that records what reaches it, in order.
type inputRecorder struct {
	mu     sync.Mutex
	got    bytes.Buffer
	closed bool
	// afterClose counts writes that came after CloseWrite.
	afterClose int
}

func (r *inputRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.afterClose++
	}
	return r.got.Write(p)
}

func (r *inputRecorder) CloseWrite() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

func (r *inputRecorder) state() (string, bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got.String(), r.closed, r.afterClose
}

func TestSessionInputHoldsUntilAttached(t *testing.T) {
	in := newSessionInput()
	for _, s := range []string{"SSH-2.0-", "client\r\n"} {
		if n, err := in.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write before a process: %d, %v", n, err)
		}
	}
	if err := in.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := &inputRecorder{}
	stopped := false
	<-in.attach(r, func() { stopped = true })
	got, closed, late := r.state()
	if got != "SSH-2.0-client\r\n" || !closed || late != 0 {
		t.Fatalf("after attach: %q, closed %v, %d writes after the close; want the held input, then the EOF", got, closed, late)
	}
	if stopped {
		t.Fatal("the process was stopped while the client is still there")
	}
}

// TestSessionInputKeepsOrder: input that arrives while the held input is
// handed over comes after it.
func TestSessionInputKeepsOrder(t *testing.T) {
	in := newSessionInput()
	const n = 2000
	var want strings.Builder
	for i := range n {
		want.WriteString(string(rune('a' + i%26)))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			_, _ = in.Write([]byte{byte('a' + i%26)})
		}
	}()
	time.Sleep(time.Millisecond)
	r := &inputRecorder{}
	<-in.attach(r, func() {})
	<-done
	if got, _, _ := r.state(); got != want.String() {
		t.Fatalf("input out of order or lost: got %d bytes, want %d", len(got), n)
	}
}

// TestSessionInputBounded: past heldMax a write waits for a process
// rather than holding without end.
func TestSessionInputBounded(t *testing.T) {
	in := newSessionInput()
	if _, err := in.Write(make([]byte, heldMax)); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan struct{})
	go func() {
		_, _ = in.Write([]byte("x"))
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatal("a write past heldMax did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	r := &inputRecorder{}
	<-in.attach(r, func() {})
	<-wrote
	if got, _, _ := r.state(); len(got) != heldMax+1 {
		t.Fatalf("the process got %d bytes, want %d", len(got), heldMax+1)
	}
}

// TestSessionInputLeave: a client that goes stops the attached process,
// or the one attached later; a waiting write is released.
func TestSessionInputLeave(t *testing.T) {
	in := newSessionInput()
	stops := 0
	<-in.attach(&inputRecorder{}, func() { stops++ })
	in.leave()
	in.leave()
	if stops != 1 || !isClosed(in.gone) {
		t.Fatalf("stops %d, gone %v: want one stop and gone closed", stops, isClosed(in.gone))
	}

	early := newSessionInput()
	_, _ = early.Write(make([]byte, heldMax))
	wrote := make(chan struct{})
	go func() {
		_, _ = early.Write([]byte("x"))
		close(wrote)
	}()
	early.leave()
	<-wrote
	stopped := false
	<-early.attach(&inputRecorder{}, func() { stopped = true })
	if !stopped {
		t.Fatal("a process attached after the client left was not stopped")
	}
}

// sizedRecorder is an input with a terminal.
type sizedRecorder struct {
	inputRecorder
	sizes [][2]int
}

func (r *sizedRecorder) Resize(_ context.Context, cols, rows int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sizes = append(r.sizes, [2]int{cols, rows})
	return nil
}

// TestSessionInputResizeBeforeAttach: the last size that came before the
// process reaches it; later ones go straight through.
func TestSessionInputResizeBeforeAttach(t *testing.T) {
	in := newSessionInput()
	ctx := context.Background()
	_ = in.Resize(ctx, 80, 24)
	_ = in.Resize(ctx, 100, 30)
	r := &sizedRecorder{}
	<-in.attach(r, func() {})
	_ = in.Resize(ctx, 120, 40)
	if want := [][2]int{{100, 30}, {120, 40}}; !slices.Equal(r.sizes, want) {
		t.Fatalf("sizes %v, want %v", r.sizes, want)
	}
}

// echoInput answers each write on out, which nobody reads until attach
// returns: a handover that wrote from attach itself would never end.
type echoInput struct{ out chan []byte }

func (e echoInput) Write(p []byte) (int, error) { e.out <- p; return len(p), nil }
func (e echoInput) CloseWrite() error           { return nil }

func TestSessionInputAttachDoesNotWaitForTheHandover(t *testing.T) {
	in := newSessionInput()
	_, _ = in.Write([]byte("hello"))
	e := echoInput{out: make(chan []byte)}
	done := in.attach(e, func() {})
	if got := <-e.out; string(got) != "hello" {
		t.Fatalf("handed over %q", got)
	}
	<-done
}
