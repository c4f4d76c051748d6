package transcript

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// MaxLine is the longest line a reader accepts.
const MaxLine = 16 << 20

// Reader reads events one at a time.
type Reader struct {
	s    *bufio.Scanner
	line int
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), MaxLine)
	return &Reader{s: s}
}

// Next returns the next event, or io.EOF after the last.
func (r *Reader) Next() (Event, error) {
	for r.s.Scan() {
		r.line++
		b := r.s.Bytes()
		if len(b) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return Event{}, fmt.Errorf("line %d: %w", r.line, err)
		}
		return e, nil
	}
	if err := r.s.Err(); err != nil {
		return Event{}, fmt.Errorf("line %d: %w", r.line+1, err)
	}
	return Event{}, io.EOF
}

// ReadFile returns every event in the transcript at path.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []Event
	r := NewReader(f)
	for {
		e, err := r.Next()
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, fmt.Errorf("%s: %w", path, err)
		}
		events = append(events, e)
	}
}
