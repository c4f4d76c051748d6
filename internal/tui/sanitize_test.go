package tui

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSanitize(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "hello world", "hello world"},
		{"colour", "\x1b[1;31merror\x1b[0m: boom", "error: boom"},
		{"cursor moves and erase", "a\x1b[2J\x1b[H\x1b[10;5Hb\x1b[K", "ab"},
		{"private mode", "\x1b[?1049h\x1b[?25lx", "x"},
		{"title by BEL", "\x1b]0;pwned\x07after", "after"},
		{"hyperlink by ST", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"unterminated OSC eats the rest", "before\x1b]52;c;ZXZpbA==", "before"},
		{"DCS", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"APC", "a\x1b_payload\x07b", "ab"},
		{"two-byte escapes", "a\x1b7\x1b8\x1bcb\x1b(Bc", "abc"},
		{"lone ESC at end", "abc\x1b", "abc"},
		{"bell, backspace, NUL, DEL", "a\x07b\x08c\x00d\x7fe", "abcde"},
		{"C1 controls", "a\u009b31mb\u009dc", "a31mbc"},
		{"bidi override", "user\u202eexe.txt\u202c", "userexe.txt"},
		{"bidi isolates and marks", "\u2066a\u2069\u200eb\u200f\u061c", "ab"},
		{"tab", "a\tb", "a b"},
		{"newline", "a\nb", "a b"},
		{"carriage return keeps the redraw", "10%\r20%\r30%", "30%"},
		{"trailing carriage return", "done\r\r", "done"},
		{"invalid UTF-8", "a\xffb", "a\ufffdb"},
		{"wide and combining text kept", "日本 é", "日本 é"},
		{"trailing spaces", "x   ", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, sanitize(tc.in))
		})
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want []string
	}{
		{"empty", "", 3, nil},
		{"partial last line counts", "one\ntwo\nthr", 2, []string{"two", "thr"}},
		{"ended lines", "one\ntwo\n", 5, []string{"one", "two"}},
		{"blank lines skipped", "one\n\n\x1b[0m\n  \ntwo\n\n", 2, []string{"one", "two"}},
		{"CRLF", "one\r\ntwo\r\n", 2, []string{"one", "two"}},
		{"none wanted", "one\n", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, lastLines([]byte(tc.in), tc.n))
		})
	}
}
