package modelproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// MaxRecordBytes bounds each of the request and the response body that a
// model.call event holds. Both together stay under transcript.MaxLine.
// A larger body is still forwarded whole; the event holds a stand-in
// (see truncatedBody).
const MaxRecordBytes = 6 << 20

// ServiceTierEnv names the service tier the forwarder asks the model
// proxy for.
const ServiceTierEnv = "CHALK_INFERENCE_SERVICE_TIER"

// ForwarderConfig is what a Forwarder needs.
type ForwarderConfig struct {
	// Upstream is the model proxy's base URL, as an OpenAI client takes
	// it: http(s)://HOST[:PORT]/v1. A request for /v1/X goes to
	// Upstream/X. When the URL has no path, /v1 is assumed.
	Upstream string
	// APIKey is sent upstream as "Authorization: Bearer APIKEY" in place
	// of whatever the student sent. Empty: no Authorization header.
	APIKey string
	// ServiceTier, when not empty, is set as "service_tier" in every JSON
	// request body, replacing the student's. Empty: the student's own
	// service_tier, if any, passes through.
	ServiceTier string
	// Record is called once for every POST forwarded (or refused), after
	// its response has ended. Calls are serialized. May be nil.
	Record func(transcript.ModelCallInfo)
	// Log may be nil.
	Log *slog.Logger
	// Transport reaches the upstream; nil means a direct connection
	// (environment proxies are ignored: the sandbox's firewall lets the
	// model proxy through, not an HTTP proxy).
	Transport http.RoundTripper
}

// Forwarder is the model endpoint the harness serves to the student on
// the sandbox's loopback: an http.Handler that forwards OpenAI-style
// requests to the run's model proxy, streaming answers through as they
// come, and reports each call.
type Forwarder struct {
	upstream *url.URL
	apiKey   string
	tier     string
	log      *slog.Logger
	proxy    *httputil.ReverseProxy

	mu     sync.Mutex // serializes record
	record func(transcript.ModelCallInfo)

	inflight sync.WaitGroup // calls being served
}

var tierRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// CheckServiceTier checks a CHALK_INFERENCE_SERVICE_TIER value: a word
// such as "flex", "priority", "default" or "auto", which the model proxy
// interprets.
func CheckServiceTier(tier string) error {
	if tier == "" || tierRE.MatchString(tier) {
		return nil
	}
	return hint.Newf("set it to a tier the model proxy knows, such as flex, priority, default or auto, or unset it",
		"%s=%q is not a service tier name", ServiceTierEnv, tier)
}

