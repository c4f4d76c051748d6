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
	if !bytes.HasPrefix(line, rawPrefix) {
		return h, false
	}
	rest := line[len(rawPrefix):]
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return h, false
	}
	seq, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return h, false
	}
	h.Seq = seq
	head := rest[i:min(len(rest), i+256)]
	h.Type, ok = field(head, `,"type":"`)
	if !ok {
		return h, false
	}
	h.Process, _ = field(head, `,"process":"`)
	h.Stream, _ = field(head, `,"stream":"`)
	return h, true
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
	if !bytes.HasPrefix(line, rawPrefix) {
		return 0, errors.New("not an encoded event")
	}
	rest := line[len(rawPrefix):]
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return 0, errors.New("not an encoded event")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	// The new head, then the rest as it is: no copy of a large body.
	head := make([]byte, 0, len(rawPrefix)+20)
	head = append(head, rawPrefix...)
	head = strconv.AppendInt(head, t.seq, 10)
	body := rest[i:]
	newline := body[len(body)-1] != '\n'
	if !newline && len(body) < 4096 {
		head = append(append(head, body...), '\n')
		body = nil
	}
	for _, b := range [][]byte{head, body} {
		if len(b) == 0 {
			continue
		}
		if _, err := t.w.Write(b); err != nil {
			return t.seq, err
		}
	}
	if newline && body != nil {
		if _, err := t.w.Write([]byte{'\n'}); err != nil {
			return t.seq, err
		}
	}
	return t.seq, nil
}
