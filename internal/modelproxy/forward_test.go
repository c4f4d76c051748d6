package modelproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// recorder collects what a forwarder records.
type recorder struct {
	mu    sync.Mutex
	calls []transcript.ModelCallInfo
	ch    chan transcript.ModelCallInfo
}

func newRecorder() *recorder { return &recorder{ch: make(chan transcript.ModelCallInfo, 100)} }

func (r *recorder) record(c transcript.ModelCallInfo) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	r.ch <- c
}

// next waits for the next recorded call.
func (r *recorder) next(t *testing.T) transcript.ModelCallInfo {
	t.Helper()
	select {
	case c := <-r.ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no call was recorded")
		return transcript.ModelCallInfo{}
	}
}

// forwarder serves a Forwarder to upstream on a loopback port.
func forwarder(t *testing.T, upstream, key, tier string) (string, *recorder) {
	t.Helper()
	rec := newRecorder()
	f, err := NewForwarder(ForwarderConfig{Upstream: upstream, APIKey: key, ServiceTier: tier, Record: rec.record})
	require.NoError(t, err)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", rec
}

// scripted serves testdata/two_turns.toml with a fixed clock, so that two
// answers to one request are byte for byte the same.
func scripted(t *testing.T, token string) string {
	t.Helper()
	s, err := LoadScript("testdata/two_turns.toml")
	require.NoError(t, err)
	h := NewServer(s, token, nil)
	h.now = func() time.Time { return time.Unix(1700000000, 0) }
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestForwardChat(t *testing.T) {
	up := scripted(t, "upstream-key")
	base, rec := forwarder(t, up, "upstream-key", "")

	direct, directBody := post(t, up+"/chat/completions", "upstream-key", firstRequest)
	require.Equal(t, 200, direct.StatusCode)
	// The student's own key (the placeholder) is replaced by the run's.
	resp, body := post(t, base+"/chat/completions", PlaceholderAPIKey, firstRequest)
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.Equal(t, string(directBody), string(body), "the answer passes through unchanged")

	c := rec.next(t)
	require.Equal(t, "m1", c.Model)
	require.False(t, c.Stream)
	require.Equal(t, 200, c.Status)
	require.Empty(t, c.Error)
	require.Empty(t, c.ServiceTier)
	require.GreaterOrEqual(t, c.LatencyMS, int64(0))
	require.Equal(t, 6, c.PromptTokens)
	require.Positive(t, c.CompletionTokens)
	require.JSONEq(t, firstRequest, string(c.Request))
	require.JSONEq(t, string(directBody), string(c.Response))
	// The event it goes into is valid JSON.
	_, err := transcript.Marshal(transcript.Event{Type: transcript.ModelCall, Model: &c})
	require.NoError(t, err)
}

func TestForwardStream(t *testing.T) {
	up := scripted(t, "")
	base, rec := forwarder(t, up, "", "")
	req := strings.Replace(firstRequest, `{"model":"m1",`, `{"model":"m1","stream":true,"stream_options":{"include_usage":true},`, 1)

	_, directBody := post(t, up+"/chat/completions", "", req)
	resp, body := post(t, base+"/chat/completions", "", req)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, string(directBody), string(body), "the stream passes through unchanged")

	c := rec.next(t)
	require.True(t, c.Stream)
	require.Equal(t, 200, c.Status)
	require.Empty(t, c.Error)
	require.Equal(t, 6, c.PromptTokens)
	require.Positive(t, c.CompletionTokens)
	var got completion
	require.NoError(t, json.Unmarshal(c.Response, &got))
	require.Equal(t, "chat.completion", got.Object, "the stream is recorded as one completion")
	require.Len(t, got.Choices[0].Message.ToolCalls, 2)
	require.JSONEq(t, `{"command":"wc -l data.txt"}`, got.Choices[0].Message.ToolCalls[0].Function.Arguments)
	require.Equal(t, "Let me count the lines.", *got.Choices[0].Message.Content)
}

// echoUpstream answers every request with what it received.
func echoUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"path": r.URL.Path, "auth": r.Header.Get("Authorization"), "cookie": r.Header.Get("Cookie"),
			"api_key": r.Header.Get("Api-Key"), "body": json.RawMessage(b),
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type echoed struct {
	Path, Auth, Cookie string
	APIKey             string `json:"api_key"`
	Body               map[string]any
}

