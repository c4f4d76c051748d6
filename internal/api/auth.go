package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/store"
)

// tokenParams are query parameters that would carry a token in a URL,
// where it ends up in logs and histories. They are refused outright.
var tokenParams = []string{"token", "access_token", "auth", "authorization", "api_key", "key"}

// authenticated runs h for requests with a live bearer token in the
// Authorization header.
func (s *Server) authenticated(h func(http.ResponseWriter, *http.Request, store.Token)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for _, p := range tokenParams {
			if q.Has(p) {
				writeError(w, &apiError{Status: http.StatusBadRequest, Code: wire.CodeBadRequest,
					Msg:  "a token was passed in the URL (" + p + "=); the API never accepts one there",
					Hint: "send it in the Authorization header: 'Authorization: Bearer TOKEN'; and revoke this token, since URLs are logged"})
				return
			}
		}
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || bearer == "" {
			writeError(w, &apiError{Status: http.StatusUnauthorized, Code: wire.CodeUnauthorized,
				Msg:  "no token: this API needs 'Authorization: Bearer TOKEN'",
				Hint: "log in with 'chalk login URL --token TOKEN', or set CHALK_API_TOKEN"})
			return
		}
		tok, err := s.Store.Authenticate(r.Context(), strings.TrimSpace(bearer))
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, &apiError{Status: http.StatusUnauthorized, Code: wire.CodeUnauthorized,
				Msg:  "the token is not valid: it is wrong or was revoked",
				Hint: "ask the server's administrator for a token ('chalk token create --owner NAME' on the server), then 'chalk login URL --token TOKEN'"})
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		if rec, ok := w.(*recorder); ok {
			rec.owner = tok.Owner
		}
		h(w, r, tok)
	})
}

// logged logs every request: never its query string or headers, where
// secrets could be.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.Log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"owner", rec.owner, "remote", r.RemoteAddr, "duration_ms", time.Since(start).Milliseconds())
	})
}

type recorder struct {
	http.ResponseWriter
	status int
	owner  string
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (and the websocket upgrade) reach
// the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
