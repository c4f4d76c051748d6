package transcript

import (
	"bytes"
	"errors"
	"strconv"
)

// Header is the start of an encoded event: what a reader needs to route
// it without decoding its (possibly large) body.
type Header struct {
	Seq     int64
	Type    string
	Process string
	Stream  string
}

var rawPrefix = []byte(`{"v":` + strconv.Itoa(Version) + `,"seq":`)

// ReadHeader reads the header of a line Marshal wrote, looking only at
// its first fields (Marshal writes v, seq, time, type, then process and
// stream, first). ok is false for a line of another shape.
func ReadHeader(line []byte) (h Header, ok bool) {
	seq, rest, ok := splitSeq(line)
	if !ok {
		return h, false
	}
	h.Seq = seq
	head := rest[:min(len(rest), 256)]
	h.Type, ok = field(head, `,"type":"`)
	if !ok {
		return h, false
	}
	h.Process, _ = field(head, `,"process":"`)
	h.Stream, _ = field(head, `,"stream":"`)
	return h, true
}

// splitSeq splits an encoded event into its sequence number and what
// follows it (from the comma after it).
func splitSeq(line []byte) (int64, []byte, bool) {
	if !bytes.HasPrefix(line, rawPrefix) {
		return 0, nil, false
	}
	rest := line[len(rawPrefix):]
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return 0, nil, false
	}
	seq, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return seq, rest[i:], true
}

// field reads a short string field that needs no unescaping.
func field(b []byte, key string) (string, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return "", false
	}
	v := b[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 || bytes.IndexByte(v[:j], '\\') >= 0 {
		return "", false
	}
	return string(v[:j]), true
}

// EmitRaw writes an event Marshal encoded elsewhere (by the harness)
// without decoding it: only its sequence number is replaced by this
// writer's next. It returns the number given.
func (t *Writer) EmitRaw(line []byte) (int64, error) {
	_, body, ok := splitSeq(line)
	if !ok {
		return 0, errors.New("not an encoded event")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	// The new head, then the rest as it is: a large body is not copied,
	// a small one goes in the same write.
	head := strconv.AppendInt(append(make([]byte, 0, len(rawPrefix)+20), rawPrefix...), t.seq, 10)
	parts := [][]byte{head, body}
	if len(body) <= 4096 {
		parts = [][]byte{append(head, body...)}
	}
	if body[len(body)-1] != '\n' {
		parts = append(parts, []byte{'\n'})
	}
	for _, p := range parts {
		if _, err := t.w.Write(p); err != nil {
			return t.seq, err
		}
	}
	return t.seq, nil
}
