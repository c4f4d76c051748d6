package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/testenv"
)

// BenchmarkSessionProxy measures, in one run, the tunnel against the
// bare path to the same server in the same container (a direct TCP
// connection from the host to the container's address):
//
//   - the median round trip of a 64-byte message, and what the tunnel adds;
//   - bulk throughput up (to the container) and down, as ratios, once
//     each connection is open (the service greets first; the clock starts
//     at its greeting), best of three each way; with the CPU time the whole
//     machine spent per GB moved, which bounds the ratio a machine with
//     few cores can reach;
//   - how long a session takes to open;
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
		bulk    = 256 << 20
		rounds  = 3
	)
	for i := 0; i < b.N; i++ {
		direct := directRTT(b, ip, samples)
		tunnel := w.proxyRTT(b, id, samples)
		dm, tm := testenv.Median(direct), testenv.Median(tunnel)
		added := tm - dm

		var up, down [2]transferStats // direct, tunnel
		for r := 0; r < rounds; r++ {
			up[0].add(bulk, timeDirect(b, ip+":7003", bulk, true))
			up[1].add(bulk, w.timeProxy(b, id, "7003", bulk, true))
			down[0].add(bulk, timeDirect(b, ip+":7004", bulk, false))
			down[1].add(bulk, w.timeProxy(b, id, "7004", bulk, false))
		}
		open := w.openTimes(b, id, 20)

		// The path of the nc and bash connectors: the daemon's exec
		// stream alone, to a program that only reads or only writes.
		upExec := rate(64<<20, w.timeExecStream(b, id, 64<<20, true))
		downExec := rate(64<<20, w.timeExecStream(b, id, 64<<20, false))

		failed := w.concurrent(b, id, 50)

		fmt.Printf("session proxy vs direct TCP to the same server in the container:\n")
		fmt.Printf("  round trip (64 B, median of %d): direct %.3f ms, proxy %.3f ms, added %.3f ms (target <= 1 ms)\n",
			samples, ms(dm), ms(tm), ms(added))
		for _, d := range []struct {
			name string
			st   [2]transferStats
		}{{"up:  ", up}, {"down:", down}} {
			fmt.Printf("  throughput %s direct %.0f MB/s, proxy %.0f MB/s, ratio %.2f (target >= 0.5); CPU per GB: direct %.2f s, proxy %.2f s\n",
				d.name, d.st[0].best, d.st[1].best, d.st[1].best/d.st[0].best, d.st[0].cpuPerGB(), d.st[1].cpuPerGB())
		}
		fmt.Printf("  (best of %d transfers of %d MiB each way; this machine has %d cores)\n", rounds, bulk>>20, goruntime.NumCPU())
		fmt.Printf("  opening a session (chalk session proxy started to the service's first byte): median %.0f ms\n", ms(testenv.Median(open)))
		fmt.Printf("  for reference, docker's exec stream alone (the nc and bash connectors' path): up %.0f MB/s, down %.0f MB/s\n", upExec, downExec)
		fmt.Printf("  50 concurrent sessions: %d failed\n", failed)
		b.ReportMetric(ms(added), "added-ms")
		b.ReportMetric(up[1].best/up[0].best, "up-ratio")
		b.ReportMetric(down[1].best/down[0].best, "down-ratio")
		b.ReportMetric(float64(failed), "failed-sessions")
		if failed > 0 {
			b.Errorf("%d of 50 concurrent sessions failed", failed)
		}
	}
}

// transferStats keeps the best rate of several transfers and the CPU
// time they took.
type transferStats struct {
	best  float64 // MB/s
	bytes int64
	cpu   time.Duration
}

func (t *transferStats) add(n int, m measured) {
	t.best = max(t.best, rate(n, m.wall))
	t.bytes += int64(n)
	t.cpu += m.cpu
}

// cpuPerGB is the CPU time, all cores together, spent per 1e9 bytes.
func (t *transferStats) cpuPerGB() float64 {
	return t.cpu.Seconds() / (float64(t.bytes) / 1e9)
}

// measured is one transfer's wall time and the CPU time the whole
// machine spent meanwhile.
type measured struct{ wall, cpu time.Duration }

// clock starts timing; its result stops it.
func clock() func() measured {
	start, cpu := time.Now(), busyCPU()
	return func() measured { return measured{wall: time.Since(start), cpu: busyCPU() - cpu} }
}

// busyCPU is the CPU time every core has spent on anything but idling
// since boot (from /proc/stat, in clock ticks of 10 ms).
func busyCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

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

// timeDirect moves n bytes up (to the sink) or down (from the source),
// timed from the service's greeting.
func timeDirect(b testing.TB, addr string, n int, up bool) measured {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	greeted(b, c)
	stop := clock()
	transfer(b, c, c, func() { c.(*net.TCPConn).CloseWrite() }, n, up)
	return stop()
}

func (w *world) timeProxy(b testing.TB, id, port string, n int, up bool) measured {
	cmd := w.command(w.env(w.alice), "session", "proxy", id, "--port", port)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	greeted(b, stdout)
	stop := clock()
	transfer(b, stdin, stdout, func() { stdin.Close() }, n, up)
	return stop()
}

// greeted reads the service's greeting.
func greeted(b testing.TB, r io.Reader) {
	var hello [6]byte
	if _, err := io.ReadFull(r, hello[:]); err != nil || string(hello[:]) != "ready\n" {
		b.Fatalf("the service's greeting: %q, %v", hello, err)
	}
}

// openTimes opens k sessions one after another and times each from the
// start of chalk session proxy to the service's greeting.
func (w *world) openTimes(b testing.TB, id string, k int) []time.Duration {
	var out []time.Duration
	for range k {
		start := time.Now()
		cmd := w.command(w.env(w.alice), "session", "proxy", id, "--port", "7003")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		greeted(b, stdout)
		out = append(out, time.Since(start))
		stdin.Close()
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}
	return out
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
	// Read as the up direction writes, 256 KiB at a time (io.Copy to
	// io.Discard would read 8 KiB at a time).
	got, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{r}, make([]byte, 256<<10))
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
