package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/client"
	"github.com/chalk-rl/chalk/internal/config"
	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/session"
	"github.com/chalk-rl/chalk/internal/store"
)

const httpRequest = "GET / HTTP/1.0\r\n\r\n"

// TestConnectorFallback: each image gets the connector the seed's order
// picks, and a tunnel through it works; with none, the seed's error.
func TestConnectorFallback(t *testing.T) {
	w := setup(t)
	for _, tc := range []struct {
		image, connector string
	}{
		{"sshd", "socat"},
		{"nc", "nc"},
		{"bash", "bash"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			t.Parallel()
			_, id := w.box(t, tc.image)
			out, errOut, code := w.chalk(t, w.alice, httpRequest, "session", "proxy", id, "--port", "8080")
			if code != 0 || !strings.Contains(out, "hello from the container") {
				t.Fatalf("proxy through %s: exit %d\nstdout: %q\nstderr: %s", tc.connector, code, out, errOut)
			}
			if !strings.HasPrefix(out, "HTTP/1.0 200 OK") {
				t.Fatalf("stdout carries more than the tunnel's bytes: %q", out)
			}
			if log := w.serverLog(t); !strings.Contains(log, `"connector":"`+tc.connector) {
				t.Fatalf("the server never used %s", tc.connector)
			}
			w.waitNoProc(t, id, tc.connector)
		})
	}
	for _, image := range []string{"none", "bare"} {
		t.Run(image, func(t *testing.T) {
			t.Parallel()
			name, _ := w.box(t, image)
			out, errOut, code := w.chalk(t, w.alice, httpRequest, "session", "proxy", name, "--port", "8080")
			if code == 0 || out != "" {
				t.Fatalf("exit %d, stdout %q: want a failure and nothing on stdout", code, out)
			}
			if !strings.HasPrefix(errOut, "chalk session proxy: no socat, nc, or bash in the container\nhint: ") {
				t.Fatalf("stderr: %q", errOut)
			}
		})
	}
}

func (w *world) serverLog(t testing.TB) string {
	t.Helper()
	data, err := readFile(w.dir + "/server.log")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestHalfClose: the client's EOF reaches the service (which answers
// only then), through socat and through OpenBSD nc.
func TestHalfClose(t *testing.T) {
	w := setup(t)
	for _, image := range []string{"sshd", "nc"} {
		t.Run(image, func(t *testing.T) {
			t.Parallel()
			_, id := w.box(t, image)
			out, errOut, code := w.chalk(t, w.alice, "twelve bytes", "session", "proxy", id, "--port", "7001")
			if code != 0 || out != "12\n" {
				t.Fatalf("exit %d, stdout %q, stderr %s: the sink should count 12 bytes after the EOF", code, out, errOut)
			}
		})
	}
}

func TestProxyNothingListening(t *testing.T) {
	w := setup(t)
	name, _ := w.box(t, "sshd")
	out, errOut, code := w.chalk(t, w.alice, "", "session", "proxy", name, "--port", "2222")
	if code == 0 || out != "" {
		t.Fatalf("exit %d stdout %q", code, out)
	}
	want := "chalk session proxy: nothing is listening on 127.0.0.1:2222 in container " + name + "\n"
	if !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "hint: ") {
		t.Fatalf("stderr %q, want it to start with %q and carry a hint", errOut, want)
	}
}

