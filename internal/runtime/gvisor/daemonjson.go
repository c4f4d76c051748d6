package gvisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// RuntimeArgs are the runtimeArgs runsc must have in daemon.json, in the
// order Chalk writes them.
var RuntimeArgs = []string{
	"-net-raw",
	"--systrap-disable-syscall-patching",
	"-overlay2=none",
	"-file-access=shared",
	"-network=sandbox",
	"--net-disconnect-ok",
}

// runscEntry is runtimes.runsc in daemon.json, as far as Chalk cares.
type runscEntry struct {
	Path        string   `json:"path"`
	RuntimeArgs []string `json:"runtimeArgs"`
}

// ParseError says where daemon.json stops being valid JSON.
type ParseError struct {
	Line   int // 1-based
	Column int // 1-based, in bytes
	Err    error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d, column %d: %v", e.Line, e.Column, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ErrNotObject is returned for a daemon.json whose top level, or whose
// runtimes, is valid JSON but not an object, which Chalk can't merge into.
var ErrNotObject = errors.New("not a JSON object")

// DaemonJSON returns the daemon.json to write: existing, which may be nil
// or empty, with runtimes.runsc set to runscPath and exactly RuntimeArgs.
// Every other key and every other runtime is kept as it is; keys come out
// sorted, indented by two spaces, with a final newline. It fails, rather
// than lose content, when existing isn't valid JSON (a *ParseError) or isn't
// an object (ErrNotObject).
func DaemonJSON(existing []byte, runscPath string) ([]byte, error) {
	top, runtimes, err := parse(existing)
	if err != nil {
		return nil, err
	}
	if top == nil {
		top = map[string]json.RawMessage{}
	}
	if runtimes == nil {
		runtimes = map[string]json.RawMessage{}
	}
	entry, err := marshal(runscEntry{Path: runscPath, RuntimeArgs: slices.Clone(RuntimeArgs)})
	if err != nil {
		return nil, err
	}
	runtimes["runsc"] = entry
	if top["runtimes"], err = marshal(runtimes); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parse splits daemon.json into its top-level keys and its runtimes. Either
// map is nil when absent; empty input is an empty file, which docker
// accepts.
func parse(data []byte) (top, runtimes map[string]json.RawMessage, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, nil
	}
	if err := json.Unmarshal(data, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := position(data, syn.Offset)
			return nil, nil, &ParseError{Line: line, Column: col, Err: err}
		}
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, nil, fmt.Errorf("the file is %s, %w", jsonKind(data), ErrNotObject)
		}
		return nil, nil, err
	}
	raw, ok := top["runtimes"]
	if !ok || string(raw) == "null" {
		return top, nil, nil
	}
	if err := json.Unmarshal(raw, &runtimes); err != nil {
		return nil, nil, fmt.Errorf("runtimes is %s, %w", jsonKind(raw), ErrNotObject)
	}
	return top, runtimes, nil
}

// position turns the offset a json.SyntaxError reports, the number of bytes
// read when it went wrong, into the line and column of the last byte read.
func position(data []byte, offset int64) (line, col int) {
	pos := int(offset) - 1
	if pos < 0 {
		pos = 0
	}
	if pos > len(data) {
		pos = len(data)
	}
	before := data[:pos]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = pos - bytes.LastIndexByte(before, '\n')
	return line, col
}

func jsonKind(raw json.RawMessage) string {
	switch b := bytes.TrimSpace(raw); {
	case len(b) == 0:
		return "empty"
	case b[0] == '[':
		return "an array"
	case b[0] == '"':
		return "a string"
	case b[0] == 't' || b[0] == 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// missingArgs returns the RuntimeArgs that args lacks, in RuntimeArgs'
// order. Each must appear exactly as written; order doesn't matter.
func missingArgs(args []string) []string {
	var missing []string
	for _, want := range RuntimeArgs {
		if !slices.Contains(args, want) {
			missing = append(missing, want)
		}
	}
	return missing
}
