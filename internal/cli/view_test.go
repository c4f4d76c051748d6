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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/cli"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// TestViewServesUntilInterrupted runs chalk view, reads the address it
// prints, fetches the page, and stops it as Ctrl-C would.
func TestViewServesUntilInterrupted(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "20300102T030405Z-abcd0001")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, "transcript.jsonl"))
	require.NoError(t, err)
	w := transcript.NewWriter(f)
	require.NoError(t, w.Emit(transcript.Event{Type: transcript.RunStarted, Run: &transcript.RunInfo{ID: "abcd0001", Environment: "viewed-env", Runtime: "docker"}}))
	require.NoError(t, w.Emit(transcript.Event{Type: transcript.RunFinished, Status: transcript.StatusOK}))
	require.NoError(t, f.Close())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	code := make(chan int, 1)
	go func() {
		code <- cli.Main(ctx, []string{"view", runs}, strings.NewReader(""), pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, stderr.String())
	go io.Copy(io.Discard, pr)
	url := strings.TrimSpace(line)
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), url)

	resp, err := http.Get(url)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "viewed-env")
	assert.Contains(t, string(body), "20300102T030405Z-abcd0001")

	cancel()
	select {
	case c := <-code:
		assert.Equal(t, 0, c, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("chalk view did not stop when its context ended")
	}
	assert.Contains(t, stderr.String(), "press Ctrl-C to stop")
}