// TestProxyKilledLeavesNothing: when the local side dies without a word
// (kill -9), the server notices the stream's end and kills the connector.
func TestProxyKilledLeavesNothing(t *testing.T) {
	w := setup(t)
	for _, tc := range []struct{ image, connector string }{{"sshd", "socat"}, {"bash", "bash"}} {
		t.Run(tc.image, func(t *testing.T) {
			t.Parallel()
			_, id := w.box(t, tc.image)
			cmd := exec.Command(w.bin, "session", "proxy", id, "--port", "7000")
			cmd.Env = w.env(w.alice)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			echoOnce(t, stdin, stdout)
			if !w.hasProc(t, id, tc.connector) {
				t.Fatalf("no %s in the container while the session is open", tc.connector)
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			// bash's cats, killed with it, must not stay as zombies either.
			w.waitNoProc(t, id, tc.connector)
			w.waitNoProc(t, id, "cat")
		})
	}
}

// TestProxyPaths: socat carries a session through a unix socket in the
// container's socket directory. When the directory the container sees is
// not the server's any more (replaced on the host), socat cannot reach
// the socket and the session carries on through socat's stdio; a
// container without a directory (one made before the server kept them)
// gets socat on its stdio from the start. Each way the bytes arrive, the
// half-close reaches the service, and nothing is left behind: no
// connector, no socket file.
func TestProxyPaths(t *testing.T) {
	w := setup(t)
	_, id := w.box(t, "sshd")
	dir := filepath.Join(w.dataDir, "sessions")
	for _, path := range []struct{ name, arg string }{
		{"socket", "UNIX-CONNECT:" + hostclass.SocketMount + "/"},
		{"replaced", "STDIO"},
		{"stdio", "STDIO"},
	} {
		switch path.name {
		case "replaced":
			mine := filepath.Join(dir, strings.ReplaceAll(id, "-", "")[:16])
			if err := os.RemoveAll(mine); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(mine, 0o755); err != nil {
				t.Fatal(err)
			}
		case "stdio":
			if err := w.srv.Host.RemoveSockets(id); err != nil {
				t.Fatal(err)
			}
		}
		cmd := w.command(w.env(w.alice), "session", "proxy", id, "--port", "7000")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		echoOnce(t, stdin, stdout)
		var connector string
		for _, p := range w.procs(t, id) {
			if strings.HasPrefix(p, "socat") {
				connector = p
			}
		}
		if !strings.Contains(connector, " "+path.arg) {
			t.Errorf("%s: the connector runs as %q, want an argument starting %q", path.name, connector, path.arg)
		}
		stdin.Close()
		_, _ = io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: %v", path.name, err)
		}
		out, errOut, code := w.chalk(t, w.alice, "twelve bytes", "session", "proxy", id, "--port", "7001")
		if code != 0 || out != "12\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %s: the sink should count 12 bytes after the EOF", path.name, code, out, errOut)
		}
		w.waitNoProc(t, id, "socat")
		var left []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				left = append(left, p)
			}
			return nil
		})
		if len(left) > 0 {
			t.Errorf("%s: socket files left behind: %q", path.name, left)
		}
	}
}

func echoOnce(t *testing.T, stdin io.Writer, stdout io.Reader) {
	t.Helper()
	if _, err := io.WriteString(stdin, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
}

func (w *world) hasProc(t testing.TB, id, prefix string) bool {
	for _, p := range w.procs(t, id) {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// TestKeepaliveEndsDeadSession: a client that stops answering (its
// packets go nowhere, but no connection is closed) is declared dead by
// the server's pings, and its connector killed.
func TestKeepaliveEndsDeadSession(t *testing.T) {
	w := setup(t)
	_, id := w.box(t, "sshd")
	relay := newRelay(t, strings.TrimPrefix(w.url, "https://"))
	cmd := exec.Command(w.bin, "session", "proxy", id, "--port", "7000")
	cmd.Env = append(w.env(w.alice), "CHALK_API_URL=https://"+relay.addr)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	echoOnce(t, stdin, stdout)
	if !w.hasProc(t, id, "socat") {
		t.Fatal("no socat in the container while the session is open")
	}
	relay.freeze()
	// The server pings every second and waits two: well within the
	// five seconds waitNoProc allows.
	w.waitNoProc(t, id, "socat")
}

// relay forwards TCP to a target until frozen, after which it holds
// every connection open and moves nothing.
type relay struct {
	addr   string
	mu     sync.Mutex
	frozen bool
}

func newRelay(t *testing.T, target string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &relay{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); s.Close() })
			go r.pipe(c, s)
			go r.pipe(s, c)
		}
	}()
	return r
}

func (r *relay) freeze() {
	r.mu.Lock()
	r.frozen = true
	r.mu.Unlock()
}

