package modelproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// startScripted serves testdata/two_turns.toml on a loopback port.
func startScripted(t *testing.T, token string) *httptest.Server {
	t.Helper()
	s, err := LoadScript("testdata/two_turns.toml")
	require.NoError(t, err)
	srv := httptest.NewServer(NewServer(s, token, nil))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, token, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

const (
	firstRequest  = `{"model":"m1","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"count the lines"}]}`
	secondRequest = `{"model":"m1","messages":[{"role":"user","content":"count the lines"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1_1","type":"function","function":{"name":"run","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1_1","content":[{"type":"text","text":"exit status 0\n"},{"type":"text","text":"12 data.txt\n"}]}]}`
)

func TestServerToolCallTurn(t *testing.T) {
	srv := startScripted(t, "")
	resp, body := post(t, srv.URL+"/v1/chat/completions", "", firstRequest)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var c completion
	require.NoError(t, json.Unmarshal(body, &c))
	require.Equal(t, "chat.completion", c.Object)
	require.Equal(t, "m1", c.Model, "the model the request names is echoed")
	require.True(t, strings.HasPrefix(c.ID, "chatcmpl-"))
	require.Len(t, c.Choices, 1)
	require.Equal(t, "tool_calls", *c.Choices[0].FinishReason)
	m := c.Choices[0].Message
	require.Equal(t, "assistant", m.Role)
	require.Equal(t, "Let me count the lines.", *m.Content)
	require.Len(t, m.ToolCalls, 2)
	require.Equal(t, "call_1_1", m.ToolCalls[0].ID)
	require.Equal(t, "function", m.ToolCalls[0].Type)
	require.Equal(t, "run", m.ToolCalls[0].Function.Name)
	require.JSONEq(t, `{"command":"wc -l data.txt"}`, m.ToolCalls[0].Function.Arguments)
	require.Equal(t, "call_custom", m.ToolCalls[1].ID)
	// "be brief" + "count the lines" = 23 bytes: 6 tokens.
	require.Equal(t, 6, c.Usage.PromptTokens)
	require.Equal(t, c.Usage.PromptTokens+c.Usage.CompletionTokens, c.Usage.TotalTokens)
	require.Positive(t, c.Usage.CompletionTokens)
}

func TestServerSecondTurnReadsToolParts(t *testing.T) {
	srv := startScripted(t, "")
	resp, body := post(t, srv.URL+"/v1/chat/completions", "", secondRequest)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var c completion
	require.NoError(t, json.Unmarshal(body, &c))
	require.Equal(t, "There are 12 lines.", *c.Choices[0].Message.Content)
	require.Empty(t, c.Choices[0].Message.ToolCalls)
	require.Equal(t, "stop", *c.Choices[0].FinishReason)
}

func TestServerStreamMatchesNonStreamed(t *testing.T) {
	srv := startScripted(t, "")
	for _, tc := range []struct{ name, req string }{{"tool calls", firstRequest}, {"content", secondRequest}} {
		t.Run(tc.name, func(t *testing.T) {
			_, plain := post(t, srv.URL+"/v1/chat/completions", "", tc.req)
			streamed := strings.Replace(tc.req, `{"model":"m1",`, `{"model":"m1","stream":true,"stream_options":{"include_usage":true},`, 1)
			resp, body := post(t, srv.URL+"/v1/chat/completions", "", streamed)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			require.True(t, bytes.HasSuffix(body, []byte("data: [DONE]\n\n")), "ends with [DONE]: %s", body)
			events, done := sseData(body)
			require.True(t, done)
			require.Greater(t, len(events), 4, "the answer comes in several chunks")
			// The usage chunk, last, has no choices.
			var last chunk
			require.NoError(t, json.Unmarshal(events[len(events)-1], &last))
			require.Empty(t, last.Choices)
			require.NotNil(t, last.Usage)

			whole, err := Reassemble(body)
			require.NoError(t, err)
			var a, b completion
			require.NoError(t, json.Unmarshal(plain, &a))
			require.NoError(t, json.Unmarshal(whole, &b))
			// The id hashes the request, which differs by "stream".
			require.NotEqual(t, a.ID, b.ID)
			b.ID, b.Created = a.ID, a.Created
			require.Equal(t, a, b, "the stream reassembles to the non-streamed answer")
		})
	}
}

func TestServerStreamWithoutUsage(t *testing.T) {
	srv := startScripted(t, "")
	resp, body := post(t, srv.URL+"/v1/chat/completions", "", strings.Replace(firstRequest, `{"model":"m1",`, `{"model":"m1","stream":true,`, 1))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(body), `"usage"`)
	// The tool call's first delta has its id and name, the rest only
	// pieces of its arguments.
	require.Contains(t, string(body), `"tool_calls":[{"index":0,"id":"call_1_1","type":"function","function":{"name":"run","arguments":""}}]`)
	require.Contains(t, string(body), `"tool_calls":[{"index":1,"function":{"arguments":`)
}

