package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chalk-rl/chalk/internal/api/wire"
)

// endpoints is every route of the API, with a container, volume or image
// of alice's in it where the route takes one.
func endpoints(box, volume string) [][2]string {
	return [][2]string{
		{"GET", "/v1/whoami"},
		{"POST", "/v1/containers"},
		{"GET", "/v1/containers"},
		{"GET", "/v1/containers/" + box},
		{"GET", "/v1/containers/" + box + "/logs"},
		{"POST", "/v1/containers/" + box + "/stop"},
		{"DELETE", "/v1/containers/" + box},
		{"GET", "/v1/containers/" + box + "/proxy"},
		{"GET", "/v1/containers/" + box + "/exec"},
		{"POST", "/v1/volumes"},
		{"GET", "/v1/volumes"},
		{"DELETE", "/v1/volumes/" + volume},
		{"POST", "/v1/images?name=x"},
		{"GET", "/v1/images"},
	}
}

func (w *world) rawClient() *http.Client {
	// The test pins nothing: it attacks the API, not the TLS.
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

func (w *world) call(t *testing.T, method, path string, header http.Header, body string) (int, wire.Error) {
	t.Helper()
	req, err := http.NewRequest(method, w.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := w.rawClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e wire.Error
	_ = json.Unmarshal(data, &e)
	return resp.StatusCode, e
}

func bearer(tok string) http.Header {
	return http.Header{"Authorization": {"Bearer " + tok}}
}

// TestEveryEndpointRefusesBadTokens: no token, a wrong one, a revoked
// one, and a token passed in the URL are refused everywhere; another
// owner's token never reaches alice's things.
func TestEveryEndpointRefusesBadTokens(t *testing.T) {
	w := setup(t)
	name, id := w.box(t, "bash")
	w.mustChalk(t, w.alice, "volume", "create", "sec-vol")
	t.Cleanup(func() { w.chalk(t, w.alice, "", "volume", "rm", "sec-vol") })
	ctx := context.Background()
	rec, revoked, err := w.st.CreateToken(ctx, w.aliceOwner, "to revoke")
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := w.call(t, "GET", "/v1/whoami", bearer(revoked), ""); code != 200 {
		t.Fatalf("the token works before it is revoked: %d", code)
	}
	w.mustChalk(t, "", "token", "revoke", "--data", w.dataDir, rec.ID)
	// A wrong secret for a real token ID, and garbage.
	wrongSecret := w.alice[:len(w.alice)-4] + "0000"
	if wrongSecret == w.alice {
		wrongSecret = w.alice[:len(w.alice)-4] + "1111"
	}
	bad := map[string]http.Header{
		"no token":         {},
		"wrong token":      bearer("chalk_0000_1111"),
		"wrong secret":     bearer(wrongSecret),
		"revoked token":    bearer(revoked),
		"basic auth":       {"Authorization": {"Basic " + w.alice}},
		"token, no scheme": {"Authorization": {w.alice}},
	}
	for _, ref := range []string{name, id} {
		for _, ep := range endpoints(ref, "sec-vol") {
			for what, h := range bad {
				code, e := w.call(t, ep[0], ep[1], h, "{}")
				if code != http.StatusUnauthorized || e.Code != wire.CodeUnauthorized || e.Hint == "" {
					t.Errorf("%s %s with %s: %d %+v, want 401 with a hint", ep[0], ep[1], what, code, e)
				}
			}
			// A valid token in the URL is refused, not honoured.
			for _, p := range []string{"token", "access_token"} {
				sep := "?"
				if strings.Contains(ep[1], "?") {
					sep = "&"
				}
				code, e := w.call(t, ep[0], ep[1]+sep+p+"="+url.QueryEscape(w.alice), nil, "{}")
				if code != http.StatusBadRequest || !strings.Contains(e.Error, "never accepts one there") {
					t.Errorf("%s %s with ?%s=: %d %+v, want 400", ep[0], ep[1], p, code, e)
				}
			}
		}
	}
	// Bob sees none of alice's containers and reaches none of them.
	for _, ref := range []string{name, id} {
		for _, ep := range endpoints(ref, "sec-vol") {
			if !strings.Contains(ep[1], ref) && !strings.Contains(ep[1], "sec-vol") {
				continue
			}
			code, e := w.call(t, ep[0], ep[1], bearer(w.bob), "")
			if code != http.StatusNotFound {
				t.Errorf("bob: %s %s: %d %+v, want 404", ep[0], ep[1], code, e)
			}
		}
	}
	out := w.mustChalk(t, w.bob, "container", "ls")
	if strings.Contains(out, name) || strings.Contains(out, id) {
		t.Errorf("bob's container ls shows alice's box:\n%s", out)
	}
	if out := w.mustChalk(t, w.bob, "volume", "ls"); strings.Contains(out, "sec-vol") {
		t.Errorf("bob's volume ls shows alice's volume:\n%s", out)
	}
	// Through the CLI: bob's sessions to alice's box fail, and say why.
	for _, args := range [][]string{{"session", "exec", name, "true"}, {"session", "proxy", id}} {
		stdout, errOut, code := w.chalk(t, w.bob, "", args...)
		if code == 0 || stdout != "" || !strings.Contains(errOut, "no container") {
			t.Errorf("bob %v: exit %d stdout %q stderr %q", args, code, stdout, errOut)
		}
	}
	// Alice's box still runs: nothing bob did touched it.
	if got := w.mustChalk(t, w.alice, "session", "exec", name, "echo", "still here"); got != "still here\n" {
		t.Errorf("alice's box: %q", got)
	}
	// Names are per owner: bob may use the same name.
	bobID := strings.TrimSpace(w.mustChalk(t, w.bob, "container", "run", "--image", w.images["bash"], "--name", name, "--lifetime", "5m"))
	defer w.chalk(t, w.bob, "", "container", "rm", bobID)
	if bobID == id {
		t.Fatal("bob got alice's container")
	}
	// And alice cannot take it twice.
	_, errOut, code := w.chalk(t, w.alice, "", "container", "run", "--image", w.images["bash"], "--name", name)
	if code == 0 || !strings.Contains(errOut, "you already have a container named") {
		t.Errorf("second run with the same name: exit %d, %q", code, errOut)
	}
}

// TestCLIWrongToken: the person sees a clear error, with the fix.
func TestCLIWrongToken(t *testing.T) {
	w := setup(t)
	for _, args := range [][]string{{"container", "ls"}, {"session", "proxy", "x"}, {"session", "exec", "x", "true"}} {
		out, errOut, code := w.chalk(t, "chalk_0000_nope", "", args...)
		if code == 0 || out != "" || !strings.Contains(errOut, "the token is not valid") || !strings.Contains(errOut, "hint: ") {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out, errOut)
		}
	}
}

// TestPinnedFingerprint: a client whose pin does not match refuses the
// server, before sending the token.
func TestPinnedFingerprint(t *testing.T) {
	w := setup(t)
	env := append(w.env(w.alice), "CHALK_API_FINGERPRINT=sha256:"+strings.Repeat("ab", 32))
	cmd := w.command(env, "container", "ls")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is not the one pinned at login") {
		t.Fatalf("err %v, output %s", err, out)
	}
}
