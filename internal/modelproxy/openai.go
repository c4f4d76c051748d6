// Package modelproxy is the model side of a run. It has two parts:
//
//   - Server, a scripted OpenAI-compatible model for offline use and
//     tests (`chalk model-proxy --script FILE`): it answers chat
//     completions, streamed or not, tool calls included, from a script of
//     turns.
//   - Forwarder, the endpoint the harness serves to the student inside the
//     sandbox: it forwards OpenAI-style requests to the run's model proxy
//     with the proxy's API key, applies CHALK_INFERENCE_SERVICE_TIER, and
//     reports every call for the transcript.
//
// docs/model-proxy.md describes both.
package modelproxy

import (
	"encoding/json"
	"net/http"
	"strings"
)

// The shapes of OpenAI's chat completions API that this package reads and
// writes. Fields it does not need are left out: the forwarder never
// re-encodes what it forwards.

type chatRequest struct {
	Model         string          `json:"model"`
	Messages      []chatMessage   `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options,omitempty"`
	N             *int            `json:"n,omitempty"`
	ServiceTier   json.RawMessage `json:"service_tier,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// text returns the message's text: its content when that is a string,
// else the text of its text parts, joined.
func (m chatMessage) text() string {
	if len(m.Content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

type wireToolCall struct {
	Index    *int         `json:"index,omitempty"` // in stream deltas only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type completion struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	Choices           []choice        `json:"choices"`
	Usage             *usage          `json:"usage,omitempty"`
	ServiceTier       json.RawMessage `json:"service_tier,omitempty"`
	SystemFingerprint json.RawMessage `json:"system_fingerprint,omitempty"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	FinishReason *string         `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs"`
}

type responseMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type chunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             *usage          `json:"usage,omitempty"`
	ServiceTier       json.RawMessage `json:"service_tier,omitempty"`
	SystemFingerprint json.RawMessage `json:"system_fingerprint,omitempty"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

// apiError is OpenAI's error body.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Error types, as OpenAI names them.
const (
	invalidRequest = "invalid_request_error"
	authError      = "authentication_error"
	serverError    = "server_error"
)

// writeError answers with an OpenAI-shaped error. code and param may be
// empty.
func writeError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	body := apiError{Error: apiErrorBody{Message: msg, Type: typ}}
	if code != "" {
		body.Error.Code = &code
	}
	if param != "" {
		body.Error.Param = &param
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
