package view

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// t0 is when the test runs start.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// testRun writes a run directory with events, numbered and timed one
// second apart from start, and returns its path.
func testRun(t *testing.T, runs, name string, start time.Time, events ...transcript.Event) string {
	t.Helper()
	dir := filepath.Join(runs, name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
	f, err := os.Create(filepath.Join(dir, TranscriptName))
	require.NoError(t, err)
	defer f.Close()
	appendEvents(t, dir, start, 0, events...)
	return dir
}

// appendEvents adds events to the run's transcript, numbered from seq+1.
func appendEvents(t *testing.T, dir string, start time.Time, seq int64, events ...transcript.Event) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, TranscriptName), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	defer f.Close()
	for i, e := range events {
		e.V, e.Seq = transcript.Version, seq+int64(i)+1
		if e.Time.IsZero() {
			e.Time = start.Add(time.Duration(seq+int64(i)) * time.Second)
		}
		b, err := transcript.Marshal(e)
		require.NoError(t, err)
		_, err = f.Write(b)
		require.NoError(t, err)
	}
}

func started(id, env, rt string) transcript.Event {
	return transcript.Event{Type: transcript.RunStarted, Run: &transcript.RunInfo{
		ID: id, Environment: env, Runtime: rt, Hardware: "default", Image: "chalk-" + env + ":abc",
		CPUs: 2, MemoryBytes: 4 << 30, StudentMemoryBytes: 3 << 30}}
}

func output(proc, stream, text string) transcript.Event {
	e := transcript.Event{Type: transcript.Output, Process: proc, Stream: stream}
	e.SetData([]byte(text))
	return e
}

func finished(status, msg string) transcript.Event {
	return transcript.Event{Type: transcript.RunFinished, Status: status, Message: msg}
}

func newTestServer(t *testing.T, runs string) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(runs, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// newHTTPServer serves s on loopback and returns its URL.
func newHTTPServer(t *testing.T, s *Server) string {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

var cursorRE = regexp.MustCompile(`data-cursor="([^"]*)"`)

// pageCursor returns the cursor a run page hands its script.
func pageCursor(t *testing.T, page string) string {
	t.Helper()
	m := cursorRE.FindStringSubmatch(page)
	require.NotNil(t, m, "no data-cursor in the page")
	return m[1]
}

func decodeReply(t *testing.T, body string) eventsReply {
	t.Helper()
	var r eventsReply
	require.NoError(t, json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&r), body)
	return r
}
