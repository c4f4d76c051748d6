package api

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestStreamConnUnderTLS: a request served over TLS on a listener from
// Listen finds the BufConn under its connection; one on a plain
// listener finds none, and sessions then write as usual.
func TestStreamConnUnderTLS(t *testing.T) {
	found := make(chan bool, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		found <- streamConn(r) != nil
	})
	for _, tc := range []struct {
		name   string
		listen bool
		want   bool
	}{{"Listen", true, true}, {"plain listener", false, false}} {
		srv := httptest.NewUnstartedServer(handler)
		if tc.listen {
			ln, err := Listen("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv.Listener.Close()
			srv.Listener = ln
		}
		srv.Config.ConnContext = connContext
		srv.StartTLS()
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := <-found; got != tc.want {
			t.Errorf("%s: found a BufConn: %v, want %v", tc.name, got, tc.want)
		}
		srv.Close()
	}
}
