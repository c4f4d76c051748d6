package run

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/modelproxy"
)

// CheckModelProxy refuses, before any sandbox starts, a model proxy URL
// the sandbox could not reach: a loopback address (in a sandbox it is
// the sandbox's own), or an address where nothing answers.
func CheckModelProxy(ctx context.Context, raw string) error {
	u, err := modelproxy.ParseUpstream(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	fix := "serve the model proxy on an address the sandbox can reach, such as the docker bridge's gateway: chalk model-proxy --listen 172.17.0.1:8787"
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return hint.Newf(fix, "the model proxy %s is on localhost, which inside the sandbox is the sandbox itself", raw)
	}
	if a, err := netip.ParseAddr(host); err == nil && (a.IsLoopback() || a.IsUnspecified()) {
		return hint.Newf(fix, "the model proxy %s is on %s, which inside the sandbox is the sandbox itself", raw, a)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return hint.Newf("start the model proxy first (chalk model-proxy --script FILE serves a scripted one), or fix the URL",
			"nothing answers at the model proxy %s: %v", raw, err)
	}
	c.Close()
	return nil
}

// ModelKeyEnv is the host variable that holds the model proxy's API key.
const ModelKeyEnv = modelproxy.APIKeyEnv

// ModelProxyEnv is the host variable that names the model proxy when
// --model-proxy is not given.
const ModelProxyEnv = "CHALK_MODEL_PROXY"