func TestServerErrors(t *testing.T) {
	srv := startScripted(t, "sekret")
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
		code, msg                       string
	}{
		{"no token", "POST", "/v1/chat/completions", "", firstRequest, 401, "invalid_api_key", "Authorization: Bearer"},
		{"wrong token", "POST", "/v1/chat/completions", "nope", firstRequest, 401, "invalid_api_key", "wrong API key"},
		{"not json", "POST", "/v1/chat/completions", "sekret", "{", 400, "invalid_json", "not a chat completion request"},
		{"no model", "POST", "/v1/chat/completions", "sekret", `{"messages":[{"role":"user","content":"x"}]}`, 400, "missing_required_parameter", "model"},
		{"no messages", "POST", "/v1/chat/completions", "sekret", `{"model":"m","messages":[]}`, 400, "missing_required_parameter", "at least one message"},
		{"bad role", "POST", "/v1/chat/completions", "sekret", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, 400, "invalid_value", `messages[0].role "robot"`},
		{"n=2", "POST", "/v1/chat/completions", "sekret", `{"model":"m","n":2,"messages":[{"role":"user","content":"count"}]}`, 400, "unsupported_value", "one choice"},
		{"diverged", "POST", "/v1/chat/completions", "sekret", `{"model":"m","messages":[{"role":"user","content":"hello"}]}`,
			409, "script_mismatch", `turn 1 (testdata/two_turns.toml:4) expects the last user or tool message to contain "count", but it is "hello"`},
		{"diverged second", "POST", "/v1/chat/completions", "sekret", strings.Replace(secondRequest, "12 data", "13 data", 1),
			409, "script_mismatch", `turn 2 (testdata/two_turns.toml:15) expects the last user or tool message to contain "12"`},
		{"exhausted", "POST", "/v1/chat/completions", "sekret",
			`{"model":"m","messages":[{"role":"assistant","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`,
			409, "script_exhausted", "already has 2 assistant messages and the script testdata/two_turns.toml has only 2 turns"},
		{"wrong method", "GET", "/v1/chat/completions", "sekret", "", 405, "method_not_allowed", "use POST"},
		{"unknown v1", "POST", "/v1/embeddings", "sekret", "{}", 404, "unknown_url", "/v1/embeddings"},
		{"unknown", "GET", "/", "", "", 404, "unknown_url", "serves /v1/chat/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode)
			var e apiError
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			require.NotNil(t, e.Error.Code)
			require.Equal(t, tc.code, *e.Error.Code)
			require.Contains(t, e.Error.Message, tc.msg)
			require.NotEmpty(t, e.Error.Type)
		})
	}
}

func TestServerTooLarge(t *testing.T) {
	srv := startScripted(t, "")
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", MaxRequestBytes) + `"}]}`
	resp, body := post(t, srv.URL+"/v1/chat/completions", "", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, string(body))
	require.Contains(t, string(body), "request_too_large")
}

func TestServerModelsAndHealth(t *testing.T) {
	srv := startScripted(t, "sekret")
	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "health needs no token")
	require.Equal(t, "ok\n", string(b))

	req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer sekret")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Equal(t, "list", list.Object)
	require.Len(t, list.Data, 1)
	require.Equal(t, "test-model", list.Data[0].ID)
}

func TestPieces(t *testing.T) {
	s := strings.Repeat("é", 20) + "abc"
	ps := pieces(s)
	require.Equal(t, s, strings.Join(ps, ""))
	for _, p := range ps {
		require.LessOrEqual(t, len(p), streamPiece)
		require.True(t, strings.ToValidUTF8(p, "?") == p, "piece %q cut a rune", p)
	}
	require.Nil(t, pieces(""))
}
