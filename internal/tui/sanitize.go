package tui

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// sanitize makes one line of untrusted text safe to print on a terminal:
// it drops escape sequences (CSI, OSC, DCS and the like, so no colour,
// cursor move, title change or hyperlink gets through), control
// characters, and the Unicode controls that reorder text; it turns a tab
// or newline into a space and invalid UTF-8 into U+FFFD. A carriage return keeps what
// follows it, as a terminal would show a progress bar that redraws its
// line. The result has no newline.
func sanitize(s string) string {
	if i := lastSegment(s); i > 0 {
		s = s[i:]
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0x1b {
			i = skipEscape(s, i)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\t', r == '\n':
			b.WriteByte(' ')
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case unicode.IsControl(r), isBidiControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// lastSegment returns where the text after the last carriage return that
// is followed by something starts, or 0.
func lastSegment(s string) int {
	t := strings.TrimRight(s, "\r")
	if i := strings.LastIndexByte(t, '\r'); i >= 0 {
		return i + 1
	}
	return 0
}

// skipEscape returns the index just after the escape sequence that starts
// with the ESC at s[i]. A string sequence (OSC, DCS, SOS, PM, APC) with no
// terminator runs to the end, as it would on a terminal.
func skipEscape(s string, i int) int {
	i++ // ESC
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[': // CSI: parameters, intermediates, one final byte
		i++
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			i++
		}
		return i
	case ']', 'P', 'X', '^', '_': // ended by BEL or ESC \
		for i++; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return i
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f { // intermediates
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// isBidiControl reports the marks and embeddings that change the order in
// which a terminal shows the text around them.
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// lastLines returns up to n of the last non-blank lines of b, sanitized,
// oldest first. A last line with no newline yet counts: it is what the
// student is printing now.
func lastLines(b []byte, n int) []string {
	if n <= 0 {
		return nil
	}
	var out []string
	s := string(b)
	for len(s) > 0 && len(out) < n {
		i := strings.LastIndexByte(strings.TrimRight(s, "\n"), '\n')
		line := s[i+1:]
		s = s[:max(i, 0)]
		if l := sanitize(strings.TrimRight(line, "\n")); l != "" {
			out = append(out, l)
		}
		if i < 0 {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
