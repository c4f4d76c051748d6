package modelproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// streamPiece is the most bytes of content or arguments one streamed
// chunk carries, so that even short answers arrive in several chunks, as
// they do from a real model.
const streamPiece = 16

// answer is one turn of the script, answered to one request.
type answer struct {
	id      string
	created int64
	model   string
	turn    Turn
	usage   usage
}

func (a answer) message() responseMessage {
	m := responseMessage{Role: "assistant"}
	if a.turn.Content != "" || len(a.turn.ToolCalls) == 0 {
		c := a.turn.Content
		m.Content = &c
	}
	for _, c := range a.turn.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, wireToolCall{ID: c.ID, Type: "function",
			Function: wireFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	return m
}

func (a answer) completion() completion {
	finish := a.turn.FinishReason
	u := a.usage
	return completion{
		ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
		Choices: []choice{{Index: 0, Message: a.message(), FinishReason: &finish, Logprobs: json.RawMessage("null")}},
		Usage:   &u,
	}
}

// stream writes the answer as server-sent events: the role, the content
// in pieces, each tool call (its id and name, then its arguments in
// pieces), the finish reason, the usage when asked for, and [DONE].
func (a answer) stream(w http.ResponseWriter, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(c chunk) bool {
		c.ID, c.Object, c.Created, c.Model = a.id, "chat.completion.chunk", a.created, a.model
		b, err := json.Marshal(c)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	one := func(d delta) chunk { return chunk{Choices: []chunkChoice{{Delta: d}}} }

	empty := ""
	if !send(one(delta{Role: "assistant", Content: &empty})) {
		return
	}
	for _, p := range pieces(a.turn.Content) {
		if !send(one(delta{Content: &p})) {
			return
		}
	}
	for i, c := range a.turn.ToolCalls {
		idx := i
		head := wireToolCall{Index: &idx, ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name}}
		if !send(one(delta{ToolCalls: []wireToolCall{head}})) {
			return
		}
		for _, p := range pieces(c.Arguments) {
			if !send(one(delta{ToolCalls: []wireToolCall{{Index: &idx, Function: wireFunction{Arguments: p}}}})) {
				return
			}
		}
	}
	finish := a.turn.FinishReason
	if !send(chunk{Choices: []chunkChoice{{Delta: delta{}, FinishReason: &finish}}}) {
		return
	}
	if includeUsage {
		u := a.usage
		if !send(chunk{Choices: []chunkChoice{}, Usage: &u}) {
			return
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// pieces cuts s into pieces of at most streamPiece bytes, never inside a
// UTF-8 sequence.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(streamPiece, len(s))
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 { // a rune longer than a piece: take it whole
			_, n = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
