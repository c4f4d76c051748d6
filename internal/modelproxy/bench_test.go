package modelproxy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/testenv"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// BenchmarkForwardVsDirect measures, in one run, the median time of a
// streamed chat completion from the scripted model called directly and
// through the forwarder (which also reassembles and records it), and
// reports the ratio. Each iteration makes both calls, alternating.
//
//	go test -run '^$' -bench ForwardVsDirect -benchtime 500x ./internal/modelproxy/
func BenchmarkForwardVsDirect(b *testing.B) {
	s, err := LoadScript("testdata/two_turns.toml")
	if err != nil {
		b.Fatal(err)
	}
	up := startServer(b, NewServer(s, "", nil))
	f, err := NewForwarder(ForwarderConfig{Upstream: up + "/v1", Record: func(transcript.ModelCallInfo) {}})
	if err != nil {
		b.Fatal(err)
	}
	fw := startServer(b, f)
	body := strings.Replace(firstRequest, `{"model":"m1",`, `{"model":"m1","stream":true,"stream_options":{"include_usage":true},`, 1)
	client := &http.Client{}
	call := func(base string) time.Duration {
		start := time.Now()
		resp, err := client.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
		return time.Since(start)
	}
	call(up)
	call(fw)
	var direct, forwarded []time.Duration
	b.ResetTimer()
	for range b.N {
		direct = append(direct, call(up))
		forwarded = append(forwarded, call(fw))
	}
	b.StopTimer()
	d, fwd := testenv.Median(direct), testenv.Median(forwarded)
	ratio := float64(fwd) / float64(d)
	b.ReportMetric(ratio, "x-direct")
	b.ReportMetric(float64(fwd.Microseconds()), "us-forwarded-median")
	b.ReportMetric(float64(d.Microseconds()), "us-direct-median")
	fmt.Printf("streamed call: forwarded median %s, direct median %s over %d calls each: %.2fx\n", fwd, d, b.N, ratio)
}
