package view

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/transcript"
)

func TestListShowsRunsNewestFirst(t *testing.T) {
	runs := t.TempDir()
	testRun(t, runs, "20300102T030405Z-aaaa0001", t0,
		started("aaaa0001", "older", "docker"),
		transcript.Event{Type: transcript.Reward, Reward: transcript.Float(0.25)},
		finished(transcript.StatusOK, "the student and the grader exited 0"))
	testRun(t, runs, "20300102T040405Z-bbbb0002", t0.Add(time.Hour),
		started("bbbb0002", "newer", "podman"),
		transcript.Event{Type: transcript.LimitHit, Limit: &transcript.LimitInfo{Name: "memory", Enforcement: "kernel", Action: "killed"}},
		finished(transcript.StatusFailed, "the student exited 1"))
	testRun(t, runs, "20300102T050405Z-cccc0003", t0.Add(2*time.Hour),
		started("cccc0003", "going", "docker"), output("student", "stdout", "hi\n"))
	require.NoError(t, os.Mkdir(filepath.Join(runs, "not-a-run"), 0o755))

	_, ts := newTestServer(t, runs)
	resp, body := get(t, ts.URL+"/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))

	going := strings.Index(body, "cccc0003")
	newer := strings.Index(body, "bbbb0002")
	older := strings.Index(body, "aaaa0001")
	require.True(t, going > 0 && newer > 0 && older > 0, body)
	assert.Less(t, going, newer, "newest first")
	assert.Less(t, newer, older, "newest first")
	assert.NotContains(t, body, "not-a-run")

	row := func(id string) string {
		i := strings.Index(body, `<tr class="run"`+"")
		for i >= 0 {
			end := strings.Index(body[i:], "</tr>") + i
			if strings.Contains(body[i:end], id) {
				return body[i:end]
			}
			next := strings.Index(body[end:], `<tr class="run"`)
			if next < 0 {
				break
			}
			i = end + next
		}
		t.Fatalf("no row for %s", id)
		return ""
	}
	r := row("aaaa0001")
	for _, want := range []string{"s-ok", ">0.25<", ">2s<", "older", "docker", "2030-01-02 03:04:05Z"} {
		assert.Contains(t, r, want)
	}
	r = row("bbbb0002")
	for _, want := range []string{"s-failed", "limit: memory", "newer", "podman"} {
		assert.Contains(t, r, want)
	}
	assert.Contains(t, row("cccc0003"), ">running<")
	assert.Contains(t, body, `data-running="true"`, "the list follows a run that is going")

	// The rows alone, for the page's refresh.
	resp, rows := get(t, ts.URL+"/rows")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, rows, "cccc0003")
	assert.NotContains(t, rows, "<html")
}

func TestListEmpty(t *testing.T) {
	_, ts := newTestServer(t, t.TempDir())
	_, body := get(t, ts.URL+"/")
	assert.Contains(t, body, "No runs yet")
}

// transcriptEvents is a run with one of each kind of event.
func transcriptEvents() []transcript.Event {
	binary := transcript.Event{Type: transcript.Output, Process: "student", Stream: "stdout"}
	binary.SetData([]byte("bytes \xff\xfe then DECODED-B64\n"))
	return []transcript.Event{
		started("dddd0004", "hello", "docker"),
		{Type: transcript.Note, Message: "harness started; the student runs as uid 61000"},
		{Type: transcript.ProcessStarted, Process: "student", Command: []string{"/bin/sh", "-c", "echo 'it''s' > /out/x"}, UID: transcript.Int(61000)},
		output("student", "stdout", "STDOUT-LINE-1\n"),
		output("student", "stderr", "STDERR-LINE-2\n"),
		binary,
		{Type: transcript.ModelCall, Model: &transcript.ModelCallInfo{
			Model: "test-model-7", Status: 200, LatencyMS: 1234, PromptTokens: 321, CompletionTokens: 45,
			Request:  json.RawMessage(`{"model":"test-model-7","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"USER-ASKS-LS"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`),
			Response: json.RawMessage(`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls -la\"}"}}]},"finish_reason":"tool_calls"}]}`),
		}},
		{Type: transcript.LimitHit, Limit: &transcript.LimitInfo{Name: "processes", Enforcement: "watchdog", Action: "killed"}},
		{Type: transcript.ProcessExited, Process: "student", ExitCode: transcript.Int(0), DurationMS: 1500},
		{Type: transcript.ProcessStarted, Process: "grader", Command: []string{"/grade"}},
		{Type: transcript.ProcessExited, Process: "grader", ExitCode: transcript.Int(0), DurationMS: 20},
		{Type: transcript.Reward, Reward: transcript.Float(0.75)},
		{Type: transcript.OutCopied, Files: 2, Bytes: 300, Skipped: []string{"link"}},
		finished(transcript.StatusOK, "the student and the grader exited 0"),
	}
}

