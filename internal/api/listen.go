package api

import (
	"context"
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/chalk-rl/chalk/internal/session"
)

// Listen listens for the API on addr (TCP). Its connections are
// session.BufConns, which sessions use to send each message in one
// system call.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return session.BufListener{Listener: ln}, nil
}

// HTTPServer is the API's HTTPS server with certificate cert. Serve it,
// with ServeTLS, on a listener from Listen.
func (s *Server) HTTPServer(cert tls.Certificate, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          errorLog,
		ConnContext:       connContext,
	}
}

type connKey struct{}

// connContext keeps a request's connection in its context, for
// streamConn.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// streamConn is the BufConn under r's connection, set to read in large
// pieces for the session r opens, or nil when it has none (a server not
// made by HTTPServer on Listen).
func streamConn(r *http.Request) *session.BufConn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	b, _ := c.(*session.BufConn)
	if b != nil {
		b.ReadLarge()
	}
	return b
}
