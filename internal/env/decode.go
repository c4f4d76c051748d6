package env

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// The shape of chalk.toml as written. Pointers tell a key that is absent
// from one set to its zero value.
type rawConfig struct {
	Name          *string      `toml:"name"`
	Containerfile *string      `toml:"containerfile"`
	Student       *rawProcess  `toml:"student"`
	Grader        *rawProcess  `toml:"grader"`
	Hardware      *rawHardware `toml:"hardware"`
	Files         []rawFile    `toml:"files"`
}

type rawProcess struct {
	Command []string          `toml:"command"`
	Workdir *string           `toml:"workdir"`
	Timeout *string           `toml:"timeout"`
	Env     map[string]string `toml:"env"`
}

type rawHardware struct {
	Name   *string  `toml:"name"`
	CPUs   *float64 `toml:"cpus"`
	Memory any      `toml:"memory"` // size string or integer bytes
	Disk   any      `toml:"disk"`   // size string or integer bytes
}

type rawFile struct {
	Source *string `toml:"source"`
	Target *string `toml:"target"`
}

// knownKeys lists the keys each table accepts, for spelling suggestions.
var knownKeys = map[string][]string{
	"":         {"name", "containerfile", "student", "grader", "hardware", "files"},
	"student":  {"command", "workdir", "timeout", "env"},
	"grader":   {"command", "workdir", "timeout", "env"},
	"hardware": {"name", "cpus", "memory", "disk"},
	"files":    {"source", "target"},
}

const docsHint = "the keys are documented in docs/environment.md"

// decode parses data strictly into a rawConfig. Its errors carry the
// file, line and column.
func decode(path string, data []byte) (*rawConfig, error) {
	var raw rawConfig
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&raw)
	if err == nil {
		return &raw, nil
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		return nil, unknownKeysError(path, strict)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		return nil, decodeError(path, de)
	}
	return nil, hint.Wrap(fmt.Errorf("%s: %w", path, err), "fix the file; "+docsHint)
}

