package runtime

import (
	"errors"
	"io/fs"
	"strings"
)

// ErrText is err's message without the path an fs.PathError repeats.
func ErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// FirstLine is the first non-blank line of s, trimmed.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// ShellQuote quotes s for a POSIX shell when it needs quoting, so a fix
// can be pasted as it is.
func ShellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellJoin writes argv as one POSIX shell command line, each word quoted
// by ShellQuote. A first word with "=" is quoted too: bare, the shell
// would take it for a variable assignment, not the program.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
		if i == 0 && q[i] == a && strings.Contains(a, "=") {
			q[i] = "'" + a + "'"
		}
	}
	return strings.Join(q, " ")
}
