package transcript

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Writer writes events to w one line at a time, numbering them. It is safe
// for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	seq int64
	now func() time.Time
}

// NewWriter returns a Writer whose first event gets sequence number 1.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, now: time.Now}
}

// Emit stamps e with the version, the next sequence number and the time
// (unless set), and writes it.
func (t *Writer) Emit(e Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	e.V, e.Seq = Version, t.seq
	if e.Time.IsZero() {
		e.Time = t.now().UTC()
	}
	b, err := Marshal(e)
	if err != nil {
		t.seq-- // the number goes to the next event: no gap
		return fmt.Errorf("encode %s event: %w", e.Type, err)
	}
	_, err = t.w.Write(b)
	return err
}
