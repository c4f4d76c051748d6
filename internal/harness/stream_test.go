package harness

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/transcript"
)

func TestStreamRefusesWithoutTheToken(t *testing.T) {
	s, err := NewStream(filepath.Join(t.TempDir(), "events.jsonl"))
	require.NoError(t, err)
	defer s.Close()
	srv := httptest.NewServer(s.Handler("s3cret"))
	defer srv.Close()
	for _, h := range []string{"", "Bearer wrong", "Bearer s3cret2", "s3cret", "Basic s3cret"} {
		req, _ := http.NewRequest("GET", srv.URL+"?after=0", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "Authorization %q", h)
	}
	// The token in the URL is not accepted either.
	resp, err := http.Get(srv.URL + "?after=0&token=s3cret")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestStreamResumesAfterTheLastSeen(t *testing.T) {
	s, err := NewStream(filepath.Join(t.TempDir(), "events.jsonl"))
	require.NoError(t, err)
	defer s.Close()
	w := transcript.NewWriter(s)
	for i := 1; i <= 5; i++ {
		require.NoError(t, w.Emit(transcript.Event{Type: transcript.Note, Message: fmt.Sprint("n", i)}))
	}
	srv := httptest.NewServer(s.Handler("tok"))
	defer srv.Close()
	dial := func(after int) *websocket.Conn {
		c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http")+fmt.Sprintf("?after=%d", after),
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer tok"}}})
		require.NoError(t, err)
		return c
	}
	read := func(c *websocket.Conn) int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, b, err := c.Read(ctx)
		require.NoError(t, err)
		h, ok := transcript.ReadHeader(b)
		require.True(t, ok, "%s", b)
		return h.Seq
	}
	c := dial(3)
	require.Equal(t, int64(4), read(c))
	require.Equal(t, int64(5), read(c))
	// New events reach a client that is waiting.
	require.NoError(t, w.Emit(transcript.Event{Type: transcript.Note, Message: "n6"}))
	require.Equal(t, int64(6), read(c))
	c.CloseNow()
	c = dial(6)
	require.NoError(t, w.Emit(transcript.Event{Type: transcript.RunFinished, Status: "ok"}))
	require.Equal(t, int64(7), read(c))
	// After run.finished and the client's ack, the stream closes, and
	// the harness knows it may go.
	require.NoError(t, c.Write(context.Background(), websocket.MessageText, []byte("ack 7")))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err = c.Read(ctx)
	require.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err))
	done := make(chan struct{})
	go func() { s.Drained(time.Minute); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream does not know its client has everything")
	}
}