// ParseUpstream checks a model proxy URL and returns it with /v1 added
// when it has no path.
func ParseUpstream(raw string) (*url.URL, error) {
	const fix = "pass the model proxy's base URL as an OpenAI client takes it, e.g. http://10.0.0.5:8787/v1"
	u, err := url.Parse(raw)
	if err != nil {
		return nil, hint.Wrap(fmt.Errorf("model proxy URL: %w", err), fix)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, hint.Newf(fix, "model proxy URL %q: the scheme must be http or https", u.Redacted())
	}
	if u.Host == "" {
		return nil, hint.Newf(fix, "model proxy URL %q has no host", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, hint.Newf(fix, "model proxy URL %q: a base URL has no query or fragment", u.Redacted())
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if u.Path == "" {
		u.Path = "/v1"
	}
	return u, nil
}

// NewForwarder returns a forwarder to c.Upstream.
func NewForwarder(c ForwarderConfig) (*Forwarder, error) {
	u, err := ParseUpstream(c.Upstream)
	if err != nil {
		return nil, err
	}
	if err := CheckServiceTier(c.ServiceTier); err != nil {
		return nil, err
	}
	f := &Forwarder{upstream: u, apiKey: c.APIKey, tier: c.ServiceTier, log: c.Log, record: c.Record}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	tr := c.Transport
	if tr == nil {
		tr = &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	f.proxy = &httputil.ReverseProxy{
		Rewrite:        f.rewrite,
		Transport:      tr,
		FlushInterval:  -1, // model answers stream: pass every byte on at once
		ModifyResponse: f.modifyResponse,
		ErrorHandler:   f.errorHandler,
		ErrorLog:       slog.NewLogLogger(f.log.Handler(), slog.LevelDebug),
	}
	return f, nil
}

// callKey carries a call's state from ServeHTTP to the proxy's hooks.
type callKey struct{}

// call is one request being forwarded.
type call struct {
	start  time.Time
	info   transcript.ModelCallInfo
	record bool
	once   sync.Once
}

func (f *Forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.inflight.Add(1)
	defer f.inflight.Done()
	if r.URL.Path == "/healthz" {
		io.WriteString(w, "ok\n")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		writeError(w, http.StatusNotFound, invalidRequest, "unknown_url", "",
			fmt.Sprintf("no such endpoint %s: the model is served under /v1/, e.g. POST /v1/chat/completions", r.URL.Path))
		return
	}
	c := &call{start: time.Now(), record: r.Method == http.MethodPost}
	if r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			msg := fmt.Sprintf("the request body is over %d bytes: not forwarded", int64(MaxRequestBytes))
			c.info.Error = msg
			f.finish(c, nil, "", nil)
			writeError(w, http.StatusRequestEntityTooLarge, invalidRequest, "request_too_large", "", msg)
			return
		}
		if err != nil {
			c.info.Error = "read the request body: " + err.Error()
			f.finish(c, nil, "", nil)
			writeError(w, http.StatusBadRequest, invalidRequest, "", "", c.info.Error)
			return
		}
		body = f.prepareBody(c, r.Header.Get("Content-Type"), body)
		c.info.Request = recordable(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Del("Content-Length")
	}
	r.URL.Path = "/" + rest
	r.URL.RawPath = ""
	f.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
}

// prepareBody reads what the transcript wants from a JSON body and sets
// the service tier in it.
func (f *Forwarder) prepareBody(c *call, contentType string, body []byte) []byte {
	if ct := strings.ToLower(contentType); ct != "" && !strings.Contains(ct, "json") {
		return body
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return body
	}
	_ = json.Unmarshal(fields["model"], &c.info.Model)
	_ = json.Unmarshal(fields["stream"], &c.info.Stream)
	if f.tier != "" {
		fields["service_tier"], _ = json.Marshal(f.tier)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // leave "<" in the student's text as it was
		if enc.Encode(fields) == nil {
			body = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		}
	}
	_ = json.Unmarshal(fields["service_tier"], &c.info.ServiceTier)
	return body
}

func (f *Forwarder) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(f.upstream)
	h := pr.Out.Header
	h.Del("Authorization")
	h.Del("Api-Key")
	h.Del("Cookie")
	// Asked for nothing, the transport asks for gzip and unpacks it, so
	// the answer is recorded as text; the student gets it unpacked.
	h.Del("Accept-Encoding")
	if f.apiKey != "" {
		h.Set("Authorization", "Bearer "+f.apiKey)
	}
}

func (f *Forwarder) modifyResponse(resp *http.Response) error {
	c, _ := resp.Request.Context().Value(callKey{}).(*call)
	if c == nil {
		return nil
	}
	c.info.Status = resp.StatusCode
	ct := resp.Header.Get("Content-Type")
	resp.Body = &captureBody{rc: resp.Body, done: func(body []byte, total int64, err error) {
		if body == nil && total > 0 {
			c.info.Response = truncatedBody(total)
			f.finish(c, nil, ct, err)
			return
		}
		f.finish(c, body, ct, err)
	}}
	return nil
}

func (f *Forwarder) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	c, _ := r.Context().Value(callKey{}).(*call)
	msg := fmt.Sprintf("the model proxy %s could not be reached: %v", f.upstream.Redacted(), err)
	if r.Context().Err() != nil {
		msg = "the student cancelled the request before the model proxy answered"
	}
	if c != nil {
		c.info.Status = 0
		c.info.Error = msg
		f.finish(c, nil, "", nil)
	}
	f.log.Warn("model call failed", "err", err)
	writeError(w, http.StatusBadGateway, serverError, "model_proxy_unreachable", "", msg)
}

