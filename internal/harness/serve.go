package harness

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/chalk-rl/chalk/internal/modelproxy"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// listenEvents opens the harness's own port, on which the host follows
// the run; it is closed to the student by the firewall.
func (h *Harness) listenEvents() (net.Listener, error) {
	addr := h.EventsAddr
	if addr == "" {
		addr = ":" + strconv.Itoa(EventsPort)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the run's events on %s: %w", addr, err)
	}
	h.Ports = append(h.Ports, uint16(ln.Addr().(*net.TCPAddr).Port))
	go h.serveEvents(ln)
	return ln, nil
}

func (h *Harness) serveEvents(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	if h.Stream != nil {
		mux.Handle("GET /events", h.Stream.Handler(h.Config.EventsToken))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	_ = srv.Serve(ln)
}

// studentModel is the model endpoint served to the student, if any.
type studentModel struct{ ep *modelproxy.Endpoint }

// startModel starts the forwarder to the run's model proxy on the
// sandbox's loopback, and adds its address to the student's environment.
func (h *Harness) startModel(ctx context.Context) (*studentModel, error) {
	m := h.Config.Model
	if m == nil {
		return &studentModel{}, nil
	}
	tier := m.ServiceTier
	if tier == "" {
		tier = h.Config.Env[modelproxy.ServiceTierEnv]
	}
	f, err := modelproxy.NewForwarder(modelproxy.ForwarderConfig{
		Upstream: m.URL, APIKey: m.APIKey, ServiceTier: tier, Log: h.Log,
		Record: func(c transcript.ModelCallInfo) {
			h.emit(transcript.Event{Type: transcript.ModelCall, Model: &c})
		},
	})
	if err != nil {
		return nil, fmt.Errorf("the model proxy: %w", err)
	}
	ep, err := f.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if h.Config.Student.Env == nil {
		h.Config.Student.Env = map[string]string{}
	}
	for k, v := range ep.StudentEnv() {
		if _, set := h.Config.Student.Env[k]; !set {
			h.Config.Student.Env[k] = v
		}
	}
	return &studentModel{ep: ep}, nil
}

// close stops the endpoint once every call is recorded.
func (m *studentModel) close() {
	if m.ep == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.ep.Close(ctx)
	m.ep = nil
}
