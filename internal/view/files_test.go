package view

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/transcript"
)

func TestOutFilesAreListedAndServedSafely(t *testing.T) {
	runs := t.TempDir()
	dir := testRun(t, runs, "r1", t0, started("r1", "e", "docker"), finished(transcript.StatusOK, ""))
	out := filepath.Join(dir, "out")
	require.NoError(t, os.MkdirAll(filepath.Join(out, "sub dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "reward"), []byte("1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "page.html"), []byte(hostile), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "sub dir", "a#b.bin"), []byte{0, 1, 2, 0xff}, 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(out, "passwd")))
	require.NoError(t, os.WriteFile(filepath.Join(runs, "secret"), []byte("SECRET"), 0o644))
	require.NoError(t, os.Symlink("../../secret", filepath.Join(out, "up")))

	_, ts := newTestServer(t, runs)
	_, page := get(t, ts.URL+"/run/r1")
	assert.Contains(t, page, `href="/run/r1/out/reward" download>reward</a>`)
	assert.Contains(t, page, `href="/run/r1/out/sub%20dir/a%23b.bin" download>sub dir/a#b.bin</a>`)
	assert.NotContains(t, page, `out/sub%20dir/a%23b.bin?view`, "a binary file is not offered as text")
	assert.Contains(t, page, "<code>passwd</code> <span class=\"none\">(symbolic link, not served)</span>")

	// A download: never something the browser renders.
	resp, body := get(t, ts.URL+"/run/r1/out/page.html")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, `attachment; filename=page.html`, resp.Header.Get("Content-Disposition"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "sandbox")
	assert.Equal(t, hostile, body)
	// Viewed: plain text, even for HTML.
	resp, body = get(t, ts.URL+"/run/r1/out/page.html?view")
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Disposition"), "inline"))
	assert.Equal(t, hostile, body)
	// Binary is downloaded even when viewing is asked for.
	resp, _ = get(t, ts.URL+"/run/r1/out/sub%20dir/a%23b.bin?view")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))

	resp, body = get(t, ts.URL+"/run/r1/file/transcript.jsonl?view")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `"type":"run.started"`)
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
}

// TestPathsCannotLeaveTheRunsDirectory sends raw request lines, so that
// no client cleans the paths first.
func TestPathsCannotLeaveTheRunsDirectory(t *testing.T) {
	runs := t.TempDir()
	dir := testRun(t, runs, "r1", t0, started("r1", "e", "docker"))
	require.NoError(t, os.WriteFile(filepath.Join(runs, "secret"), []byte("SECRET-OUTSIDE-OUT"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "out", "passwd")))
	require.NoError(t, os.Symlink("../../secret", filepath.Join(dir, "out", "up")))
	require.NoError(t, os.Symlink("/", filepath.Join(dir, "out", "root")))
	require.NoError(t, os.Symlink(dir, filepath.Join(runs, "linked-run")))
	elsewhere := t.TempDir()
	testRun(t, elsewhere, "far", t0, started("far", "FAR-AWAY", "docker"))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "far"), filepath.Join(runs, "far")))

	_, ts := newTestServer(t, runs)
	addr := strings.TrimPrefix(ts.URL, "http://")
	for _, p := range []string{
		"/run/r1/out/../../secret",
		"/run/r1/out/..%2f..%2fsecret",
		"/run/r1/out/%2e%2e/%2e%2e/secret",
		"/run/r1/out/passwd",
		"/run/r1/out/up",
		"/run/r1/out/root/etc/passwd",
		"/run/r1/out//etc/passwd",
		"/run/r1/out/sub/../../../secret",
		"/run/..%2f..%2fetc/out/passwd",
		"/run/%2e%2e/file/transcript.jsonl",
		"/run/r1/file/..%2fsecret",
		"/run/r1/file/harness.log",
		"/run/linked-run",
		"/run/far",
		"/run/far/file/transcript.jsonl",
	} {
		status, body := rawGet(t, addr, p)
		assert.NotEqual(t, 200, status, "%s: %s", p, body)
		assert.NotContains(t, body, "SECRET-OUTSIDE-OUT", p)
		assert.NotContains(t, body, "root:x:0:0", p)
		assert.NotContains(t, body, "FAR-AWAY", p)
	}
	_, list := get(t, ts.URL+"/")
	assert.NotContains(t, list, "FAR-AWAY", "a symbolic link in the runs directory is not a run")
}

// rawGet sends path as it is and returns the status and body.
func rawGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b := new(strings.Builder)
	_, _ = io.Copy(b, resp.Body)
	return resp.StatusCode, b.String()
}
