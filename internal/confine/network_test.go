package confine

import (
	"strings"
	"testing"
)

func TestCheckPolicy(t *testing.T) {
	for _, p := range NetworkPolicies {
		if err := CheckPolicy(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	err := CheckPolicy("open")
	if err == nil || !strings.Contains(err.Error(), "proxy, none, internal, public") {
		t.Fatalf("an unknown policy: %v", err)
	}
}