func TestForwardServiceTierAndHeaders(t *testing.T) {
	up := echoUpstream(t)
	for _, tc := range []struct {
		name, upstream, key, tier, body string
		wantPath, wantAuth, wantTier    string
	}{
		{"tier replaces the student's", up + "/v1", "k", "flex", `{"model":"m","service_tier":"priority"}`, "/v1/chat/completions", "Bearer k", "flex"},
		{"tier is added", up + "/v1/", "k", "flex", `{"model":"m","messages":[{"role":"user","content":"a < b && c"}]}`, "/v1/chat/completions", "Bearer k", "flex"},
		{"no tier: the student's passes", up + "/api/v1", "", "", `{"model":"m","service_tier":"priority"}`, "/api/v1/chat/completions", "", "priority"},
		{"no path means /v1", up, "k", "", `{"model":"m"}`, "/v1/chat/completions", "Bearer k", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, rec := forwarder(t, tc.upstream, tc.key, tc.tier)
			req, _ := http.NewRequest("POST", base+"/chat/completions", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer student-key")
			req.Header.Set("Api-Key", "student-key")
			req.Header.Set("Cookie", "a=b")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			var e echoed
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			resp.Body.Close()
			require.Equal(t, tc.wantPath, e.Path)
			require.Equal(t, tc.wantAuth, e.Auth, "the student's key never goes upstream")
			require.Empty(t, e.APIKey)
			require.Empty(t, e.Cookie)
			if tc.wantTier == "" {
				require.NotContains(t, e.Body, "service_tier")
			} else {
				require.Equal(t, tc.wantTier, e.Body["service_tier"])
			}
			c := rec.next(t)
			require.Equal(t, tc.wantTier, c.ServiceTier)
			require.Equal(t, "m", c.Model)
			require.NotContains(t, string(c.Request), "student-key")
			require.NotContains(t, string(c.Request), `\u003c`, "the student's text is not escaped")
		})
	}
}

func TestForwardGetIsNotRecorded(t *testing.T) {
	up := scripted(t, "")
	base, rec := forwarder(t, up, "", "")
	resp, err := http.Get(base + "/models")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(b), `"test-model"`)
	// A POST after it is the first thing recorded.
	post(t, base+"/chat/completions", "", firstRequest)
	require.Equal(t, 200, rec.next(t).Status)
	require.Len(t, rec.calls, 1)

	resp, err = http.Get(strings.TrimSuffix(base, "/v1") + "/chat/completions")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode, "only /v1/ is forwarded")
}

func TestForwardUpstreamRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	base, rec := forwarder(t, "http://"+addr+"/v1", "secret-key", "")
	resp, body := post(t, base+"/chat/completions", "", firstRequest)
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	var e apiError
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, "model_proxy_unreachable", *e.Error.Code)
	require.Contains(t, e.Error.Message, "could not be reached")
	require.Contains(t, e.Error.Message, "connection refused")

	c := rec.next(t)
	require.Equal(t, 0, c.Status)
	require.Contains(t, c.Error, "could not be reached")
	require.JSONEq(t, firstRequest, string(c.Request))
	require.Nil(t, c.Response)
	require.NotContains(t, c.Error+string(body), "secret-key")
}

func TestForwardUpstreamFails(t *testing.T) {
	for _, tc := range []struct {
		name        string
		handler     http.HandlerFunc
		status      int
		err         string
		wantBody    string
		wantRecResp string
	}{
		{"500 with an OpenAI error", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"the GPU caught fire","type":"server_error"}}`)
		}, 500, "the model proxy answered 500: the GPU caught fire", `{"error":{"message":"the GPU caught fire","type":"server_error"}}`, `{"error":{"message":"the GPU caught fire","type":"server_error"}}`},
		{"garbage", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>bad gateway\x01</html>")
		}, 200, "the model proxy answered 200 with a body that is not JSON", "<html>bad gateway\x01</html>", `"<html>bad gateway\u0001</html>"`},
		{"empty", func(w http.ResponseWriter, r *http.Request) {}, 200, "not JSON", "", `""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(tc.handler)
			defer up.Close()
			base, rec := forwarder(t, up.URL, "", "")
			resp, body := post(t, base+"/chat/completions", "", firstRequest)
			require.Equal(t, tc.status, resp.StatusCode)
			require.Equal(t, tc.wantBody, string(body), "the student gets what the proxy said")
			c := rec.next(t)
			require.Equal(t, tc.status, c.Status)
			require.Contains(t, c.Error, tc.err)
			require.JSONEq(t, tc.wantRecResp, string(c.Response))
		})
	}
}