func TestRunPageShowsTheTranscriptInOrder(t *testing.T) {
	runs := t.TempDir()
	dir := testRun(t, runs, "20300102T030405Z-dddd0004", t0, transcriptEvents()...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "harness.log"), []byte("log\n"), 0o644))

	_, ts := newTestServer(t, runs)
	resp, body := get(t, ts.URL+"/run/20300102T030405Z-dddd0004")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)

	// In the transcript's order.
	order := []string{
		"harness started",
		"$ /bin/sh -c &#39;echo &#39;\\&#39;&#39;it&#39;\\&#39;&#39;&#39;\\&#39;&#39;s&#39;\\&#39;&#39; &gt; /out/x&#39;",
		`<span class="stdout">STDOUT-LINE-1`,
		`<span class="stderr">STDERR-LINE-2`,
		"DECODED-B64",
		"test-model-7",
		"USER-ASKS-LS",
		"calls <b>bash</b>",
		"limit hit: <b>processes</b> (watchdog): killed",
		"exited with status 0 after 1.5s",
		"$ /grade",
		"reward <b>0.75</b>",
		"/out copied: 2 files, 300 B; left out: link",
		"run finished:",
	}
	last := 0
	for _, s := range order {
		i := strings.Index(body[last:], s)
		require.GreaterOrEqual(t, i, 0, "%q not found after byte %d of\n%s", s, last, body)
		last += i + len(s)
	}
	for _, want := range []string{
		"uid 61000",
		"321 prompt + 45 completion tokens", "1234 ms", "status 200", "finish: tool_calls",
		"tools offered: bash",
		`&#34;cmd&#34;: &#34;ls -la&#34;`, // the tool call's arguments, indented
		"bytes \uFFFD then",               // invalid UTF-8, shown with a replacement character
		`id="status" class="status s-ok">ok<`,
		`<dd id="reward">0.75</dd>`,
		"limits hit", "2 CPUs, 4GiB memory (3GiB for the student)",
		"/run/20300102T030405Z-dddd0004/file/harness.log?view",
		`data-done="true"`,
	} {
		assert.Contains(t, body, want)
	}
}

