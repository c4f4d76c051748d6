package runtime

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Whatever ShellQuote and ShellJoin write, a POSIX sh reads back as the
// same words.
func TestShellQuoteRoundTrip(t *testing.T) {
	var ascii strings.Builder
	for c := 1; c < 128; c++ {
		ascii.WriteByte(byte(c))
	}
	words := []string{
		"", "plain", "/usr/bin/hw.sh", "--flag=value", "a b", "tab\there", "new\nline",
		"it's", `"double"`, `back\slash`, `\\`, "$HOME", "${HOME}", "$(id)", "`id`",
		"a;b", "a&b", "a|b", "<in", ">out", "(sub)", "{a,b}", "*", "?", "[ab]", "#comment",
		"~", "~user", "!", "%1", "a=b", "'", "''", "'\\''", "é", "\u00a0", "\r", "-",
		ascii.String(),
	}
	require.Equal(t, "/usr/bin/hw.sh", ShellQuote("/usr/bin/hw.sh"), "a word that needs no quotes gets none")
	for _, w := range words {
		out, err := exec.Command("sh", "-c", "printf '%s\\0' "+ShellQuote(w)).Output()
		require.NoError(t, err, "%q quoted as %s", w, ShellQuote(w))
		require.Equal(t, w+"\x00", string(out), "%q quoted as %s", w, ShellQuote(w))
	}
	out, err := exec.Command("sh", "-c", "printf '%s\\0' "+ShellJoin(words)).Output()
	require.NoError(t, err)
	require.Equal(t, words, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"))
}

// A command whose program has "=" in its name runs that program, not an
// assignment.
func TestShellJoinFirstWordWithEquals(t *testing.T) {
	dir := t.TempDir()
	prog := dir + "/a=b"
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho ran \"$@\"\n"), 0o755))
	out, err := exec.Command("sh", "-c", "cd "+ShellQuote(dir)+" && "+ShellJoin([]string{"./a=b", "x=y"})).Output()
	require.NoError(t, err)
	require.Equal(t, "ran x=y\n", string(out))
	out, err = exec.Command("sh", "-c", "PATH="+ShellQuote(dir)+":$PATH; "+ShellJoin([]string{"a=b", "x=y"})).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "ran x=y\n", string(out))
}