// The upstream sends part of a stream and hangs up: the student sees the
// stream break, and the record has what came, reassembled, and why it
// stopped.
func TestForwardStreamBrokenOff(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"half an "}}]}`+"\n\n")
		io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"answer"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer up.Close()
	base, rec := forwarder(t, up.URL, "", "")

	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err, "the student sees the stream break")
	require.Contains(t, string(got), "half an ")

	c := rec.next(t)
	require.Equal(t, 200, c.Status)
	require.True(t, c.Stream)
	require.Contains(t, c.Error, "broke off")
	var whole completion
	require.NoError(t, json.Unmarshal(c.Response, &whole))
	require.Equal(t, "half an answer", *whole.Choices[0].Message.Content)
}

// The stream ends cleanly but without [DONE].
func TestForwardStreamWithoutDone(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\n")
	}))
	defer up.Close()
	base, rec := forwarder(t, up.URL, "", "")
	resp, body := post(t, base+"/chat/completions", "", `{"model":"m","stream":true}`)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(body), `"hi"`)
	c := rec.next(t)
	require.Contains(t, c.Error, "without data: [DONE]")
	require.Contains(t, string(c.Response), `"content":"hi"`)
}

// The student stops reading at data: [DONE], before the HTTP body ends:
// the answer was whole, and is recorded without an error.
func TestForwardStudentStopsAtDone(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"all"},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		select { // the end of the body is late
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer up.Close()
	defer close(release)
	base, rec := forwarder(t, up.URL, "", "")

	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	require.NoError(t, err)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, "data: [DONE]") {
			break
		}
	}
	resp.Body.Close()

	c := rec.next(t)
	require.Equal(t, 200, c.Status)
	require.Empty(t, c.Error)
	require.Contains(t, string(c.Response), `"content":"all"`)
}

// A slow upstream and a student that gives up: the call is recorded as
// cancelled, and the forwarder does not wait for the upstream.
func TestForwardStudentGivesUp(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer up.Close()
	defer close(release)
	base, rec := forwarder(t, up.URL, "", "")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/chat/completions", strings.NewReader(firstRequest))
	_, err := http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	c := rec.next(t)
	require.Equal(t, 0, c.Status)
	require.Contains(t, c.Error, "the student cancelled the request")
}

// A student that stops reading a slow stream midway.
func TestForwardStudentLeavesMidStream(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"so far"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer up.Close()
	defer close(release)
	base, rec := forwarder(t, up.URL, "", "")

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "so far", "the first chunk arrives before the stream ends")
	cancel()
	resp.Body.Close()

	c := rec.next(t)
	require.Equal(t, 200, c.Status)
	require.NotEmpty(t, c.Error)
	require.Contains(t, string(c.Response), "so far")
}

func TestForwardBodyLimits(t *testing.T) {
	big := strings.Repeat("x", MaxRecordBytes+10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"big":%q,"usage":{"prompt_tokens":1,"completion_tokens":2}}`, big)
	}))
	defer up.Close()
	base, rec := forwarder(t, up.URL, "", "")

	// A request over MaxRequestBytes is refused, and recorded as such.
	resp, body := post(t, base+"/chat/completions", "", `{"model":"m","x":"`+strings.Repeat("y", MaxRequestBytes)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Contains(t, string(body), "request_too_large")
	c := rec.next(t)
	require.Equal(t, 0, c.Status)
	require.Contains(t, c.Error, "not forwarded")

	// A response over MaxRecordBytes reaches the student whole; the record
	// holds a stand-in, and the event still fits a transcript line.
	resp, body = post(t, base+"/chat/completions", "", `{"model":"m","x":"`+big+`"}`)
	require.Equal(t, 200, resp.StatusCode)
	require.Greater(t, len(body), MaxRecordBytes)
	c = rec.next(t)
	require.Equal(t, 200, c.Status)
	require.Contains(t, string(c.Request), "chalk_not_recorded")
	require.Contains(t, string(c.Response), "chalk_not_recorded")
	line, err := transcript.Marshal(transcript.Event{Type: transcript.ModelCall, Model: &c})
	require.NoError(t, err)
	require.Less(t, len(line), transcript.MaxLine)
}

func TestNewForwarderErrors(t *testing.T) {
	for _, tc := range []struct{ upstream, tier, err string }{
		{"localhost:8787", "", "the scheme must be http or https"},
		{"ftp://x/v1", "", "the scheme must be http or https"},
		{"http:///v1", "", "has no host"},
		{"http://x/v1?a=b", "", "no query or fragment"},
		{"http://x/v1", "flex tier", `CHALK_INFERENCE_SERVICE_TIER="flex tier" is not a service tier name`},
	} {
		_, err := NewForwarder(ForwarderConfig{Upstream: tc.upstream, ServiceTier: tc.tier})
		require.ErrorContains(t, err, tc.err, tc.upstream)
		require.NotEmpty(t, hint.Of(err))
	}
	_, err := NewForwarder(ForwarderConfig{Upstream: "http://user:pw@x"})
	require.NoError(t, err)
	_, err = NewForwarder(ForwarderConfig{Upstream: "ftp://user:pw@x"})
	require.NotContains(t, err.Error(), "pw", "a password in the URL is never printed")
}

// Listen serves the forwarder, tells the student where, and Close waits
// for the calls still running to be recorded.
func TestEndpoint(t *testing.T) {
	up := scripted(t, "")
	rec := newRecorder()
	f, err := NewForwarder(ForwarderConfig{Upstream: up, Record: rec.record})
	require.NoError(t, err)
	e, err := f.Listen("127.0.0.1:0")
	require.NoError(t, err)
	env := e.StudentEnv()
	require.Equal(t, e.URL, env["OPENAI_BASE_URL"])
	require.Equal(t, e.URL, env["CHALK_MODEL_URL"])
	require.Equal(t, PlaceholderAPIKey, env["OPENAI_API_KEY"])

	resp, body := post(t, env["OPENAI_BASE_URL"]+"/chat/completions", env["OPENAI_API_KEY"], firstRequest)
	require.Equal(t, 200, resp.StatusCode, string(body))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.Close(ctx))
	require.Len(t, rec.calls, 1, "recorded by the time Close returns")
	_, err = http.Get(e.URL + "/models")
	require.Error(t, err, "closed")
}

// startServer serves h on a loopback port for the test or benchmark.
func startServer(tb testing.TB, h http.Handler) string {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL
}
