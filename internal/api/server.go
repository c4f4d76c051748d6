// Package api is the Chalk API server: HTTPS with bearer tokens, state in
// internal/store, containers on the host compute class (internal/hostclass)
// with their lifetimes enforced, and sessions (exec and proxy) over one
// websocket each.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/session"
	"github.com/chalk-rl/chalk/internal/store"
)

// Server serves the API.
type Server struct {
	Store *store.Store
	Host  *hostclass.Host
	Log   *slog.Logger
	// Keepalive is how sessions detect a dead client.
	Keepalive session.Keepalive
	// MaxLifetime caps --lifetime; DefaultLifetime is used when none is
	// asked for.
	MaxLifetime, DefaultLifetime time.Duration
	// ReapInterval is how often lifetimes are checked.
	ReapInterval time.Duration
	// StopGrace is how long a stopping container's entrypoint has to exit
	// after SIGTERM.
	StopGrace time.Duration

	mu       sync.Mutex
	sessions map[*hostclass.Exec]struct{}
	// notes holds what sessions learned about each container.
	notes map[string]*connectorNote
}

// track records a session's process while it runs; the returned func
// forgets it.
func (s *Server) track(x *hostclass.Exec) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		s.sessions = map[*hostclass.Exec]struct{}{}
	}
	s.sessions[x] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.sessions, x)
	}
}

// EndSessions kills the process of every open session and drops its
// stream. Call it when the server stops: http.Server.Shutdown does not
// touch upgraded connections, and a docker exec would outlive them.
func (s *Server) EndSessions(ctx context.Context) {
	s.mu.Lock()
	xs := make([]*hostclass.Exec, 0, len(s.sessions))
	for x := range s.sessions {
		xs = append(xs, x)
	}
	s.mu.Unlock()
	for _, x := range xs {
		if err := x.Kill(ctx); err != nil {
			s.Log.Warn("end session", "err", err)
		}
		x.Close()
	}
	if len(xs) > 0 {
		s.Log.Info("ended open sessions", "count", len(xs))
	}
}

// Defaults.
const (
	DefaultMaxLifetime     = 7 * 24 * time.Hour
	DefaultDefaultLifetime = time.Hour
)

func (s *Server) fill() {
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	if s.MaxLifetime == 0 {
		s.MaxLifetime = DefaultMaxLifetime
	}
	if s.DefaultLifetime == 0 {
		s.DefaultLifetime = DefaultDefaultLifetime
	}
	if s.ReapInterval == 0 {
		s.ReapInterval = time.Second
	}
	if s.StopGrace == 0 {
		s.StopGrace = 10 * time.Second
	}
	if s.Keepalive == (session.Keepalive{}) {
		s.Keepalive = session.DefaultKeepalive
	}
}

// Prepare readies the host (its internal network) and enforces lifetimes
// that ended while the server was down. Call it before serving.
func (s *Server) Prepare(ctx context.Context) error {
	s.fill()
	id, err := s.Store.ServerID(ctx)
	if err != nil {
		return err
	}
	s.Host.Mark = id
	if err := s.Host.EnsureNetwork(ctx); err != nil {
		return err
	}
	s.reap(ctx)
	if cs, err := s.Store.Containers(ctx, ""); err == nil {
		ids := make([]string, len(cs))
		for i, c := range cs {
			ids[i] = c.ID
		}
		if err := s.Host.PruneSockets(ids); err != nil {
			s.Log.Warn("prune session socket directories", "err", err)
		}
		s.killLeftovers(ctx, cs)
	}
	return nil
}

// killLeftovers ends the session processes that a server killed before
// it could end them left running in its containers: a connection leaves
// no process behind, even then.
func (s *Server) killLeftovers(ctx context.Context, cs []store.Container) {
	for _, c := range cs {
		if c.State != store.StateRunning || c.EngineID == "" {
			continue
		}
		n, err := s.Host.KillLeftovers(ctx, c.EngineID)
		if err != nil {
			s.Log.Warn("end the session processes left in a container", "id", c.ID, "err", err)
		}
		if n > 0 {
			s.Log.Info("ended session processes a previous server left", "id", c.ID, "processes", n)
		}
	}
}

// Handler is the API's HTTP handler.
func (s *Server) Handler() http.Handler {
	s.fill()
	mux := http.NewServeMux()
	route := func(pattern string, h func(w http.ResponseWriter, r *http.Request, who store.Token)) {
		mux.Handle(pattern, s.authenticated(h))
	}
	route("GET /v1/whoami", s.whoami)
	route("POST /v1/containers", s.runContainer)
	route("GET /v1/containers", s.listContainers)
	route("GET /v1/containers/{ref}", s.inspectContainer)
	route("GET /v1/containers/{ref}/logs", s.containerLogs)
	route("POST /v1/containers/{ref}/stop", s.stopContainer)
	route("DELETE /v1/containers/{ref}", s.removeContainer)
	route("GET /v1/containers/{ref}/proxy", s.proxySession)
	route("GET /v1/containers/{ref}/exec", s.execSession)
	route("POST /v1/volumes", s.createVolume)
	route("GET /v1/volumes", s.listVolumes)
	route("DELETE /v1/volumes/{name}", s.removeVolume)
	route("POST /v1/images", s.buildImage)
	route("GET /v1/images", s.listImages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Code: wire.CodeNotFound,
			Msg: "no such API endpoint: " + r.Method + " " + r.URL.Path, Hint: "check that chalk and the server are the same version"})
	})
	return s.logged(mux)
}

// Run enforces lifetimes until ctx ends.
func (s *Server) Run(ctx context.Context) {
	s.fill()
	t := time.NewTicker(s.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.reap(ctx)
		}
	}
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request, who store.Token) {
	writeJSON(w, http.StatusOK, wire.Whoami{Owner: who.Owner, Token: who.ID})
}

// apiError is an error answer.
type apiError struct {
	Status int
	Code   string
	Msg    string
	Hint   string
}

func (e *apiError) Error() string { return e.Msg }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{Status: http.StatusInternalServerError, Code: wire.CodeInternal, Msg: err.Error(),
			Hint: "see the server's log"}
	}
	writeJSON(w, e.Status, wire.Error{Error: e.Msg, Hint: e.Hint, Code: e.Code})
}

func badRequest(hint, msg string) error {
	return &apiError{Status: http.StatusBadRequest, Code: wire.CodeBadRequest, Msg: msg, Hint: hint}
}
