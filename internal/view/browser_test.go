package view

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/testenv"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// TestBrowserRendersAndFollowsARun loads a running run's page in headless
// Chromium, which runs the page's script before it dumps the DOM. The
// first time the page asks for new events, the test appends the rest of
// the run, so the dumped DOM shows them only if the page followed the
// run. Hostile markup in the output, both in the first page and in what
// arrives later, must show as text and must not run.
func TestBrowserRendersAndFollowsARun(t *testing.T) {
	chromium := testenv.Chromium(t)
	runs := t.TempDir()
	model := transcript.Event{Type: transcript.ModelCall, Model: &transcript.ModelCallInfo{
		Model: "browser-test-model", Status: 200, LatencyMS: 987, PromptTokens: 11, CompletionTokens: 22,
		Request:  []byte(`{"messages":[{"role":"user","content":"LIST-THE-FILES"}]}`),
		Response: []byte(`{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]},"finish_reason":"tool_calls"}]}`),
	}}
	binary := transcript.Event{Type: transcript.Output, Process: "student", Stream: "stdout"}
	binary.SetData([]byte("\xffB64-DECODED\n"))
	dir := testRun(t, runs, "20300102T030405Z-b0b0b0b0", t0,
		started("b0b0b0b0", "browser-env", "docker"),
		transcript.Event{Type: transcript.ProcessStarted, Process: "student", Command: []string{"python3", "agent.py", "--task", "find files"}},
		output("student", "stdout", "HELLO-FROM-STUDENT\n"),
		output("student", "stderr", "WARN-ON-STDERR\n"),
		binary,
		output("student", "stdout", hostile+"\n"),
		model,
	)

	s, err := New(runs, Options{})
	require.NoError(t, err)
	defer s.Close()
	var once sync.Once
	var polled atomic.Bool
	h := s.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			once.Do(func() {
				polled.Store(true)
				appendEvents(t, dir, t0, 6,
					output("student", "stdout", "LIVE-EVENT-ARRIVED "+hostile+"\n"),
					transcript.Event{Type: transcript.ProcessExited, Process: "student", ExitCode: transcript.Int(0), DurationMS: 4000},
					transcript.Event{Type: transcript.Reward, Reward: transcript.Float(0.625)},
					finished(transcript.StatusOK, "the student and the grader exited 0"))
			})
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()

	dom := dumpDOM(t, chromium, ts.URL+"/run/20300102T030405Z-b0b0b0b0")

	assert.Contains(t, dom, `data-js="ready"`, "the page's own script ran")
	require.True(t, polled.Load(), "the page never asked for new events")
	for _, want := range []string{
		"$ python3 agent.py --task 'find files'",
		"HELLO-FROM-STUDENT", `<span class="stderr">WARN-ON-STDERR`, "B64-DECODED",
		"browser-test-model", "987 ms", "11 prompt + 22 completion tokens", "LIST-THE-FILES", "calls <b>shell</b>",
		"LIVE-EVENT-ARRIVED",
		"reward <b>0.625</b>", `<dd id="reward">0.625</dd>`,
		`class="status s-ok">ok</span>`, `data-done="true"`,
		// The hostile markup, as text.
		`&lt;script&gt;document.documentElement.setAttribute("data-pwned","1")&lt;/script&gt;`,
		`LIVE-EVENT-ARRIVED &lt;script&gt;`,
		`&lt;img src=x onerror=`,
	} {
		assert.True(t, strings.Contains(dom, want), "the rendered page lacks %q", want)
	}
	assert.False(t, strings.Contains(dom, "data-pwned="), "markup from the transcript ran in the page")
	assert.False(t, strings.Contains(dom, "<img"), "markup from the transcript became an element")
}

// dumpDOM loads url in headless Chromium and returns the DOM after the
// page's scripts ran. Chromium resolves no host name, so it can reach
// nothing but the loopback address in url.
func dumpDOM(t *testing.T, chromium, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(),
		"--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-domain-reliability", "--metrics-recording-only",
		"--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--virtual-time-budget=10000", "--dump-dom", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", tail(stderr.String(), 2000))
	require.NotEmpty(t, out, "chromium dumped nothing: %s", tail(stderr.String(), 2000))
	return string(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
