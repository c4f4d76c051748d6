package hostclass

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pidOf is a Process whose pid the test sets.
type pidOf struct{ pid func() int }

func (p pidOf) State(context.Context) (ExecState, error) {
	return ExecState{Running: true, Pid: p.pid()}, nil
}

// socketHost is a Host keeping sockets in a short temporary directory,
// with one container's directory made.
func socketHost(t *testing.T) (*Host, string) {
	t.Helper()
	root, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	h := &Host{SocketRoot: root}
	mount, err := h.makeSocketDir("3f2a9c1e-77b0-4d2e-9a51-0c8e5d4b1a22")
	if err != nil {
		t.Fatal(err)
	}
	want := "type=bind,source=" + filepath.Join(root, "3f2a9c1e77b04d2e") + ",target=" + SocketMount + ",readonly"
	if len(mount) != 2 || mount[0] != "--mount" || mount[1] != want {
		t.Fatalf("mount flags %q, want --mount %s", mount, want)
	}
	return h, "3f2a9c1e-77b0-4d2e-9a51-0c8e5d4b1a22"
}

// listen makes a session socket for container id, closed after the test.
func listen(t *testing.T, h *Host, id string) *SessionSocket {
	t.Helper()
	sock, err := h.ListenSession(id)
	if err != nil || sock == nil {
		t.Fatalf("ListenSession: %v, %v", sock, err)
	}
	t.Cleanup(func() { sock.Close() })
	return sock
}

// hostPath is where sock's file is on this host.
func hostPath(h *Host, id string, sock *SessionSocket) string {
	return filepath.Join(h.socketDir(id), strings.TrimPrefix(sock.Path, SocketMount+"/"))
}

// TestSessionSocketRefusesOtherProcesses: a process in the container
// that finds the socket before the connector does is turned away, and
// the connector (here a socat on this host) still gets through.
func TestSessionSocketRefusesOtherProcesses(t *testing.T) {
	if _, err := exec.LookPath("socat"); err != nil {
		t.Skip("socat is not installed: scripts/setup.sh installs it")
	}
	h, id := socketHost(t)
	sock := listen(t, h, id)
	path := hostPath(h, id, sock)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("the socket file: %v %v, want mode 0666", fi, err)
	}

	connector := exec.Command("socat", "-", "UNIX-CONNECT:"+path)
	connector.Stdin = strings.NewReader("from the connector\n")
	out, _ := connector.StdoutPipe()
	// The intruder connects first, from this process.
	intruder, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	if _, err := io.WriteString(intruder, "from an intruder\n"); err != nil {
		t.Fatal(err)
	}
	_ = intruder.(*net.UnixConn).CloseWrite()
	time.Sleep(50 * time.Millisecond)
	if err := connector.Start(); err != nil {
		t.Fatal(err)
	}
	defer connector.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := sock.Accept(ctx, pidOf{func() int { return connector.Process.Pid }}, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "from the connector\n" {
		t.Fatalf("read %q, %v from the accepted connection; want the connector's line", got, err)
	}
	_ = intruder.SetReadDeadline(time.Now().Add(5 * time.Second))
	// Closed with its line unread: EOF or a reset, not a timeout.
	if n, err := intruder.Read(make([]byte, 1)); n > 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the intruder's connection: read %d, %v; want it closed", n, err)
	}
	_, _ = io.Copy(io.Discard, out)
	if err := sock.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket file outlives Close: %v", err)
	}
}

// TestSessionSocketConnectorGone: a connector that ends without
// connecting (it could not reach the socket) ends the wait at once.
func TestSessionSocketConnectorGone(t *testing.T) {
	h, id := socketHost(t)
	sock := listen(t, h, id)
	exited := make(chan struct{})
	close(exited)
	start := time.Now()
	_, err := sock.Accept(context.Background(), pidOf{func() int { return 1 }}, exited, time.Minute)
	if !errors.Is(err, ErrConnectorGone) {
		t.Fatalf("Accept: %v, want ErrConnectorGone", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Accept waited %s for a connector that had ended", d)
	}
}

// TestSessionSocketsOnlyWhereTheyFit: a socket root too long for a unix
// socket's path turns the sockets off (sessions then use exec stdio),
// and a container without a directory gets no socket.
func TestSessionSocketsOnlyWhereTheyFit(t *testing.T) {
	long := &Host{SocketRoot: "/" + strings.Repeat("d", 80)}
	if long.SocketsUsable() {
		t.Fatal("an 81-byte socket root is taken as usable")
	}
	if mount, err := long.makeSocketDir("abc"); err != nil || mount != nil {
		t.Fatalf("makeSocketDir with a long root: %q, %v; want no mount", mount, err)
	}
	h, _ := socketHost(t)
	if sock, err := h.ListenSession("0badc0de-0000-0000-0000-000000000000"); sock != nil || err != nil {
		t.Fatalf("ListenSession for a container without a directory: %v, %v; want nil, nil", sock, err)
	}
	if (&Host{}).SocketsUsable() {
		t.Fatal("a host without a socket root is taken as keeping sockets")
	}
}

// TestPruneSockets: directories of containers the server no longer has
// go; those of the containers it has stay.
func TestPruneSockets(t *testing.T) {
	h, id := socketHost(t)
	gone := "9d1c0c55-0000-4000-8000-000000000000"
	if _, err := h.makeSocketDir(gone); err != nil {
		t.Fatal(err)
	}
	if err := h.PruneSockets([]string{id}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.socketDir(id)); err != nil {
		t.Fatalf("a kept container's directory: %v", err)
	}
	if _, err := os.Stat(h.socketDir(gone)); !os.IsNotExist(err) {
		t.Fatalf("a gone container's directory is still there: %v", err)
	}
}

// TestSessionSocketWrappedConnector: a connector run through a wrapper
// that does not exec it connects from a child of the process docker
// started, and is accepted.
func TestSessionSocketWrappedConnector(t *testing.T) {
	if _, err := exec.LookPath("socat"); err != nil {
		t.Skip("socat is not installed: scripts/setup.sh installs it")
	}
	h, id := socketHost(t)
	sock := listen(t, h, id)
	wrapper := exec.Command("sh", "-c", `socat - "UNIX-CONNECT:$1"; true`, "sh", hostPath(h, id, sock))
	wrapper.Stdin = strings.NewReader("through a wrapper\n")
	if err := wrapper.Start(); err != nil {
		t.Fatal(err)
	}
	defer wrapper.Wait()
	c, err := sock.Accept(context.Background(), pidOf{func() int { return wrapper.Process.Pid }}, nil, 10*time.Second)
	if err != nil {
		t.Fatalf("Accept refused the wrapped connector: %v", err)
	}
	defer c.Close()
	if got, _ := io.ReadAll(c); string(got) != "through a wrapper\n" {
		t.Fatalf("read %q", got)
	}
}

// TestSessionSocketFlooded: a process in the container that keeps
// dialling the socket makes Accept give up with ErrUnverified (the
// session then uses stdio), not wait forever.
func TestSessionSocketFlooded(t *testing.T) {
	h, id := socketHost(t)
	sock := listen(t, h, id)
	path := hostPath(h, id, sock)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c, err := net.Dial("unix", path); err == nil {
				c.Close()
			} else {
				return
			}
		}
	}()
	_, err := sock.Accept(context.Background(), pidOf{func() int { return 1 }}, nil, time.Minute)
	if !errors.Is(err, ErrUnverified) {
		t.Fatalf("Accept under a flood: %v, want ErrUnverified", err)
	}
}
