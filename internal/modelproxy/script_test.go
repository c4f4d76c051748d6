package modelproxy

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/hint"
)

func TestLoadScript(t *testing.T) {
	s, err := LoadScript("testdata/two_turns.toml")
	require.NoError(t, err)
	require.Equal(t, "test-model", s.Model)
	require.Len(t, s.Turns, 2)

	t1 := s.Turns[0]
	require.Equal(t, 4, t1.Line)
	require.Equal(t, []string{"count"}, t1.Expect)
	require.Equal(t, "tool_calls", t1.FinishReason)
	require.Equal(t, []ToolCall{
		{ID: "call_1_1", Name: "run", Arguments: `{"command":"wc -l data.txt"}`},
		{ID: "call_custom", Name: "write_file", Arguments: `{"path": "notes.md", "content": "naïve — ünïcode\n"}`},
	}, t1.ToolCalls)

	t2 := s.Turns[1]
	require.Equal(t, 15, t2.Line)
	require.Equal(t, []string{"exit status 0", "12"}, t2.Expect)
	require.Equal(t, "stop", t2.FinishReason)
	require.Empty(t, t2.ToolCalls)
}

func TestParseScriptDefaults(t *testing.T) {
	s, err := ParseScript("m.toml", []byte("[[turn]]\ncontent = \"hi\"\ndelay = \"20ms\"\nfinish_reason = \"length\"\n"))
	require.NoError(t, err)
	require.Equal(t, DefaultModel, s.Model)
	require.Equal(t, 20*time.Millisecond, s.Turns[0].Delay)
	require.Equal(t, "length", s.Turns[0].FinishReason)

	s, err = ParseScript("m.toml", []byte("[[turn]]\n[[turn.tool_call]]\nname = \"run\"\narguments = { command = \"a < b && c > d\" }\n"))
	require.NoError(t, err)
	require.Equal(t, `{"command":"a < b && c > d"}`, s.Turns[0].ToolCalls[0].Arguments, "no HTML escapes")
}

func TestParseScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		name, script, err, hint string
	}{
		{"empty", "", "m.toml: the script has no [[turn]]", "add at least one turn"},
		{"syntax", "[[turn]]\ncontent = \"hi\n", "m.toml:2:", "fix the TOML at that position"},
		{"unknown key", "[[turn]]\ncontent = \"hi\"\ncontnet = \"x\"\n", `m.toml:3:1: unknown key "turn.contnet"`, "[[turn.tool_call]] (id, name, arguments)"},
		{"wrong type", "[[turn]]\ncontent = 3\n", "m.toml:2:", "fix the TOML"},
		{"nothing to say", "[[turn]]\ncontent = \"a\"\n\n[[turn]]\nexpect = \"x\"\n", "m.toml:4: turn 2: has neither content nor a tool call", "content ="},
		{"no name", "[[turn]]\n[[turn.tool_call]]\narguments = {}\n", "m.toml:2: turn 1, tool call 1: name is required", `name = "run"`},
		{"bad json", "[[turn]]\n[[turn.tool_call]]\nname = \"run\"\narguments = '{\"command\": '\n", "m.toml:2: turn 1, tool call 1: arguments is not a JSON object", "arguments = { command"},
		{"json array", "[[turn]]\n[[turn.tool_call]]\nname = \"run\"\narguments = '[1]'\n", "arguments is not a JSON object", ""},
		{"bad expect", "[[turn]]\ncontent = \"a\"\nexpect = [1]\n", "m.toml:1: turn 1: expect holds a int64, not a string", `expect = ["text"`},
		{"bad finish", "[[turn]]\ncontent = \"a\"\nfinish_reason = \"done\"\n", `finish_reason "done" is not one of OpenAI's`, `"stop"`},
		{"bad delay", "[[turn]]\ncontent = \"a\"\ndelay = \"soon\"\n", `delay "soon" is not a duration`, `delay = "250ms"`},
		{"empty model", "model = \"\"\n[[turn]]\ncontent = \"a\"\n", "m.toml: model is empty", "leave the key out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScript("m.toml", []byte(tc.script))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.err)
			require.Contains(t, hint.Of(err), tc.hint)
		})
	}
}

func TestLoadScriptMissing(t *testing.T) {
	_, err := LoadScript(filepath.Join(t.TempDir(), "nope.toml"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, hint.Of(err), "[[turn.tool_call]]")
}
