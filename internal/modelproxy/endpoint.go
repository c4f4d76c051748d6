package modelproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// APIKeyEnv holds the model proxy's API key: the key the scripted model
// requires, and the key the forwarder is given to send. It is read from
// the environment so that it is on no command line.
const APIKeyEnv = "CHALK_MODEL_PROXY_API_KEY"

// Variables the student gets, naming its model endpoint.
const (
	// ModelURLEnv is Chalk's own name for the endpoint's base URL.
	ModelURLEnv = "CHALK_MODEL_URL"
	// OpenAIBaseURLEnv is the name OpenAI's SDKs read.
	OpenAIBaseURLEnv = "OPENAI_BASE_URL"
	// OpenAIAPIKeyEnv is set to a placeholder: SDKs refuse to start
	// without a key, and the forwarder replaces it with the real one.
	OpenAIAPIKeyEnv = "OPENAI_API_KEY"
	// PlaceholderAPIKey is what the student sees in OPENAI_API_KEY.
	PlaceholderAPIKey = "chalk-forwarded"
)

// Endpoint is a Forwarder served on a local address.
type Endpoint struct {
	// URL is the base URL the student uses: http://ADDR/v1.
	URL string
	f   *Forwarder
	srv *http.Server
	ln  net.Listener
	err chan error
}

// Listen serves f on addr ("127.0.0.1:0" picks a free port) until Close.
func (f *Forwarder) Listen(addr string) (*Endpoint, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("model endpoint: listen on %s: %w", addr, err)
	}
	e := &Endpoint{
		URL: "http://" + ln.Addr().String() + "/v1",
		f:   f,
		srv: &http.Server{Handler: f, ReadHeaderTimeout: 30 * time.Second},
		ln:  ln,
		err: make(chan error, 1),
	}
	go func() { e.err <- e.srv.Serve(ln) }()
	return e, nil
}

// StudentEnv is what the student's environment gets so that it, and any
// OpenAI SDK it uses, calls the endpoint.
func (e *Endpoint) StudentEnv() map[string]string {
	return map[string]string{
		ModelURLEnv:      e.URL,
		OpenAIBaseURLEnv: e.URL,
		OpenAIAPIKeyEnv:  PlaceholderAPIKey,
	}
}

// Close stops the endpoint. Calls still running get until ctx ends to
// finish; then they are cut. Every call has been recorded when Close
// returns.
func (e *Endpoint) Close(ctx context.Context) error {
	err := e.srv.Shutdown(ctx)
	if err != nil {
		e.srv.Close()
	}
	e.f.inflight.Wait()
	if serr := <-e.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
