package confine

import (
	"fmt"
	"strings"
)

// Network policies, chosen with CHALK_STUDENT_NETWORK. Every policy
// blocks link-local addresses (the cloud metadata service among them),
// the sandbox's gateways (the host) and the harness's own ports; they
// differ in what else the student may reach.
const (
	// NetworkProxy, the default: loopback inside the sandbox and the
	// model proxy's address and port, nothing else.
	NetworkProxy = "proxy"
	// NetworkNone: loopback only (the harness's model endpoint, which is
	// on loopback, stays reachable).
	NetworkNone = "none"
	// NetworkInternal: also the private ranges (other services on the
	// sandbox's own networks), but not the public internet.
	NetworkInternal = "internal"
	// NetworkPublic: also the public internet, but not the private
	// ranges.
	NetworkPublic = "public"
)

// NetworkPolicies lists the policies, default first.
var NetworkPolicies = []string{NetworkProxy, NetworkNone, NetworkInternal, NetworkPublic}

// CheckPolicy returns an error naming the policies when p is unknown.
func CheckPolicy(p string) error {
	for _, q := range NetworkPolicies {
		if p == q {
			return nil
		}
	}
	return fmt.Errorf("CHALK_STUDENT_NETWORK=%q is not a network policy; use one of %s", p, strings.Join(NetworkPolicies, ", "))
}
