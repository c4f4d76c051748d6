// Package client is how chalk talks to the Chalk API: HTTPS with the
// bearer token in a header (never in the URL), the server's certificate
// checked against the system's roots or against the fingerprint pinned at
// 'chalk login', and errors turned into ones a person can act on.
package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/config"
	"github.com/chalk-rl/chalk/internal/hint"
)

// Client calls one Chalk API server.
type Client struct {
	base        *url.URL
	token       string
	fingerprint string
	http        *http.Client
}

// New returns a client for the settings s.
func New(s config.Settings) (*Client, error) {
	if s.URL == "" {
		return nil, hint.New("no Chalk API server configured",
			"log in with 'chalk login https://HOST:PORT --token TOKEN', or set "+config.EnvURL+" and "+config.EnvToken)
	}
	u, err := url.Parse(s.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, hint.Newf("write it as https://HOST:PORT", "the API address %q (from %s) is not a URL", s.URL, s.Source["url"])
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, hint.Newf("use https://", "the API address %s is plain http to another machine: the token would cross the network in the clear", s.URL)
	}
	if u.Query().Encode() != "" || u.User != nil {
		return nil, hint.Newf("remove it from the URL; the token goes in "+config.EnvToken+" or 'chalk login --token'",
			"the API address %s carries credentials or a query; chalk never sends a token in a URL", redact(u))
	}
	if s.Token == "" {
		return nil, hint.New("no Chalk API token configured", "log in with 'chalk login "+s.URL+" --token TOKEN', or set "+config.EnvToken)
	}
	c := &Client{base: u, token: s.Token, fingerprint: s.Fingerprint}
	c.http = &http.Client{Transport: &http.Transport{
		TLSClientConfig:     c.TLSConfig(),
		DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: dialTimeout,
		ForceAttemptHTTP2:   false,
	}}
	return c, nil
}

// dialTimeout bounds connecting to the server, TLS handshake included.
const dialTimeout = 15 * time.Second

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func redact(u *url.URL) string {
	v := *u
	v.User, v.RawQuery = nil, ""
	return v.String()
}

// TLSConfig checks the server's certificate: against the pinned
// fingerprint when there is one, else against the system's roots.
func (c *Client) TLSConfig() *tls.Config {
	if c.fingerprint == "" {
		return &tls.Config{MinVersion: tls.VersionTLS12}
	}
	want := c.fingerprint
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is not checked against any CA; the pin is the check.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			if got := Fingerprint(cs.PeerCertificates[0].Raw); got != want {
				return &PinError{Want: want, Got: got}
			}
			return nil
		},
	}
}

// Fingerprint names a certificate by the SHA-256 of its DER bytes.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PinError is a server whose certificate is not the pinned one.
type PinError struct{ Want, Got string }

func (e *PinError) Error() string {
	return fmt.Sprintf("the server's certificate (%s) is not the one pinned at login (%s)", e.Got, e.Want)
}

// URL returns the API's URL for path, with the query q.
func (c *Client) URL(path string, q url.Values) *url.URL {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = q.Encode()
	return &u
}

// Header is what every request carries.
func (c *Client) Header() http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.token)
	h.Set("User-Agent", "chalk")
	return h
}

// do sends a request and decodes a JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	resp, err := c.send(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the API's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a successful response, whose body the
// caller closes; an error answer is returned as an error.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body any) (*http.Response, error) {
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd, ctype = b, "application/x-tar"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd, ctype = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL(path, q).String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header = c.Header()
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.TransportError(err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, ResponseError(resp)
	}
	return resp, nil
}

// APIError is an error answer from the server.
type APIError struct {
	Status int
	Body   wire.Error
}

func (e *APIError) Error() string { return e.Body.Error }

// ResponseError reads an error answer.
func ResponseError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e wire.Error
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		e.Error = fmt.Sprintf("the API answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
		e.Hint = "check that " + resp.Request.URL.Host + " is a Chalk API server and the same version as chalk"
	}
	return hint.Wrap(&APIError{Status: resp.StatusCode, Body: e}, e.Hint)
}

// TransportError explains a failure to reach the server.
func (c *Client) TransportError(err error) error {
	var pin *PinError
	var unknown x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &pin):
		return hint.Wrap(fmt.Errorf("connect to %s: %w", c.base.Host, pin),
			"if the server's certificate was replaced on purpose, log in again to pin the new one: chalk login "+c.base.String()+" --token TOKEN; otherwise something is impersonating the server")
	case errors.As(err, &unknown), errors.As(err, &hostErr):
		return hint.Wrap(fmt.Errorf("connect to %s: the server's certificate is not trusted: %w", c.base.Host, err),
			"log in to pin it: chalk login "+c.base.String()+" --token TOKEN (compare the fingerprint it shows with the one the server printed)")
	}
	return hint.Wrap(fmt.Errorf("connect to the Chalk API at %s: %w", c.base.Host, err),
		"check that 'chalk server' runs there and the address is right ("+config.EnvURL+" or 'chalk login')")
}
