package modelproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// sseData returns the data of each server-sent event in stream, in order,
// up to and without "[DONE]"; done says whether "[DONE]" was seen.
func sseData(stream []byte) (events [][]byte, done bool) {
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 64<<10), len(stream)+1)
	var cur []byte
	have := false
	flush := func() bool {
		if !have {
			return false
		}
		have = false
		if string(bytes.TrimSpace(cur)) == "[DONE]" {
			return true
		}
		events = append(events, cur)
		cur = nil
		return false
	}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if flush() {
				return events, true
			}
			continue
		}
		v, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // comments, event:, id:, retry:
		}
		v = strings.TrimPrefix(v, " ")
		if have {
			cur = append(cur, '\n')
		}
		cur = append(cur, v...)
		have = true
	}
	if flush() {
		return events, true
	}
	return events, false
}

// Reassemble turns a streamed chat completion (the server-sent events of
// chat.completion.chunk objects) into the one chat.completion a
// non-streamed request would have had. It fails when the stream holds no
// chunk or something that is not one.
func Reassemble(stream []byte) ([]byte, error) {
	return reassemble(sseData(stream))
}

// reassemble is Reassemble on a stream sseData has split.
func reassemble(events [][]byte, done bool) ([]byte, error) {
	if len(events) == 0 {
		return nil, errors.New("the stream holds no chat.completion.chunk event")
	}
	out := completion{Object: "chat.completion"}
	type toolAcc struct {
		id, typ, name string
		args          strings.Builder
	}
	type choiceAcc struct {
		role       string
		content    strings.Builder
		hasContent bool
		tools      map[int]*toolAcc
		finish     *string
	}
	choices := map[int]*choiceAcc{}
	for i, ev := range events {
		var c chunk
		if err := json.Unmarshal(ev, &c); err != nil {
			return nil, fmt.Errorf("event %d of the stream is not a chat.completion.chunk: %w", i+1, err)
		}
		if c.Object != "" && c.Object != "chat.completion.chunk" {
			return nil, fmt.Errorf("event %d of the stream is a %q, not a chat.completion.chunk", i+1, c.Object)
		}
		if c.ID != "" {
			out.ID = c.ID
		}
		if c.Created != 0 {
			out.Created = c.Created
		}
		if c.Model != "" {
			out.Model = c.Model
		}
		if len(c.ServiceTier) > 0 && string(c.ServiceTier) != "null" {
			out.ServiceTier = c.ServiceTier
		}
		if len(c.SystemFingerprint) > 0 && string(c.SystemFingerprint) != "null" {
			out.SystemFingerprint = c.SystemFingerprint
		}
		if c.Usage != nil {
			u := *c.Usage
			out.Usage = &u
		}
		for _, ch := range c.Choices {
			acc := choices[ch.Index]
			if acc == nil {
				acc = &choiceAcc{tools: map[int]*toolAcc{}}
				choices[ch.Index] = acc
			}
			if ch.Delta.Role != "" {
				acc.role = ch.Delta.Role
			}
			if ch.Delta.Content != nil {
				acc.content.WriteString(*ch.Delta.Content)
				acc.hasContent = true
			}
			for j, tc := range ch.Delta.ToolCalls {
				idx := j
				if tc.Index != nil {
					idx = *tc.Index
				}
				t := acc.tools[idx]
				if t == nil {
					t = &toolAcc{}
					acc.tools[idx] = t
				}
				if tc.ID != "" {
					t.id = tc.ID
				}
				if tc.Type != "" {
					t.typ = tc.Type
				}
				t.name += tc.Function.Name
				t.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil {
				f := *ch.FinishReason
				acc.finish = &f
			}
		}
	}
	idx := make([]int, 0, len(choices))
	for i := range choices {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		acc := choices[i]
		m := responseMessage{Role: acc.role}
		if m.Role == "" {
			m.Role = "assistant"
		}
		text := acc.content.String()
		if acc.hasContent && (text != "" || len(acc.tools) == 0) {
			m.Content = &text
		}
		tidx := make([]int, 0, len(acc.tools))
		for j := range acc.tools {
			tidx = append(tidx, j)
		}
		sort.Ints(tidx)
		for _, j := range tidx {
			t := acc.tools[j]
			typ := t.typ
			if typ == "" {
				typ = "function"
			}
			m.ToolCalls = append(m.ToolCalls, wireToolCall{ID: t.id, Type: typ,
				Function: wireFunction{Name: t.name, Arguments: t.args.String()}})
		}
		out.Choices = append(out.Choices, choice{Index: i, Message: m, FinishReason: acc.finish, Logprobs: json.RawMessage("null")})
	}
	if out.Choices == nil {
		out.Choices = []choice{}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if !done {
		return b, errIncomplete
	}
	return b, nil
}

// errIncomplete says the stream ended without its "data: [DONE]": what
// arrived is reassembled, but the answer may be cut short.
var errIncomplete = errors.New("the stream ended without data: [DONE]")
