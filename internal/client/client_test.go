package client

import (
	"strings"
	"testing"

	"github.com/chalk-rl/chalk/internal/config"
)

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		api  config.API
		want string
	}{
		{config.API{}, "no Chalk API server configured"},
		{config.API{URL: "ftp://x", Token: "t"}, "is not a URL"},
		{config.API{URL: "http://example.com:80", Token: "t"}, "in the clear"},
		{config.API{URL: "https://x/?token=abc", Token: "t"}, "never sends a token in a URL"},
		{config.API{URL: "https://user:pw@x/", Token: "t"}, "never sends a token in a URL"},
		{config.API{URL: "https://x:1"}, "no Chalk API token configured"},
	} {
		_, err := New(config.Settings{API: tc.api, Source: map[string]string{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.api, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "abc") {
			t.Errorf("the error repeats the token: %v", err)
		}
	}
	if _, err := New(config.Settings{API: config.API{URL: "http://127.0.0.1:8080", Token: "t"}}); err != nil {
		t.Errorf("plain http to loopback: %v", err)
	}
}
