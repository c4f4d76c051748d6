package view

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// modelView is a model call as a person reads it: the messages the
// student sent (the ones earlier calls did not already show), the
// model's reply, and the raw bodies.
type modelView struct {
	Info     *transcript.ModelCallInfo
	OK       bool
	Earlier  int // messages left out: the previous call sent them too
	System   string
	Messages []message
	Reply    []message
	Finish   string
	Tools    []string // the tools offered to the model
	Request  string   // pretty JSON
	Response string
}

// message is one chat message, in either of the common shapes (OpenAI's
// chat completions, Anthropic's messages).
type message struct {
	Role  string
	Parts []part
}

// part is a piece of a message: text, a tool call or a tool's result.
type part struct {
	Kind string // text, tool_call, tool_result, other
	Text string
	Name string // tool_call: the tool; tool_result: the call's id
}

func (r *renderer) model(m *transcript.ModelCallInfo) *modelView {
	v := &modelView{
		Info:     m,
		OK:       m.Status >= 200 && m.Status < 300 && m.Error == "",
		Request:  pretty(m.Request),
		Response: pretty(m.Response),
	}
	var req struct {
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(m.Request, &req) == nil {
		for _, t := range req.Tools {
			if n := t.Name + t.Function.Name; n != "" {
				v.Tools = append(v.Tools, n)
			}
		}
		v.System = textOf(req.System)
		// A conversation resends every earlier message: show only what
		// is new since the previous call when it is a continuation.
		h := sha256.New()
		prefix := ""
		skip := 0
		for i, raw := range req.Messages {
			h.Write(raw)
			h.Write([]byte{0})
			if i+1 == r.state.Msgs {
				prefix = hex.EncodeToString(h.Sum(nil))
			}
		}
		if r.state.Msgs > 0 && prefix == r.state.MsgHash {
			skip = r.state.Msgs
		}
		v.Earlier = skip
		for _, raw := range req.Messages[skip:] {
			v.Messages = append(v.Messages, parseMessage(raw))
		}
		r.state.Msgs = len(req.Messages)
		r.state.MsgHash = hex.EncodeToString(h.Sum(nil))
	}
	var resp struct {
		Choices []struct {
			Message      json.RawMessage `json:"message"`
			FinishReason string          `json:"finish_reason"`
		} `json:"choices"`
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
	}
	if json.Unmarshal(m.Response, &resp) == nil {
		for _, c := range resp.Choices {
			v.Reply = append(v.Reply, parseMessage(c.Message))
			v.Finish = c.FinishReason
		}
		if len(resp.Choices) == 0 && resp.Content != nil {
			v.Reply = append(v.Reply, parseMessage(m.Response))
			v.Finish = resp.StopReason
		}
	}
	return v
}

func parseMessage(raw json.RawMessage) message {
	var m struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return message{Role: "?", Parts: []part{{Kind: "other", Text: pretty(raw)}}}
	}
	msg := message{Role: m.Role}
	kind := "text"
	if m.Role == "tool" {
		kind = "tool_result"
	}
	msg.Parts = contentParts(m.Content, kind, m.ToolCallID)
	for _, tc := range m.ToolCalls {
		msg.Parts = append(msg.Parts, part{Kind: "tool_call", Name: tc.Function.Name, Text: prettyArgs(tc.Function.Arguments)})
	}
	return msg
}

// contentParts reads a message's content: a string, or a list of typed
// blocks.
func contentParts(raw json.RawMessage, kind, id string) []part {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil
		}
		return []part{{Kind: kind, Text: s, Name: id}}
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return []part{{Kind: "other", Text: pretty(raw)}}
	}
	var out []part
	for _, b := range blocks {
		var blk struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if json.Unmarshal(b, &blk) != nil {
			out = append(out, part{Kind: "other", Text: pretty(b)})
			continue
		}
		switch blk.Type {
		case "text", "input_text", "output_text":
			out = append(out, part{Kind: kind, Text: blk.Text, Name: id})
		case "tool_use":
			out = append(out, part{Kind: "tool_call", Name: blk.Name, Text: pretty(blk.Input)})
		case "tool_result":
			text := textOf(blk.Content)
			out = append(out, part{Kind: "tool_result", Name: blk.ToolUseID, Text: text})
		default:
			out = append(out, part{Kind: "other", Text: pretty(b)})
		}
	}
	return out
}

// textOf returns the text of a string or of a list of text blocks.
func textOf(raw json.RawMessage) string {
	var parts []string
	for _, p := range contentParts(raw, "text", "") {
		parts = append(parts, p.Text)
	}
	return strings.Join(parts, "\n")
}

// prettyArgs indents a tool call's arguments, which arrive as a string
// holding JSON.
func prettyArgs(s string) string {
	if !json.Valid([]byte(s)) {
		return s
	}
	return pretty([]byte(s))
}