func (r *relay) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		r.mu.Lock()
		frozen := r.frozen
		r.mu.Unlock()
		if frozen {
			select {} // swallow everything, close nothing
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func TestExecStdioAndExitCode(t *testing.T) {
	w := setup(t)
	name, _ := w.box(t, "bash")
	out, errOut, code := w.chalk(t, w.alice, "from stdin\n", "session", "exec", name, "sh", "--", "-c", "cat; echo to-stderr >&2; exit 42")
	if out != "from stdin\n" || errOut != "to-stderr\n" || code != 42 {
		t.Fatalf("stdout %q stderr %q exit %d", out, errOut, code)
	}
	// The seed's own form.
	out, _, code = w.chalk(t, w.alice, "", "session", "exec", name, "sh", "--", "-c", "echo seed form")
	if out != "seed form\n" || code != 0 {
		t.Fatalf("stdout %q exit %d", out, code)
	}
	_, errOut, code = w.chalk(t, w.alice, "", "session", "exec", name, "no-such-command")
	if code != 127 || !strings.Contains(errOut, "no-such-command") {
		t.Fatalf("missing command: exit %d stderr %q", code, errOut)
	}
	// Killed by a signal: 128 + 9.
	_, _, code = w.chalk(t, w.alice, "", "session", "exec", name, "sh", "--", "-c", "kill -9 $$")
	if code != 137 {
		t.Fatalf("killed command: exit %d, want 137", code)
	}
}

// TestExecTTYResize drives the client half in-process, to play the
// terminal: the command sees the first size, then the new one.
func TestExecTTYResize(t *testing.T) {
	w := setup(t)
	name, _ := w.box(t, "bash")
	c, err := client.New(config.Settings{API: config.API{URL: w.url, Token: w.alice, Fingerprint: w.pin}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, err := c.Session(ctx, name, "exec", nil)
	if err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	var out lockedBuffer
	resize := make(chan session.Resize, 1)
	done := make(chan int, 1)
	go func() {
		code, err := session.Exec(ctx, ws, session.DefaultKeepalive,
			// The pause: daemons before API 1.42 size the terminal just
			// after the process starts.
			session.Start{Cmd: []string{"sh", "-c", "sleep 0.5; stty size; read x; stty size"}, TTY: true, Cols: 100, Rows: 30},
			stdinR, &out, &out, resize)
		if err != nil {
			t.Error(err)
		}
		done <- code
	}()
	waitFor(t, &out, "30 100")
	resize <- session.Resize{Cols: 120, Rows: 40}
	time.Sleep(300 * time.Millisecond)
	io.WriteString(stdinW, "\n")
	waitFor(t, &out, "40 120")
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; output %q", code, out.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, b *lockedBuffer, s string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if strings.Contains(b.String(), s) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("never saw %q in %q", s, b.String())
}

// TestKubernetes: the API refuses the class it has no backend for, and a
// container of another class (as a server with Kubernetes would have
// recorded) gets the seed's error from every session call.
func TestKubernetes(t *testing.T) {
	w := setup(t)
	_, errOut, code := w.chalk(t, w.alice, "", "container", "run", "--image", w.images["sshd"], "--name", "k8s-box", "--compute-class", "kubernetes")
	if code == 0 || !strings.Contains(errOut, "the kubernetes compute class is not configured on this server") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	ctx := context.Background()
	c := store.Container{ID: store.NewID(), Owner: w.aliceOwner, Name: "kube-box", Image: "x", ComputeClass: "kubernetes",
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour), State: store.StateRunning}
	if err := w.st.InsertContainer(ctx, c); err != nil {
		t.Fatal(err)
	}
	defer w.st.DeleteContainer(ctx, c.ID)
	for _, args := range [][]string{
		{"session", "proxy", "kube-box"},
		{"session", "proxy", c.ID, "--port", "5432"},
		{"session", "exec", "kube-box", "true"},
	} {
		out, errOut, code := w.chalk(t, w.alice, "", args...)
		if code == 0 || out != "" || !strings.Contains(errOut, "container sessions require a host-backed container") {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out, errOut)
		}
	}
}

func TestSessionOnStoppedContainer(t *testing.T) {
	w := setup(t)
	name, _ := w.box(t, "bash")
	w.mustChalk(t, w.alice, "container", "stop", name)
	_, errOut, code := w.chalk(t, w.alice, "", "session", "exec", name, "true")
	if code == 0 || !strings.Contains(errOut, "container "+name+" is not running") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	_, errOut, code = w.chalk(t, w.alice, "", "session", "proxy", "no-such-box")
	if code == 0 || !strings.Contains(errOut, `chalk session proxy: no container "no-such-box"`) {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
}

// TestProxyEndsWhenServiceCloses: the service closes first while the
// client's stdin stays open; with socat (which reports the port's EOF) and
// bash, the proxy ends on its own, with every byte delivered.
func TestProxyEndsWhenServiceCloses(t *testing.T) {
	w := setup(t)
	for _, image := range []string{"sshd", "bash"} {
		t.Run(image, func(t *testing.T) {
			t.Parallel()
			_, id := w.box(t, image)
			cmd := w.command(w.env(w.alice), "session", "proxy", id, "--port", "7002")
			stdin, _ := cmd.StdinPipe()
			defer stdin.Close()
			var out countingWriter
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The source sends this much and closes; stdin stays open.
			const n = 3 << 20
			if _, err := io.WriteString(stdin, "3145728\n"); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil || int(out) != n {
					t.Fatalf("exit %v after %d bytes, want success after %d", err, out, n)
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("the proxy did not end when the service closed (%d bytes so far)", out)
			}
		})
	}
}

// TestConnectorNoted: once a container's probe found socat, its next
// sessions start socat without probing (one exec each, counted in the
// daemon's events); when socat then goes from the container, a session
// still opens, through the next connector in the seed's order.
func TestConnectorNoted(t *testing.T) {
	w := setup(t)
	name, id := w.box(t, "sshd")
	engine := w.engineID(t, id)
	proxy := func() {
		t.Helper()
		out, errOut, code := w.chalk(t, w.alice, httpRequest, "session", "proxy", name, "--port", "8080")
		if code != 0 || !strings.HasPrefix(out, "HTTP/1.0 200 OK") {
			t.Fatalf("proxy: exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
		}
	}
	var execs [2][]string
	for i := range execs {
		since := time.Now()
		proxy()
		execs[i] = w.execsSince(t, engine, since)
	}
	if len(execs[0]) != 2 || !strings.HasPrefix(execs[0][0], "sh -c") {
		t.Errorf("the first session ran %q: want the probe, then the connector", execs[0])
	}
	if len(execs[1]) != 1 || !strings.HasPrefix(execs[1][0], "socat ") {
		t.Errorf("the second session ran %q: want only socat", execs[1])
	}

	if out, errOut, code := w.chalk(t, w.alice, "", "session", "exec", name, "sh", "--", "-c", `rm "$(command -v socat)"`); code != 0 {
		t.Fatalf("remove socat: exit %d\n%s%s", code, out, errOut)
	}
	proxy()
	var last string
	for _, line := range strings.Split(w.serverLog(t), "\n") {
		if strings.Contains(line, `"connector":`) && strings.Contains(line, `"container":"`+id+`"`) {
			last = line
		}
	}
	if !strings.Contains(last, `"connector":"bash"`) && !strings.Contains(last, `"connector":"nc`) {
		t.Fatalf("with socat gone, the session did not move to nc or bash: %s", last)
	}
}

// execsSince lists the commands the daemon started in container engine
// since a time, from its events.
func (w *world) execsSince(t testing.TB, engine string, since time.Time) []string {
	t.Helper()
	stamp := func(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
	out, err := exec.Command("docker", "events", "--filter", "container="+engine, "--filter", "event=exec_create",
		"--since", stamp(since), "--until", stamp(time.Now()), "--format", "{{.Action}}").Output()
	if err != nil {
		t.Fatalf("docker events: %v", err)
	}
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if c, ok := strings.CutPrefix(line, "exec_create: "); ok {
			cmds = append(cmds, c)
		}
	}
	return cmds
}
