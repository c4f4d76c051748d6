package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// message is one chat message, as OpenAI's API has it.
type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	Index    *int     `json:"index,omitempty"` // in streamed deltas only
	ID       string   `json:"id,omitempty"`
	Type     string   `json:"type,omitempty"`
	Function function `json:"function"`
}

type function struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// tools are the functions the model may call.
var tools = json.RawMessage(`[
 {"type": "function", "function": {"name": "run",
  "description": "Run a shell command (/bin/sh -c) in the working directory. Returns its exit status and its output, stdout and stderr together.",
  "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "the command line"}}, "required": ["command"]}}},
 {"type": "function", "function": {"name": "write_file",
  "description": "Write a file in the output directory, replacing it if it exists.",
  "parameters": {"type": "object", "properties": {
    "path": {"type": "string", "description": "path relative to the output directory"},
    "content": {"type": "string", "description": "the whole content of the file"}}, "required": ["path", "content"]}}}
]`)

// client talks to the model.
type client struct {
	cfg  config
	http *http.Client
}

func newClient(c config) *client {
	return &client{cfg: c, http: &http.Client{Timeout: 5 * time.Minute}}
}

// attempts is how many times a call is tried when the model is
// unreachable, rate limited or failing on its side.
const attempts = 3

// chat asks the model for the next assistant message.
func (c *client) chat(ctx context.Context, messages []message) (message, error) {
	req := map[string]any{"model": c.cfg.model, "messages": messages, "tools": tools}
	if c.cfg.stream {
		req["stream"] = true
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return message{}, err
	}
	var lastErr error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-time.After(time.Duration(i) * time.Second):
			case <-ctx.Done():
				return message{}, ctx.Err()
			}
		}
		m, retry, err := c.once(ctx, body)
		if err == nil {
			return m, nil
		}
		lastErr = err
		if !retry {
			break
		}
	}
	return message{}, lastErr
}

// once makes one call; retry says whether trying again may help.
func (c *client) once(ctx context.Context, body []byte) (message, bool, error) {
	url := strings.TrimRight(c.cfg.baseURL, "/") + "/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return message{}, false, fmt.Errorf("model endpoint %s: %w", c.cfg.baseURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return message{}, ctx.Err() == nil, fmt.Errorf("call the model: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return message{}, retry, fmt.Errorf("the model answered %s: %s", resp.Status, errorMessage(b))
	}
	var m message
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		m, err = readStream(resp.Body)
	} else {
		m, err = readCompletion(resp.Body)
	}
	if err != nil {
		return message{}, true, err
	}
	return m, false, nil
}

// errorMessage returns the message of an OpenAI error body, else the body.
func errorMessage(b []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(b))
}

func readCompletion(r io.Reader) (message, error) {
	var resp struct {
		Choices []struct {
			Message message `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(r).Decode(&resp); err != nil {
		return message{}, fmt.Errorf("read the model's answer: %w", err)
	}
	if len(resp.Choices) == 0 {
		return message{}, errors.New("the model's answer has no choices")
	}
	m := resp.Choices[0].Message
	m.Role = "assistant"
	return m, nil
}

// readStream puts a streamed answer's deltas together into one message.
func readStream(r io.Reader) (message, error) {
	var content strings.Builder
	hasContent := false
	calls := map[int]*toolCall{}
	done := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			done = true
			break
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   *string    `json:"content"`
					ToolCalls []toolCall `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return message{}, fmt.Errorf("read the model's stream: %w", err)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				content.WriteString(*c.Delta.Content)
				hasContent = true
			}
			for j, d := range c.Delta.ToolCalls {
				i := j
				if d.Index != nil {
					i = *d.Index
				}
				t := calls[i]
				if t == nil {
					t = &toolCall{Type: "function"}
					calls[i] = t
				}
				if d.ID != "" {
					t.ID = d.ID
				}
				t.Function.Name += d.Function.Name
				t.Function.Arguments += d.Function.Arguments
			}
		}
	}
	if err := sc.Err(); err != nil {
		return message{}, fmt.Errorf("read the model's stream: %w", err)
	}
	if !done {
		return message{}, errors.New("the model's stream ended before data: [DONE]")
	}
	m := message{Role: "assistant"}
	if hasContent {
		m.Content = str(content.String())
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		m.ToolCalls = append(m.ToolCalls, *calls[i])
	}
	return m, nil
}
