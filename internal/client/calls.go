package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/session"
)

// Whoami returns the owner the token belongs to.
func (c *Client) Whoami(ctx context.Context) (wire.Whoami, error) {
	var w wire.Whoami
	return w, c.do(ctx, "GET", "/v1/whoami", nil, nil, &w)
}

// Run starts a container.
func (c *Client) Run(ctx context.Context, req wire.RunRequest) (wire.Container, error) {
	var out wire.Container
	return out, c.do(ctx, "POST", "/v1/containers", nil, req, &out)
}

// Containers lists the owner's containers.
func (c *Client) Containers(ctx context.Context) ([]wire.Container, error) {
	var out []wire.Container
	return out, c.do(ctx, "GET", "/v1/containers", nil, nil, &out)
}

// Container describes one container, by name or ID.
func (c *Client) Container(ctx context.Context, ref string) (wire.Container, error) {
	var out wire.Container
	return out, c.do(ctx, "GET", "/v1/containers/"+url.PathEscape(ref), nil, nil, &out)
}

// Stop stops a container.
func (c *Client) Stop(ctx context.Context, ref string) (wire.Container, error) {
	var out wire.Container
	return out, c.do(ctx, "POST", "/v1/containers/"+url.PathEscape(ref)+"/stop", nil, nil, &out)
}

// Remove deletes a container.
func (c *Client) Remove(ctx context.Context, ref string) error {
	return c.do(ctx, "DELETE", "/v1/containers/"+url.PathEscape(ref), nil, nil, nil)
}

// Logs copies a container's output to w.
func (c *Client) Logs(ctx context.Context, ref string, follow bool, tail int, w io.Writer) error {
	q := url.Values{}
	if follow {
		q.Set("follow", "1")
	}
	if tail >= 0 {
		q.Set("tail", strconv.Itoa(tail))
	}
	resp, err := c.send(ctx, "GET", "/v1/containers/"+url.PathEscape(ref)+"/logs", q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// CreateVolume makes a volume.
func (c *Client) CreateVolume(ctx context.Context, name string) (wire.Volume, error) {
	var out wire.Volume
	return out, c.do(ctx, "POST", "/v1/volumes", nil, wire.VolumeRequest{Name: name}, &out)
}

// Volumes lists the owner's volumes.
func (c *Client) Volumes(ctx context.Context) ([]wire.Volume, error) {
	var out []wire.Volume
	return out, c.do(ctx, "GET", "/v1/volumes", nil, nil, &out)
}

// RemoveVolume deletes a volume.
func (c *Client) RemoveVolume(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/v1/volumes/"+url.PathEscape(name), nil, nil, nil)
}

// Images lists the owner's images.
func (c *Client) Images(ctx context.Context) ([]wire.Image, error) {
	var out []wire.Image
	return out, c.do(ctx, "GET", "/v1/images", nil, nil, &out)
}

// BuildImage uploads the tar build context and builds it as name,
// streaming the build log to log.
func (c *Client) BuildImage(ctx context.Context, name, dockerfile string, context io.Reader, log io.Writer) error {
	q := url.Values{"name": {name}}
	if dockerfile != "" {
		q.Set("dockerfile", dockerfile)
	}
	resp, err := c.send(ctx, "POST", "/v1/images", q, context)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if rest, ok := strings.CutPrefix(line, wire.BuildResultPrefix); ok {
			var res wire.BuildResult
			if jerr := json.Unmarshal([]byte(rest), &res); jerr != nil {
				return fmt.Errorf("read the build's result: %w", jerr)
			}
			if res.Error != "" {
				return errors.New("image build failed: " + res.Error)
			}
			return nil
		}
		io.WriteString(log, line)
		if err != nil {
			if err == io.EOF {
				return errors.New("the build's log ended without a result: the server may have stopped")
			}
			return err
		}
	}
}

// Session opens a session stream: path is "proxy" or "exec".
func (c *Client) Session(ctx context.Context, ref, kind string, q url.Values) (*websocket.Conn, error) {
	u := c.URL("/v1/containers/"+url.PathEscape(ref)+"/"+kind, q)
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	hc, batcher := c.sessionHTTP()
	// A refused session leaves its connection idle in a transport made
	// for it alone; an upgraded one is not idle, and stays.
	defer hc.CloseIdleConnections()
	ws, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{
		HTTPClient:      hc,
		HTTPHeader:      c.Header(),
		Subprotocols:    []string{session.Subprotocol},
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			if resp.Request == nil {
				resp.Request = &http.Request{URL: u}
			}
			return nil, ResponseError(resp)
		}
		return nil, c.TransportError(err)
	}
	if fb := batcher(); fb != nil {
		fb.Frames()
	}
	ws.SetReadLimit(session.MaxMessage)
	return ws, nil
}

// sessionHTTP is an HTTP client for one session's connection, which it
// makes a frameBatcher; the function returns that connection once made.
func (c *Client) sessionHTTP() (*http.Client, func() *frameBatcher) {
	var (
		mu sync.Mutex
		fb *frameBatcher
	)
	made := func(conn net.Conn, lower *session.BufConn) net.Conn {
		mu.Lock()
		defer mu.Unlock()
		fb = &frameBatcher{Conn: conn, lower: lower}
		return fb
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return made(conn, nil), nil
		},
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			cfg := c.TLSConfig()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
			cfg.NextProtos = []string{"http/1.1"}
			lower := session.NewBufConn(raw)
			lower.ReadLarge()
			tc := tls.Client(lower, cfg)
			hctx, cancel := context.WithTimeout(ctx, dialTimeout)
			defer cancel()
			if err := tc.HandshakeContext(hctx); err != nil {
				raw.Close()
				return nil, err
			}
			return made(tc, lower), nil
		},
	}
	return &http.Client{Transport: tr}, func() *frameBatcher {
		mu.Lock()
		defer mu.Unlock()
		return fb
	}
}