// finish completes c's record with the response body and reports it,
// once.
func (f *Forwarder) finish(c *call, body []byte, contentType string, err error) {
	c.once.Do(func() {
		c.info.LatencyMS = time.Since(c.start).Milliseconds()
		// A stream is split into its events once, for both uses below.
		var events [][]byte
		var done bool
		stream := isEventStream(contentType)
		if stream {
			events, done = sseData(body)
		}
		if err != nil && stream && done {
			// The student read up to data: [DONE] and hung up without
			// waiting for the end of the HTTP body, as many clients do:
			// the answer is whole.
			err = nil
		}
		if err != nil && c.info.Error == "" {
			c.info.Error = err.Error()
		}
		if body != nil {
			f.describeResponse(c, body, stream, events, done)
		}
		if !c.record || f.record == nil {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.record(c.info)
	})
}

// describeResponse sets the response, its tokens and any error in c. A
// stream comes with its events (see sseData).
func (f *Forwarder) describeResponse(c *call, body []byte, stream bool, events [][]byte, done bool) {
	resp := body
	if stream {
		whole, err := reassemble(events, done)
		switch {
		case whole != nil:
			resp = whole
			if err != nil && c.info.Error == "" {
				c.info.Error = err.Error()
			}
		default:
			// Not chat chunks (another API's events): keep the stream.
			c.info.Response = recordable(body)
			return
		}
	}
	c.info.Response = recordable(resp)
	var parsed struct {
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			InputTokens      int `json:"input_tokens"`
			OutputTokens     int `json:"output_tokens"`
		} `json:"usage"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(resp, &parsed) != nil {
		if c.info.Error == "" {
			c.info.Error = fmt.Sprintf("the model proxy answered %d with a body that is not JSON", c.info.Status)
		}
		return
	}
	if u := parsed.Usage; u != nil {
		c.info.PromptTokens = u.PromptTokens + u.InputTokens
		c.info.CompletionTokens = u.CompletionTokens + u.OutputTokens
	}
	if c.info.Status >= 400 && c.info.Error == "" {
		c.info.Error = fmt.Sprintf("the model proxy answered %d", c.info.Status)
		if parsed.Error != nil && parsed.Error.Message != "" {
			c.info.Error += ": " + parsed.Error.Message
		}
	}
}

func isEventStream(contentType string) bool {
	return strings.HasPrefix(strings.ToLower(contentType), "text/event-stream")
}

// recordable returns body as JSON for the transcript: itself when it is
// JSON, else a JSON string of its text; a stand-in when it is too big.
func recordable(body []byte) json.RawMessage {
	if len(body) > MaxRecordBytes {
		return truncatedBody(int64(len(body)))
	}
	if json.Valid(body) {
		return json.RawMessage(bytes.TrimSpace(body))
	}
	// A string escapes each byte into at most six.
	if len(body) > MaxRecordBytes/6 {
		return truncatedBody(int64(len(body)))
	}
	b, _ := json.Marshal(string(body))
	return b
}

// truncatedBody stands in for a body too big to record.
func truncatedBody(n int64) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"chalk_not_recorded": fmt.Sprintf("%d bytes, over the %d-byte recording limit", n, MaxRecordBytes)})
	return b
}

// captureBody passes a response body through and keeps a copy of up to
// MaxRecordBytes of it. done is called once: at the end of the body, at a
// read error, or when the body is closed before its end. body is nil when
// the body was too big to keep.
type captureBody struct {
	rc    io.ReadCloser
	buf   bytes.Buffer
	over  bool
	total int64
	once  sync.Once
	done  func(body []byte, total int64, err error)
}

func (b *captureBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.total += int64(n)
	if !b.over {
		if b.buf.Len()+n > MaxRecordBytes {
			b.over = true
			b.buf = bytes.Buffer{}
		} else {
			b.buf.Write(p[:n])
		}
	}
	switch {
	case err == io.EOF:
		b.end(nil)
	case err != nil:
		b.end(fmt.Errorf("the model proxy's answer broke off: %w", err))
	}
	return n, err
}

func (b *captureBody) Close() error {
	err := b.rc.Close()
	b.end(errors.New("the answer was not read to its end: the student went away"))
	return err
}

func (b *captureBody) end(err error) {
	b.once.Do(func() {
		var body []byte
		if !b.over {
			body = b.buf.Bytes()
			if body == nil {
				body = []byte{}
			}
		}
		b.done(body, b.total, err)
	})
}
