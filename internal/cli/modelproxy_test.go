package cli_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/cli"
)

// chalk model-proxy prints its URL on stdout, answers there with the
// token it was given, and exits 0 when stopped.
func TestModelProxyServes(t *testing.T) {
	script := filepath.Join(t.TempDir(), "model.toml")
	require.NoError(t, os.WriteFile(script, []byte("model = \"m\"\n[[turn]]\ncontent = \"hello there\"\n"), 0o644))
	t.Setenv("CHALK_MODEL_PROXY_API_KEY", "tok")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	code := make(chan int, 1)
	go func() {
		code <- cli.Main(ctx, []string{"model-proxy", "--script", script, "--listen", "127.0.0.1:0"}, strings.NewReader(""), outW, &stderr)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	require.NoError(t, err, stderr.String())
	base := strings.TrimSpace(line)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/v1$`, base)
	go io.Copy(io.Discard, outR)

	req, _ := http.NewRequest("POST", base+"/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"content":"hello there"`)

	resp, err = http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode, "the token is required")

	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("chalk model-proxy did not stop")
	}
	require.Contains(t, stderr.String(), "serving a scripted model")
}
