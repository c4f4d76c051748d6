package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/store"
)

// These routes touch only the database, so the server needs no docker.
func TestAuth(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := &Server{Store: st}
	h := srv.Handler()
	_, good, _ := st.CreateToken(ctx, "alice", "")
	rec, revoked, _ := st.CreateToken(ctx, "alice", "")
	if err := st.RevokeToken(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	call := func(path, auth string) (int, wire.Error, string) {
		req := httptest.NewRequest("GET", path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var e wire.Error
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		return w.Code, e, w.Body.String()
	}
	for _, path := range []string{"/v1/whoami", "/v1/containers", "/v1/volumes", "/v1/images"} {
		if code, _, body := call(path, "Bearer "+good); code != 200 {
			t.Errorf("%s with a good token: %d %s", path, code, body)
		}
		for what, auth := range map[string]string{"none": "", "wrong": "Bearer chalk_00_11", "revoked": "Bearer " + revoked, "not bearer": "Token " + good} {
			if code, e, _ := call(path, auth); code != 401 || e.Code != wire.CodeUnauthorized || e.Hint == "" {
				t.Errorf("%s with %s: %d %+v", path, what, code, e)
			}
		}
		code, e, _ := call(path+"?token="+good, "")
		if code != 400 || !strings.Contains(e.Error, "never accepts one there") {
			t.Errorf("%s with the token in the URL: %d %+v", path, code, e)
		}
	}
	code, _, body := call("/v1/whoami", "Bearer "+good)
	if code != 200 || !strings.Contains(body, `"owner":"alice"`) {
		t.Errorf("whoami: %d %s", code, body)
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"my-box", "a", "box_1.2", strings.Repeat("x", 63)} {
		if err := checkName("container", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", ".x", "a b", "a/b", "x\nHost *", strings.Repeat("x", 64), "54b4aa4c-6adf-46d0-a3ed-a92a24f19052", "a%2fb"} {
		if err := checkName("container", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, ok := range []string{"dev-box", "dev-box:latest", "team/dev-box:v2"} {
		if err := checkImageName(ok); err != nil {
			t.Errorf("image %q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ":x", "a::b", "chalk-api/bob/x", "A B", "../x"} {
		if err := checkImageName(bad); err == nil {
			t.Errorf("image %q accepted", bad)
		}
	}
}
