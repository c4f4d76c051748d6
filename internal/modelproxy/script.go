package modelproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/chalk-rl/chalk/internal/hint"
)

// DefaultModel is the model name a script gets when it names none.
const DefaultModel = "chalk-scripted"

const scriptDocs = "the script format is described in docs/model-proxy.md"

// Script is what the scripted model answers: one turn per assistant
// message of a conversation.
type Script struct {
	Path  string
	Model string
	Turns []Turn
}

// Turn is one answer of the scripted model.
type Turn struct {
	// Line is where the turn's [[turn]] header is in the script.
	Line int
	// Expect lists substrings that the request's last user or tool
	// message must all contain for this turn to be answered.
	Expect       []string
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	// Delay is how long the server waits before it answers.
	Delay time.Duration
}

// ToolCall is a function call the scripted model asks for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // a JSON object, as text
}

// The script as written.
type rawScript struct {
	Model *string   `toml:"model"`
	Turn  []rawTurn `toml:"turn"`
}

type rawTurn struct {
	Expect       any           `toml:"expect"` // string or array of strings
	Content      *string       `toml:"content"`
	ToolCall     []rawToolCall `toml:"tool_call"`
	FinishReason *string       `toml:"finish_reason"`
	Delay        *string       `toml:"delay"`
}

type rawToolCall struct {
	ID        *string `toml:"id"`
	Name      *string `toml:"name"`
	Arguments any     `toml:"arguments"` // table or JSON text
}

const exampleScript = `[[turn]]
content = "Let me look."
[[turn.tool_call]]
name = "run"
arguments = { command = "ls" }

[[turn]]
content = "Done."`

// LoadScript reads and checks the script at path.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, hint.Wrap(fmt.Errorf("model script: %w", err),
			"pass the path of a TOML script of turns, such as:\n\n"+indent(exampleScript))
	}
	return ParseScript(path, data)
}

// ParseScript parses and checks a script; path is only used in errors.
func ParseScript(path string, data []byte) (*Script, error) {
	var raw rawScript
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, decodeError(path, err)
	}
	lines := turnLines(data)
	s := &Script{Path: path, Model: DefaultModel}
	if raw.Model != nil {
		if strings.TrimSpace(*raw.Model) == "" {
			return nil, hint.Newf(`write a name such as model = "`+DefaultModel+`", or leave the key out`, "%s: model is empty", path)
		}
		s.Model = *raw.Model
	}
	if len(raw.Turn) == 0 {
		return nil, hint.Newf("add at least one turn, for example:\n\n"+indent(exampleScript), "%s: the script has no [[turn]]", path)
	}
	for i, rt := range raw.Turn {
		var tl turnLine
		if i < len(lines) {
			tl = lines[i]
		}
		t, err := buildTurn(path, i, rt, tl)
		if err != nil {
			return nil, err
		}
		s.Turns = append(s.Turns, t)
	}
	return s, nil
}

// at names a position in the script: path:line, or path when the line is
// not known.
func at(path string, line int) string {
	if line == 0 {
		return path
	}
	return fmt.Sprintf("%s:%d", path, line)
}

func buildTurn(path string, i int, rt rawTurn, tl turnLine) (Turn, error) {
	t := Turn{Line: tl.line}
	where := fmt.Sprintf("%s: turn %d", at(path, tl.line), i+1)
	switch e := rt.Expect.(type) {
	case nil:
	case string:
		t.Expect = []string{e}
	case []any:
		for _, v := range e {
			s, ok := v.(string)
			if !ok {
				return t, hint.Newf(`write expect = "text" or expect = ["text", "more text"]`, "%s: expect holds a %T, not a string", where, v)
			}
			t.Expect = append(t.Expect, s)
		}
	default:
		return t, hint.Newf(`write expect = "text" or expect = ["text", "more text"]`, "%s: expect is a %T, not a string or an array of strings", where, e)
	}
	if rt.Content != nil {
		t.Content = *rt.Content
	}
	for j, rc := range rt.ToolCall {
		line := 0
		if j < len(tl.calls) {
			line = tl.calls[j]
		}
		c, err := buildToolCall(fmt.Sprintf("%s: turn %d, tool call %d", at(path, line), i+1, j+1), rc)
		if err != nil {
			return t, err
		}
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", i+1, j+1)
		}
		t.ToolCalls = append(t.ToolCalls, c)
	}
	if rt.Content == nil && len(t.ToolCalls) == 0 {
		return t, hint.Newf(`give the turn content = "..." or at least one [[turn.tool_call]]`, "%s: has neither content nor a tool call", where)
	}
	switch {
	case rt.FinishReason != nil:
		t.FinishReason = *rt.FinishReason
		switch t.FinishReason {
		case "stop", "length", "tool_calls", "content_filter":
		default:
			return t, hint.Newf(`use one of "stop", "length", "tool_calls", "content_filter", or leave it out`, "%s: finish_reason %q is not one of OpenAI's", where, t.FinishReason)
		}
	case len(t.ToolCalls) > 0:
		t.FinishReason = "tool_calls"
	default:
		t.FinishReason = "stop"
	}
	if rt.Delay != nil {
		d, err := time.ParseDuration(*rt.Delay)
		if err != nil || d < 0 {
			return t, hint.Newf(`write a Go duration such as delay = "250ms"`, "%s: delay %q is not a duration", where, *rt.Delay)
		}
		t.Delay = d
	}
	return t, nil
}

