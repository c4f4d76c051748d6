package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/hostclass"
)

// BenchmarkSessionProxy measures, in one run, the tunnel against the
// bare path to the same server in the same container (a direct TCP
// connection from the host to the container's address):
//
//   - the median round trip of a 64-byte message, and what the tunnel adds;
//   - bulk throughput up (to the container) and down, as ratios;
//   - 50 sessions at once, which must all succeed.
//
// Targets: at most 1 ms added at the median; throughput at least half of
// direct. Run it with: go test -run '^$' -bench SessionProxy -benchtime 1x ./internal/e2e/
func BenchmarkSessionProxy(b *testing.B) {
	w := setup(b)
	_, id := w.box(b, "sshd")
	ipOut, err := exec.Command("docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", w.engineID(b, id)).Output()
	if err != nil {
		b.Fatal(err)
	}
	ip := strings.TrimSpace(string(ipOut))
	const (
		samples = 2000
		bulk    = 64 << 20
	)
	for i := 0; i < b.N; i++ {
		direct := directRTT(b, ip, samples)
		tunnel := w.proxyRTT(b, id, samples)
		dm, tm := median(direct), median(tunnel)
		added := tm - dm

		upDirect := rate(bulk, timeDirect(b, ip+":7001", bulk, true))
		upTunnel := rate(bulk, w.timeProxy(b, id, "7001", bulk, true))
		downDirect := rate(bulk, timeDirect(b, ip+":7002", bulk, false))
		downTunnel := rate(bulk, w.timeProxy(b, id, "7002", bulk, false))

		// The ceiling any connector attached through docker exec has:
		// the daemon's exec stream alone, to a program that only reads
		// or only writes.
		upExec := rate(bulk, w.timeExecStream(b, id, bulk, true))
		downExec := rate(bulk, w.timeExecStream(b, id, bulk, false))

		failed := w.concurrent(b, id, 50)

		fmt.Printf("session proxy vs direct TCP to the same server in the container:\n")
		fmt.Printf("  round trip (64 B, median of %d): direct %.3f ms, proxy %.3f ms, added %.3f ms (target <= 1 ms)\n",
			samples, ms(dm), ms(tm), ms(added))
		fmt.Printf("  throughput up:   direct %.0f MB/s, proxy %.0f MB/s, ratio %.2f (target >= 0.5)\n", upDirect, upTunnel, upTunnel/upDirect)
		fmt.Printf("  throughput down: direct %.0f MB/s, proxy %.0f MB/s, ratio %.2f (target >= 0.5)\n", downDirect, downTunnel, downTunnel/downDirect)
		fmt.Printf("  for reference, docker's exec stream alone (the connector's stdio): up %.0f MB/s, down %.0f MB/s\n", upExec, downExec)
		fmt.Printf("  50 concurrent sessions: %d failed\n", failed)
		b.ReportMetric(ms(added), "added-ms")
		b.ReportMetric(upTunnel/upDirect, "up-ratio")
		b.ReportMetric(downTunnel/downDirect, "down-ratio")
		b.ReportMetric(float64(failed), "failed-sessions")
		if failed > 0 {
			b.Errorf("%d of 50 concurrent sessions failed", failed)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// pingPong sends n 64-byte messages through rw and times each echo.
func pingPong(b testing.TB, w io.Writer, r io.Reader, n int) []time.Duration {
	msg := bytes.Repeat([]byte("x"), 63)
	msg = append(msg, '\n')
	buf := make([]byte, len(msg))
	out := make([]time.Duration, 0, n)
	for i := 0; i < n+50; i++ {
		start := time.Now()
		if _, err := w.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			b.Fatal(err)
		}
		if i >= 50 { // warmed up
			out = append(out, time.Since(start))
		}
	}
	return out
}

func directRTT(b testing.TB, ip string, n int) []time.Duration {
	c, err := net.Dial("tcp", ip+":7000")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	return pingPong(b, c, c, n)
}

func (w *world) proxyRTT(b testing.TB, id string, n int) []time.Duration {
	cmd := w.command(w.env(w.alice), "session", "proxy", id, "--port", "7000")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	return pingPong(b, stdin, stdout, n)
}

// timeDirect moves n bytes up (to the sink) or down (from the source).
func timeDirect(b testing.TB, addr string, n int, up bool) time.Duration {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	transfer(b, c, c, func() { c.(*net.TCPConn).CloseWrite() }, n, up)
	return time.Since(start)
}

func (w *world) timeProxy(b testing.TB, id, port string, n int, up bool) time.Duration {
	cmd := w.command(w.env(w.alice), "session", "proxy", id, "--port", port)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	transfer(b, stdin, stdout, func() { stdin.Close() }, n, up)
	d := time.Since(start)
	stdin.Close()
	_ = cmd.Wait()
	return d
}

func transfer(b testing.TB, w io.Writer, r io.Reader, closeWrite func(), n int, up bool) {
	if up {
		chunk := make([]byte, 256<<10)
		for left := n; left > 0; left -= len(chunk) {
			if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
				b.Fatal(err)
			}
		}
		closeWrite()
		line, err := bufio.NewReader(r).ReadString('\n')
		if got, _ := strconv.Atoi(strings.TrimSpace(line)); err != nil || got != n {
			b.Fatalf("the sink counted %q (%v), want %d", line, err, n)
		}
		return
	}
	fmt.Fprintf(w, "%d\n", n)
	got, err := io.Copy(io.Discard, r)
	if err != nil || got != int64(n) {
		b.Fatalf("the source gave %d bytes (%v), want %d", got, err, n)
	}
}

// timeExecStream moves n bytes through a docker exec's stdio alone, with
// no session around it.
func (w *world) timeExecStream(b testing.TB, id string, n int, up bool) time.Duration {
	cmd := []string{"sh", "-c", "cat >/dev/null"}
	if !up {
		cmd = []string{"head", "-c", strconv.Itoa(n), "/dev/zero"}
	}
	x, err := w.srv.Host.StartExec(context.Background(), w.engineID(b, id), hostclass.ExecSpec{Cmd: cmd})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	start := time.Now()
	if up {
		chunk := make([]byte, 256<<10)
		for left := n; left > 0; left -= len(chunk) {
			if _, err := x.Write(chunk[:min(left, len(chunk))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	_ = x.CloseWrite()
	var got countingWriter
	if err := x.Output(&got, io.Discard); err != nil {
		b.Fatal(err)
	}
	if !up && int(got) != n {
		b.Fatalf("the exec stream gave %d bytes, want %d", got, n)
	}
	return time.Since(start)
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// concurrent opens k sessions at once and echoes through each; it
// returns how many failed.
func (w *world) concurrent(b testing.TB, id string, k int) int {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	for i := 0; i < k; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := fmt.Sprintf("session %d\n", i)
			cmd := w.command(w.env(w.alice), "session", "proxy", id, "--port", "7000")
			cmd.Stdin = strings.NewReader(want)
			out, err := cmd.Output()
			if err != nil || string(out) != want {
				mu.Lock()
				failed++
				mu.Unlock()
				b.Logf("session %d: %q %v", i, out, err)
			}
		}(i)
	}
	wg.Wait()
	return failed
}
