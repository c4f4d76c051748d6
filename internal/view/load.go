package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// entry is one line of a transcript: the event as the shared reader
// decodes it, and the line itself, so that event types this version does
// not know can still be shown whole.
type entry struct {
	Event transcript.Event
	Raw   []byte
	Err   error // the line could not be read as an event
	Off   int64 // where the line starts in the transcript
}

// readFrom reads the events written to the transcript name, below root,
// after byte offset off, and returns them with the offset to read from
// next. Only complete lines are read: a line still being written is left
// for the next call, unless it is valid JSON on its own (a transcript
// whose last line has no newline). It is the package's only reader of
// transcripts, and tells c.onRead what it read.
func (c *summaries) readFrom(root *os.Root, name string, off int64) (_ []entry, next int64, _ error) {
	if c.onRead != nil {
		defer func() { c.onRead(name, off, next) }()
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, off, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, off, err
	}
	if st.Size() < off {
		return nil, off, errReplaced
	}
	data, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil, off, err
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	if tail := bytes.TrimSpace(data[end:]); len(tail) > 0 && json.Valid(tail) {
		end = len(data)
	}
	data = data[:end]

	var raws [][]byte
	var starts []int64
	pos := off
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		start := pos
		pos += int64(len(line)) + 1
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > 0 {
			raws = append(raws, line)
			starts = append(starts, start)
		}
	}
	r := transcript.NewReader(bytes.NewReader(data))
	var out []entry
	for i := 0; ; i++ {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var raw []byte
		at := off + int64(end)
		if i < len(raws) {
			raw, at = raws[i], starts[i]
		}
		if err != nil {
			out = append(out, entry{Raw: raw, Off: at, Err: fmt.Errorf("unreadable transcript line: %w", err)})
			if i >= len(raws) || errors.Is(err, bufio.ErrTooLong) {
				break // the reader gives up on the rest
			}
			continue
		}
		out = append(out, entry{Event: e, Raw: raw, Off: at})
	}
	return out, off + int64(end), nil
}

// errReplaced means the transcript is shorter than what was already read
// from it: it was replaced or truncated.
var errReplaced = errors.New("the transcript shrank since it was last read; reload the page")
