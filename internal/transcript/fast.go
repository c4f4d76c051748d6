package transcript

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// marshalOutput encodes an output event, which can carry megabytes of
// the student's output, without reflection: the same fields, in the same
// order, as encoding/json writes them, and a string any JSON reader
// reads back to the same text. ok is false for any other event.
func marshalOutput(e Event) ([]byte, bool) {
	if e.Type != Output || e.Run != nil || len(e.Command) > 0 || e.UID != nil || e.ExitCode != nil ||
		e.Signal != "" || e.TimedOut || e.DurationMS != 0 || e.Reward != nil || e.Files != 0 || e.Bytes != 0 ||
		len(e.Skipped) > 0 || e.Model != nil || e.Limit != nil || e.Confinement != nil || e.Status != "" ||
		e.Message != "" || !plain(e.Process) || !plain(e.Stream) || !plain(e.DataB64) {
		return nil, false
	}
	b := make([]byte, 0, len(e.Text)+len(e.DataB64)+160)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(e.V), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":"output"`...)
	if e.Process != "" {
		b = append(append(append(b, `,"process":"`...), e.Process...), '"')
	}
	if e.Stream != "" {
		b = append(append(append(b, `,"stream":"`...), e.Stream...), '"')
	}
	if e.Text != "" {
		b = append(b, `,"text":"`...)
		b = appendEscaped(b, e.Text)
		b = append(b, '"')
	}
	if e.DataB64 != "" {
		b = append(append(append(b, `,"data_b64":"`...), e.DataB64...), '"')
	}
	return append(b, '}', '\n'), true
}

// plain says whether s needs no escaping in a JSON string.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// appendEscaped appends s, valid UTF-8, escaped for a JSON string: quotes,
// backslashes and control characters, and, as encoding/json does, <, >,
// & and the line separators U+2028 and U+2029.
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' || r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			if r == utf8.RuneError {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}