func buildToolCall(where string, rc rawToolCall) (ToolCall, error) {
	c := ToolCall{}
	if rc.Name == nil || *rc.Name == "" {
		return c, hint.Newf(`add name = "run" (the function the model calls)`, "%s: name is required", where)
	}
	c.Name = *rc.Name
	if rc.ID != nil {
		c.ID = *rc.ID
	}
	switch a := rc.Arguments.(type) {
	case nil:
		c.Arguments = "{}"
	case string:
		var obj map[string]any
		if err := json.Unmarshal([]byte(a), &obj); err != nil {
			return c, hint.Newf(`write the arguments as a TOML table, arguments = { command = "ls" }, or as a JSON object in a string, arguments = '{"command": "ls"}'`,
				"%s: arguments is not a JSON object: %v", where, err)
		}
		c.Arguments = a
	case map[string]any:
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // a model writes "<", not "\u003c"
		if err := enc.Encode(a); err != nil {
			return c, fmt.Errorf("%s: arguments: %w", where, err)
		}
		c.Arguments = strings.TrimSuffix(b.String(), "\n")
	default:
		return c, hint.Newf(`write the arguments as a table, arguments = { command = "ls" }`, "%s: arguments is a %T, not a table or a JSON string", where, a)
	}
	return c, nil
}

func decodeError(path string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		var msgs []string
		for i := range strict.Errors {
			e := &strict.Errors[i]
			line, col := e.Position()
			msgs = append(msgs, fmt.Sprintf("%s:%d:%d: unknown key %q", path, line, col, strings.Join(e.Key(), ".")))
		}
		return hint.New(strings.Join(msgs, "\n"),
			"a script has model and [[turn]] tables with expect, content, finish_reason, delay and [[turn.tool_call]] (id, name, arguments); "+scriptDocs)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if k := strings.Join(de.Key(), "."); k != "" && !strings.Contains(msg, k) {
			msg = k + ": " + msg
		}
		return hint.Newf("fix the TOML at that position; "+scriptDocs, "%s:%d:%d: %s", path, line, col, msg)
	}
	return hint.Wrap(fmt.Errorf("%s: %w", path, err), "fix the file; "+scriptDocs)
}

// turnLine is where a [[turn]] header and its [[turn.tool_call]] headers
// are.
type turnLine struct {
	line  int
	calls []int
}

// turnLines finds the line of every [[turn]] and [[turn.tool_call]]
// header, in order. The document has already decoded, so it parses.
func turnLines(data []byte) []turnLine {
	var out []turnLine
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		n := p.Expression()
		if n.Kind != unstable.ArrayTable {
			continue
		}
		var parts []string
		line := 0
		for it := n.Key(); it.Next(); {
			if line == 0 {
				line = p.Shape(it.Node().Raw).Start.Line
			}
			parts = append(parts, string(it.Node().Data))
		}
		switch strings.Join(parts, ".") {
		case "turn":
			out = append(out, turnLine{line: line})
		case "turn.tool_call":
			if len(out) > 0 {
				out[len(out)-1].calls = append(out[len(out)-1].calls, line)
			}
		}
	}
	return out
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
