package modelproxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// MaxRequestBytes bounds a request body, for the server and the forwarder.
const MaxRequestBytes = 32 << 20

// Server is the scripted model: an http.Handler speaking OpenAI's chat
// completions API. Which turn of the script answers a request depends on
// the request alone (the number of assistant messages already in it), so
// any number of conversations can share one server.
type Server struct {
	script *Script
	token  string
	log    *slog.Logger
	now    func() time.Time
}

// NewServer returns a server answering from s. When token is not empty,
// every /v1 request must carry "Authorization: Bearer TOKEN". log may be
// nil.
func NewServer(s *Script, token string, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{script: s, token: token, log: log, now: time.Now}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz":
		if !method(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return
	case !strings.HasPrefix(r.URL.Path, "/v1/"):
		writeError(w, http.StatusNotFound, invalidRequest, "unknown_url",
			"", fmt.Sprintf("no such endpoint %s %s: the scripted model serves /v1/chat/completions, /v1/models and /healthz", r.Method, r.URL.Path))
		return
	}
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, authError, "invalid_api_key", "",
			"missing or wrong API key: send the server's token as 'Authorization: Bearer TOKEN'")
		return
	}
	switch r.URL.Path {
	case "/v1/models":
		if method(w, r, http.MethodGet) {
			s.models(w)
		}
	case "/v1/chat/completions":
		if method(w, r, http.MethodPost) {
			s.chat(w, r)
		}
	default:
		writeError(w, http.StatusNotFound, invalidRequest, "unknown_url",
			"", fmt.Sprintf("no such endpoint %s %s: the scripted model serves /v1/chat/completions and /v1/models", r.Method, r.URL.Path))
	}
}

func method(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	for _, m := range allowed {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed, invalidRequest, "method_not_allowed", "",
		fmt.Sprintf("%s %s is not allowed; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or ")))
	return false
}

func (s *Server) authorized(r *http.Request) bool {
	if s.token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

func (s *Server) models(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.script.Model, "object": "model", "created": 0, "owned_by": "chalk",
		}},
	})
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, invalidRequest, "request_too_large", "",
			fmt.Sprintf("the request body is over %d bytes", int64(MaxRequestBytes)))
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, invalidRequest, "", "", "read the request body: "+err.Error())
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, invalidRequest, "invalid_json", "",
			"the request body is not a chat completion request in JSON: "+err.Error())
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, invalidRequest, "missing_required_parameter", "model",
			"you must provide a model parameter")
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, invalidRequest, "missing_required_parameter", "messages",
			"messages must hold at least one message")
		return
	}
	if req.N != nil && *req.N != 1 {
		writeError(w, http.StatusBadRequest, invalidRequest, "unsupported_value", "n",
			"the scripted model gives one choice per request: leave n out or set it to 1")
		return
	}
	assistants := 0
	var last *chatMessage
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case "assistant":
			assistants++
		case "user", "tool", "function":
			last = m
		case "system", "developer":
		default:
			writeError(w, http.StatusBadRequest, invalidRequest, "invalid_value", fmt.Sprintf("messages[%d].role", i),
				fmt.Sprintf("messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role))
			return
		}
	}
	if assistants >= len(s.script.Turns) {
		s.log.Warn("script exhausted", "assistant_messages", assistants, "turns", len(s.script.Turns))
		writeError(w, http.StatusConflict, invalidRequest, "script_exhausted", "messages",
			fmt.Sprintf("the conversation already has %d assistant messages and the script %s has only %d turns: add turns to the script, or stop the conversation sooner",
				assistants, s.script.Path, len(s.script.Turns)))
		return
	}
	turn := s.script.Turns[assistants]
	if len(turn.Expect) > 0 {
		got := ""
		if last != nil {
			got = last.text()
		}
		for _, want := range turn.Expect {
			if !strings.Contains(got, want) {
				s.log.Warn("conversation diverged from the script", "turn", assistants+1, "expect", want)
				writeError(w, http.StatusConflict, invalidRequest, "script_mismatch", "messages",
					fmt.Sprintf("the conversation diverged from the script: turn %d (%s) expects the last user or tool message to contain %q, but it is %q",
						assistants+1, at(s.script.Path, turn.Line), want, clip(got, 300)))
				return
			}
		}
	}
	if turn.Delay > 0 {
		t := time.NewTimer(turn.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	sum := sha256.Sum256(body)
	a := answer{
		id:      "chatcmpl-" + hex.EncodeToString(sum[:12]),
		created: s.now().Unix(),
		model:   req.Model,
		turn:    turn,
		usage:   estimateUsage(req, turn),
	}
	s.log.Debug("answer", "turn", assistants+1, "stream", req.Stream)
	if req.Stream {
		a.stream(w, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a.completion())
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// estimateUsage counts tokens the way the docs say: a token per four
// bytes of text, rounded up.
func estimateUsage(req chatRequest, t Turn) usage {
	in := 0
	for _, m := range req.Messages {
		in += len(m.text())
		for _, c := range m.ToolCalls {
			in += len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	out := len(t.Content)
	for _, c := range t.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	u := usage{PromptTokens: (in + 3) / 4, CompletionTokens: (out + 3) / 4}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}
