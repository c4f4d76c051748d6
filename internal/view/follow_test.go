package view

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/transcript"
)

func TestFollowingARunPicksUpNewEvents(t *testing.T) {
	runs := t.TempDir()
	dir := testRun(t, runs, "r1", t0,
		started("r1", "e", "docker"),
		transcript.Event{Type: transcript.ProcessStarted, Process: "student", Command: []string{"agent"}},
		output("student", "stdout", "FIRST\n"))
	_, ts := newTestServer(t, runs)
	_, page := get(t, ts.URL+"/run/r1")
	require.NotContains(t, page, `data-done="true"`)
	c := pageCursor(t, page)

	// Nothing new yet.
	resp, body := get(t, ts.URL+"/run/r1/events?c="+c)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	r := decodeReply(t, body)
	assert.Empty(t, r.HTML)
	assert.False(t, r.Done)
	assert.Nil(t, r.Files)
	assert.Equal(t, c, r.Cursor)

	// A line being written is not read before its end.
	f, err := os.OpenFile(filepath.Join(dir, TranscriptName), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	half := `{"v":1,"seq":4,"time":"2030-01-02T03:04:09Z","type":"output","process":"student","stream":"stdout","text":"SECOND\n"}`
	_, err = f.WriteString(half[:40])
	require.NoError(t, err)
	_, body = get(t, ts.URL+"/run/r1/events?c="+c)
	r = decodeReply(t, body)
	assert.Empty(t, r.HTML)
	_, err = f.WriteString(half[40:] + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, body = get(t, ts.URL+"/run/r1/events?c="+c)
	r = decodeReply(t, body)
	assert.Contains(t, r.HTML, "SECOND")
	assert.NotContains(t, r.HTML, "FIRST", "only what is new")
	assert.Contains(t, r.HTML, `title="2030-01-02T03:04:09Z">&#43;4s<`, "times stay relative to the run's start")
	assert.Contains(t, r.Header, ">running<")
	c = r.Cursor

	require.NoError(t, os.WriteFile(filepath.Join(dir, "out", "result.txt"), []byte("done\n"), 0o644))
	appendEvents(t, dir, t0, 4,
		transcript.Event{Type: transcript.Reward, Reward: transcript.Float(1)},
		finished(transcript.StatusOK, "all good"))
	_, body = get(t, ts.URL+"/run/r1/events?c="+c)
	r = decodeReply(t, body)
	assert.True(t, r.Done)
	assert.Contains(t, r.HTML, "reward <b>1</b>")
	assert.Contains(t, r.Header, `class="status s-ok">ok<`)
	assert.Contains(t, r.Header, `<dd id="reward">1</dd>`)
	require.NotNil(t, r.Files)
	assert.Contains(t, *r.Files, "result.txt")

	// A cursor that is not one.
	resp, _ = get(t, ts.URL+"/run/r1/events?c=%21%21")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	// A transcript shorter than the cursor says: it was replaced.
	resp, _ = get(t, ts.URL+"/run/r1/events?c="+encodeCursor(cursor{Offset: 1 << 40}))
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
}

// A page and each of its polls read the transcript once: the events they
// show and the summary in their header come from the same read.
func TestARequestReadsTheTranscriptOnce(t *testing.T) {
	runs := t.TempDir()
	dir := testRun(t, runs, "r1", t0,
		started("r1", "e", "docker"),
		transcript.Event{Type: transcript.LimitHit, Limit: &transcript.LimitInfo{Name: "memory", Enforcement: "kernel", Action: "killed"}},
		output("student", "stdout", "FIRST\n"))
	s, ts := newTestServer(t, runs)
	type span struct{ from, to int64 }
	var mu sync.Mutex
	var reads []span
	s.sums.onRead = func(_ string, from, to int64) {
		mu.Lock()
		defer mu.Unlock()
		reads = append(reads, span{from, to})
	}
	took := func() []span {
		mu.Lock()
		defer mu.Unlock()
		r := reads
		reads = nil
		return r
	}
	size := func() int64 {
		st, err := os.Stat(filepath.Join(dir, TranscriptName))
		require.NoError(t, err)
		return st.Size()
	}

	_, page := get(t, ts.URL+"/run/r1")
	require.Contains(t, page, "FIRST")
	assert.Equal(t, []span{{0, size()}}, took(), "the page reads the transcript once")

	before := size()
	appendEvents(t, dir, t0, 3, output("student", "stdout", "SECOND\n"), finished(transcript.StatusOK, ""))
	_, body := get(t, ts.URL+"/run/r1/events?c="+pageCursor(t, page))
	r := decodeReply(t, body)
	assert.Contains(t, r.HTML, "SECOND")
	assert.NotContains(t, r.HTML, "FIRST")
	assert.Contains(t, r.Header, `class="status s-ok">ok<`, "the header has what the poll read")
	assert.Equal(t, []span{{before, size()}}, took(), "a poll reads what was added, once")

	_, body = get(t, ts.URL+"/")
	assert.Contains(t, body, "r1")
	assert.Empty(t, took(), "the list has nothing new to read")

	// A second page on the run reads it whole, once; its summary is not
	// folded in twice.
	_, page = get(t, ts.URL+"/run/r1")
	assert.Equal(t, []span{{0, size()}}, took())
	assert.Equal(t, 1, strings.Count(page, "SECOND"))
	assert.Equal(t, []string{"memory"}, s.sums.get(s.root, "r1").Limits)
}

func TestLongOutputIsFolded(t *testing.T) {
	runs := t.TempDir()
	var lines strings.Builder
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	huge := strings.Repeat("x", 600<<10) + "\n"
	testRun(t, runs, "r1", t0,
		started("r1", "e", "docker"),
		output("student", "stdout", lines.String()),
		transcript.Event{Type: transcript.Note, Message: "between"},
		output("grader", "stdout", huge), output("grader", "stdout", huge), output("grader", "stderr", "TAIL-END\n"),
		finished(transcript.StatusOK, ""))
	_, ts := newTestServer(t, runs)
	_, body := get(t, ts.URL+"/run/r1")

	details := strings.Index(body, `<details class="more">`)
	require.Greater(t, details, 0)
	has := func(s, sub, why string) {
		t.Helper()
		assert.True(t, strings.Contains(s, sub), "want %q: %s", sub, why)
	}
	has(body[:details], "line 20\n", "the first 20 lines are shown")
	assert.False(t, strings.Contains(body[:details], "line 21\n"), "line 21 is folded")
	has(body, "show 480 more lines (500 lines, 4.3 KiB in all)", "the fold says what it hides")
	has(body[details:], "line 500\n", "the rest is in the page, folded")

	// The grader's 1.2 MiB: cut at 1 MiB, the rest left to the transcript.
	has(body, "more not shown here; the transcript has all of it", "a cut block says so")
	assert.False(t, strings.Contains(body, "TAIL-END"), "past 1 MiB nothing is shown")
	assert.Less(t, len(body), 2<<20)
}

func TestModelCallsShowOnlyNewMessages(t *testing.T) {
	call := func(msgs string) transcript.Event {
		return transcript.Event{Type: transcript.ModelCall, Model: &transcript.ModelCallInfo{Model: "m", Status: 200,
			Request: json.RawMessage(`{"messages":[` + msgs + `]}`)}}
	}
	m1 := `{"role":"user","content":"ONE"}`
	m2 := `{"role":"assistant","content":"TWO"}`
	m3 := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"THREE"}]}`
	runs := t.TempDir()
	testRun(t, runs, "r1", t0,
		started("r1", "e", "docker"),
		call(m1),
		call(m1+","+m2+","+m3),
		call(`{"role":"user","content":"FRESH"}`), // a new conversation
		transcript.Event{Type: transcript.ModelCall, Model: &transcript.ModelCallInfo{Model: "m", Status: 502, Error: "PROXY-DOWN"}},
	)
	_, ts := newTestServer(t, runs)
	_, body := get(t, ts.URL+"/run/r1")
	calls := strings.Split(body, `<div class="body model`)[1:]
	require.Len(t, calls, 4)
	assert.Contains(t, calls[0], "ONE")
	assert.NotContains(t, calls[1], `<pre class="text">ONE`)
	assert.Contains(t, calls[1], "1 earlier messages")
	assert.Contains(t, calls[1], "TWO")
	assert.Contains(t, calls[1], "result of <code>tu1</code><pre>THREE</pre>")
	assert.Contains(t, calls[2], "FRESH")
	assert.NotContains(t, calls[2], "earlier messages")
	assert.Contains(t, calls[3], " model-failed")
	assert.Contains(t, calls[3], "PROXY-DOWN")

	// Anthropic's shape: system, content blocks, tool_use.
	runs = t.TempDir()
	testRun(t, runs, "r2", t0, started("r2", "e", "docker"),
		transcript.Event{Type: transcript.ModelCall, Model: &transcript.ModelCallInfo{Model: "m", Status: 200,
			Request:  json.RawMessage(`{"system":"SYS-PROMPT","messages":[{"role":"user","content":[{"type":"text","text":"HELLO"}]}],"tools":[{"name":"edit"}]}`),
			Response: json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"SURE"},{"type":"tool_use","id":"x","name":"edit","input":{"path":"/a"}}],"stop_reason":"tool_use"}`)}})
	_, ts = newTestServer(t, runs)
	_, body = get(t, ts.URL+"/run/r2")
	for _, want := range []string{"SYS-PROMPT", "HELLO", "SURE", "calls <b>edit</b>", "&#34;path&#34;: &#34;/a&#34;", "finish: tool_use", "tools offered: edit"} {
		assert.Contains(t, body, want)
	}
}