func TestRunPageShowsUnknownAndDamagedLines(t *testing.T) {
	runs := t.TempDir()
	dir := testRun(t, runs, "r1", t0, started("r1", "e", "docker"))
	f, err := os.OpenFile(filepath.Join(dir, TranscriptName), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"v":2,"seq":2,"time":"2030-01-02T03:04:06Z","type":"gpu.sample","utilization":0.93,"device":"GPU-FIELD-KEPT"}` + "\n" +
		"this is not json\n" +
		`{"v":1,"seq":4,"time":"2030-01-02T03:04:07Z","type":"note","message":"AFTER-THE-DAMAGE"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, ts := newTestServer(t, runs)
	_, body := get(t, ts.URL+"/run/r1")
	assert.Contains(t, body, "<b>gpu.sample</b>")
	assert.Contains(t, body, "GPU-FIELD-KEPT", "an unknown event shows all its fields")
	assert.Contains(t, body, "&#34;utilization&#34;: 0.93")
	assert.Contains(t, body, "unreadable transcript line")
	assert.Contains(t, body, "this is not json")
	assert.Contains(t, body, "AFTER-THE-DAMAGE", "lines after a damaged one are still shown")
	assert.Contains(t, body, ">running<", "no run.finished: the run is going")
}

const hostile = `<script>document.documentElement.setAttribute("data-pwned","1")</script><img src=x onerror="document.documentElement.setAttribute('data-pwned','2')">`

func TestHostileTranscriptIsEscaped(t *testing.T) {
	runs := t.TempDir()
	testRun(t, runs, "r1", t0,
		transcript.Event{Type: transcript.RunStarted, Run: &transcript.RunInfo{ID: "r1", Environment: hostile, Runtime: hostile, Image: hostile}},
		transcript.Event{Type: transcript.ProcessStarted, Process: "student", Command: []string{hostile}},
		output("student", "stdout", hostile),
		output("student", "stderr", hostile),
		transcript.Event{Type: transcript.ModelCall, Model: &transcript.ModelCallInfo{Model: hostile, Status: 200,
			Request:  json.RawMessage(`{"messages":[{"role":"user","content":` + jsonString(hostile) + `}]}`),
			Response: json.RawMessage(`{"choices":[{"message":{"role":"assistant","content":` + jsonString(hostile) + `}}]}`)}},
		transcript.Event{Type: transcript.Note, Message: hostile},
		finished(hostile, hostile),
	)
	_, ts := newTestServer(t, runs)
	for _, u := range []string{"/", "/rows", "/run/r1"} {
		_, body := get(t, ts.URL+u)
		assert.NotContains(t, body, "<script>document", u)
		assert.NotContains(t, body, "<img src=x", u)
		assert.Equal(t, strings.Count(body, "<script"), strings.Count(body, `<script src="/static/view.js" defer></script>`), "%s: only the page's own script", u)
		if u != "/rows" {
			assert.Contains(t, body, "&lt;script&gt;document", u)
		}
	}
	// The fragments a page adds while following a run are escaped too.
	_, body := get(t, ts.URL+"/run/r1/events?c="+encodeCursor(cursor{}))
	reply := decodeReply(t, body)
	assert.NotContains(t, reply.HTML, "<script>document")
	assert.NotContains(t, reply.HTML, "<img src=x")
	assert.Contains(t, reply.HTML, "&lt;img src=x onerror=")
	assert.NotContains(t, reply.Header, "<script>")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestHeadersConfineThePage(t *testing.T) {
	runs := t.TempDir()
	testRun(t, runs, "r1", t0, started("r1", "e", "docker"))
	_, ts := newTestServer(t, runs)
	resp, _ := get(t, ts.URL+"/run/r1")
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self'")
	assert.Contains(t, csp, "default-src 'none'")
	assert.NotContains(t, csp, "unsafe-inline")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	resp, js := get(t, ts.URL+"/static/view.js")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "javascript")
	assert.Contains(t, js, "insertAdjacentHTML")
}

func TestOtherHostNamesAreRefused(t *testing.T) {
	runs := t.TempDir()
	testRun(t, runs, "r1", t0, started("r1", "e", "docker"))
	s, err := New(runs, Options{Host: "my-box.lan"})
	require.NoError(t, err)
	defer s.Close()
	ts := newHTTPServer(t, s)
	for host, want := range map[string]int{
		"127.0.0.1:8080":      http.StatusOK,
		"[::1]:8080":          http.StatusOK,
		"localhost:8080":      http.StatusOK,
		"my-box.lan:8080":     http.StatusOK,
		"attacker.example":    http.StatusMisdirectedRequest,
		"rebind.attacker.com": http.StatusMisdirectedRequest,
	} {
		req, err := http.NewRequest("GET", ts+"/run/r1", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, host)
	}
}

// A run without run.finished whose chalk is gone is abandoned, not
// running; one whose chalk lives is still running.
func TestListTellsAbandonedRunsFromRunningOnes(t *testing.T) {
	runs := t.TempDir()
	gone := started("dddd0004", "killed", "docker")
	gone.Run.Owner = "host/100/1"
	live := started("eeee0005", "alive", "docker")
	live.Run.Owner = "host/200/1"
	testRun(t, runs, "20300102T030405Z-dddd0004", t0, gone, output("student", "stdout", "hi\n"))
	testRun(t, runs, "20300102T040405Z-eeee0005", t0.Add(time.Hour), live, output("student", "stdout", "hi\n"))
	s, err := New(runs, Options{OwnerGone: func(owner string) (bool, string) {
		return owner == "host/100/1", "its chalk (pid 100) is no longer running"
	}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	_, body := get(t, ts.URL+"/")
	i, j := strings.Index(body, "dddd0004"), strings.Index(body, "eeee0005")
	require.True(t, i > 0 && j > 0, body)
	rowOf := func(at int) string {
		start := strings.LastIndex(body[:at], "<tr")
		end := strings.Index(body[at:], "</tr>") + at
		return body[start:end]
	}
	assert.Contains(t, rowOf(i), StatusAbandoned)
	assert.Contains(t, rowOf(j), ">running<")
}
