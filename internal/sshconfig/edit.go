package sshconfig

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/chalk-rl/chalk/internal/hint"
)

// markerFix is the hint for every malformed-marker error.
const markerFix = "open the file and delete the stray marker line, or the whole block from '" +
	BeginMarker + "' to '" + EndMarker + "', then run the command again"

// span is the managed block found in a file: the byte offsets of the start
// of its begin line and of the end of its end line (after the newline).
type span struct {
	start, end int
	crlf       bool // the begin line ends in "\r\n"
	found      bool
}

// find locates the managed block. A marker is a line that, once
// surrounding blanks and a trailing "\r" are dropped, equals BeginMarker or
// EndMarker. Anything but zero or one well-ordered pair is an error naming
// the lines.
func find(data []byte) (span, error) {
	var begins, ends []int // 1-based line numbers
	var s span
	off := 0
	for n := 1; off < len(data); n++ {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		line := strings.TrimSpace(string(data[off:next]))
		switch line {
		case BeginMarker:
			begins = append(begins, n)
			if len(begins) == 1 {
				s.start = off
				s.crlf = bytes.HasSuffix(data[off:next], []byte("\r\n"))
			}
		case EndMarker:
			ends = append(ends, n)
			if len(ends) == 1 {
				s.end = next
			}
		}
		off = next
	}
	switch {
	case len(begins) == 0 && len(ends) == 0:
		return span{}, nil
	case len(begins) > 1:
		return span{}, hint.Newf(markerFix, "the chalk block's begin marker appears more than once, on lines %s", lines(begins))
	case len(ends) > 1:
		return span{}, hint.Newf(markerFix, "the chalk block's end marker appears more than once, on lines %s", lines(ends))
	case len(ends) == 0:
		return span{}, hint.Newf(markerFix, "the chalk block's begin marker on line %d has no end marker", begins[0])
	case len(begins) == 0:
		return span{}, hint.Newf(markerFix, "the chalk block's end marker on line %d has no begin marker", ends[0])
	case ends[0] < begins[0]:
		return span{}, hint.Newf(markerFix, "the chalk block's end marker on line %d comes before its begin marker on line %d", ends[0], begins[0])
	}
	s.found = true
	return s, nil
}

func lines(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// Apply returns existing with block in it. Without markers, block goes at
// the top, followed by a blank line and then the original content
// (unchanged); an existing block is replaced in place, wherever it is.
// Lines are written with "\r\n" when the file (or the existing begin
// marker line) uses it. Malformed markers are an error and nothing is
// changed.
func Apply(existing []byte, block string) ([]byte, error) {
	s, err := find(existing)
	if err != nil {
		return nil, err
	}
	if !s.found {
		crlf := false
		if i := bytes.IndexByte(existing, '\n'); i > 0 && existing[i-1] == '\r' {
			crlf = true
		}
		out := []byte(eol(block, crlf))
		if len(existing) > 0 {
			out = append(out, eol("\n", crlf)...)
			out = append(out, existing...)
		}
		return out, nil
	}
	out := make([]byte, 0, len(existing)+len(block))
	out = append(out, existing[:s.start]...)
	out = append(out, eol(block, s.crlf)...)
	out = append(out, existing[s.end:]...)
	return out, nil
}

// Remove returns existing without the managed block and the blank line
// after it, if there is one (Apply puts it there). It reports whether
// there was a block to remove.
func Remove(existing []byte) ([]byte, bool, error) {
	s, err := find(existing)
	if err != nil || !s.found {
		return existing, false, err
	}
	end := s.end
	switch {
	case bytes.HasPrefix(existing[end:], []byte("\n")):
		end++
	case bytes.HasPrefix(existing[end:], []byte("\r\n")):
		end += 2
	}
	out := make([]byte, 0, len(existing))
	out = append(out, existing[:s.start]...)
	out = append(out, existing[end:]...)
	return out, true, nil
}

func eol(s string, crlf bool) string {
	if !crlf {
		return s
	}
	return strings.ReplaceAll(s, "\n", "\r\n")
}