func unknownKeysError(path string, strict *toml.StrictMissingError) error {
	lines := make([]string, 0, len(strict.Errors))
	for i := range strict.Errors {
		e := &strict.Errors[i]
		line, col := e.Position()
		what := "key"
		if strings.Contains(e.Error(), "table") {
			what = "table"
		}
		msg := fmt.Sprintf("%s:%d:%d: unknown %s %q", path, line, col, what, strings.Join(e.Key(), "."))
		if s := suggest(e.Key()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		lines = append(lines, msg)
	}
	return hint.New(strings.Join(lines, "\n"), "remove it or fix its spelling; "+docsHint)
}

// suggest returns key with its first unknown part replaced by the closest
// known key, or "" when nothing is close.
func suggest(key []string) string {
	parent := ""
	for i, part := range key {
		known, ok := knownKeys[parent]
		if !ok {
			return ""
		}
		if slices.Contains(known, part) {
			parent = part
			continue
		}
		best := Closest(part, known)
		if best == "" {
			return ""
		}
		fixed := append(append(append([]string(nil), key[:i]...), best), key[i+1:]...)
		return strings.Join(fixed, ".")
	}
	return ""
}

var mismatchRE = regexp.MustCompile(`^cannot decode TOML ([a-z ]+?) into `)

func decodeError(path string, de *toml.DecodeError) error {
	line, col := de.Position()
	loc := fmt.Sprintf("%s:%d:%d", path, line, col)
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	key := strings.Join(de.Key(), ".")

	if m := mismatchRE.FindStringSubmatch(msg); m != nil {
		if want, example, ok := expectation(de.Key()); ok {
			return hint.Newf("write it as "+want+", e.g. "+example,
				"%s: %s: expected %s, found %s", loc, key, want, withArticle(m[1]))
		}
	}
	if strings.Contains(msg, "already defined") {
		return hint.Newf("keep a single definition of it", "%s: %s", loc, msg)
	}
	if key != "" && !strings.Contains(msg, key) {
		msg = key + ": " + msg
	}
	return hint.Newf("fix the TOML syntax at that position; the format is described at https://toml.io",
		"%s: %s", loc, msg)
}

// expectation says what type key takes, with an example.
func expectation(key []string) (want, example string, ok bool) {
	if len(key) == 0 {
		return "", "", false
	}
	k := key
	if k[0] == "student" || k[0] == "grader" {
		k = append([]string{"*"}, k[1:]...)
	}
	if len(k) > 2 && k[0] == "*" && k[1] == "env" {
		k = k[:2]
	}
	switch strings.Join(k, ".") {
	case "name":
		return "a quoted string", `name = "hello"`, true
	case "containerfile":
		return "a quoted path", `containerfile = "Containerfile"`, true
	case "*":
		return "a table", "[" + key[0] + "] on its own line, followed by its keys", true
	case "hardware":
		return "a table", "[hardware] on its own line, followed by its keys", true
	case "files":
		return "an array of tables", "[[files]] on its own line, followed by source and target", true
	case "*.command":
		return "an array of strings", `command = ["/bin/sh", "-c", "echo hi"]`, true
	case "*.workdir":
		return "a quoted absolute path", `workdir = "/home/student"`, true
	case "*.timeout":
		return "a quoted Go duration", `timeout = "30m"`, true
	case "*.env":
		return "a table of strings", `env = { FOO = "bar" }`, true
	case "hardware.name":
		return "a quoted string", `name = "default"`, true
	case "hardware.cpus":
		return "a number", `cpus = 2`, true
	case "files.source":
		return "a quoted relative path", `source = "data"`, true
	case "files.target":
		return "a quoted absolute path", `target = "/data"`, true
	}
	return "", "", false
}

func withArticle(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// position is a 1-based line and column in chalk.toml.
type position struct{ line, col int }

// positions maps every key of the document to where its value starts
// (or, when that is not known, where its key starts). Keys are dotted;
// array elements and array tables are indexed from zero, as in
// "student.command[0]" and "files[1].source".
func positions(data []byte) map[string]position {
	out := map[string]position{}
	var p unstable.Parser
	p.Reset(data)
	at := func(r unstable.Range) position {
		s := p.Shape(r).Start
		return position{s.Line, s.Column}
	}

	prefix := ""
	arrays := map[string]int{}
	var keyValue func(prefix string, n *unstable.Node)
	var value func(key string, v *unstable.Node, fallback position)
	value = func(key string, v *unstable.Node, fallback position) {
		if v.Raw.Length > 0 {
			out[key] = at(v.Raw)
		} else {
			out[key] = fallback
		}
		switch v.Kind {
		case unstable.InlineTable:
			for it := v.Children(); it.Next(); {
				if it.Node().Kind == unstable.KeyValue {
					keyValue(key, it.Node())
				}
			}
		case unstable.Array:
			i := 0
			for it := v.Children(); it.Next(); {
				if it.Node().Kind == unstable.Comment {
					continue
				}
				value(fmt.Sprintf("%s[%d]", key, i), it.Node(), out[key])
				i++
			}
		}
	}
	keyValue = func(prefix string, n *unstable.Node) {
		name, pos := keyOf(n, at)
		value(join(prefix, name), n.Value(), pos)
	}

	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table:
			name, pos := keyOf(n, at)
			prefix = name
			out[prefix] = pos
		case unstable.ArrayTable:
			name, pos := keyOf(n, at)
			prefix = fmt.Sprintf("%s[%d]", name, arrays[name])
			arrays[name]++
			out[prefix] = pos
		case unstable.KeyValue:
			keyValue(prefix, n)
		}
	}
	return out
}

// keyOf returns the dotted key of a table, array table or key-value node
// and the position of its first part.
func keyOf(n *unstable.Node, at func(unstable.Range) position) (string, position) {
	var parts []string
	var pos position
	for it := n.Key(); it.Next(); {
		if len(parts) == 0 {
			pos = at(it.Node().Raw)
		}
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, "."), pos
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
