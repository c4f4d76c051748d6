package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/client"
	"github.com/chalk-rl/chalk/internal/config"
	"github.com/chalk-rl/chalk/internal/hostclass"
)

func (w *world) inspect(t *testing.T, token, ref string) wire.Container {
	t.Helper()
	var c wire.Container
	if err := json.Unmarshal([]byte(w.mustChalk(t, token, "container", "inspect", ref)), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func dockerRunning(t *testing.T, engineID string) bool {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", "{{.State.Running}}", engineID).CombinedOutput()
	if err != nil {
		t.Fatalf("docker inspect: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out)) == "true"
}

func TestContainerLifecycle(t *testing.T) {
	w := setup(t)
	name, id := w.box(t, "bash", "--env", "GREETING=hi there", "--memory", "256m", "--cpus", "1")
	c := w.inspect(t, w.alice, name)
	if c.ID != id || c.Name != name || c.State != "running" || c.ComputeClass != "host" || c.MemoryBytes != 256<<20 || c.CPUs != 1 {
		t.Fatalf("inspect: %+v", c)
	}
	if got := w.mustChalk(t, w.alice, "session", "exec", id, "sh", "--", "-c", "echo $GREETING"); got != "hi there\n" {
		t.Fatalf("--env did not reach the container: %q", got)
	}
	ls := w.mustChalk(t, w.alice, "container", "ls")
	if !strings.Contains(ls, name) || !strings.Contains(ls, id) {
		t.Fatalf("ls lacks the box:\n%s", ls)
	}
	// logs: what the entrypoint wrote.
	lname, _ := w.box(t, "bash", "--entrypoint", "sh", "--", "-c", "echo line one; echo line two >&2; sleep infinity")
	var logs string
	for i := 0; i < 50 && !strings.Contains(logs, "line two"); i++ {
		time.Sleep(100 * time.Millisecond)
		logs = w.mustChalk(t, w.alice, "container", "logs", lname)
	}
	if !strings.Contains(logs, "line one") || !strings.Contains(logs, "line two") {
		t.Fatalf("logs: %q", logs)
	}
	if got := w.mustChalk(t, w.alice, "container", "logs", "--tail", "1", lname); got != "line two\n" && got != "line one\n" {
		t.Fatalf("logs --tail 1: %q", got)
	}
	engine := w.engineID(t, id)
	sockets := filepath.Join(w.dataDir, "sessions", strings.ReplaceAll(id, "-", "")[:16])
	if _, err := os.Stat(sockets); err != nil {
		t.Fatalf("the container's session socket directory: %v", err)
	}
	w.mustChalk(t, w.alice, "container", "stop", name)
	if dockerRunning(t, engine) {
		t.Fatal("docker still runs the stopped container")
	}
	if c := w.inspect(t, w.alice, id); c.State != "stopped" {
		t.Fatalf("state after stop: %+v", c)
	}
	w.mustChalk(t, w.alice, "container", "rm", id)
	if out, err := exec.Command("docker", "inspect", engine).CombinedOutput(); err == nil {
		t.Fatalf("docker still has the removed container: %s", out)
	}
	if _, err := os.Stat(sockets); !os.IsNotExist(err) {
		t.Fatalf("the removed container's socket directory is still there: %v", err)
	}
	_, errOut, code := w.chalk(t, w.alice, "", "container", "inspect", name)
	if code == 0 || !strings.Contains(errOut, fmt.Sprintf("no container %q", name)) {
		t.Fatalf("inspect after rm: exit %d %q", code, errOut)
	}
}

// TestLifetimeStopsContainer: a lifetime of a few seconds ends with the
// container stopped by the server, in docker too.
func TestLifetimeStopsContainer(t *testing.T) {
	w := setup(t)
	name, id := w.box(t, "bash", "--lifetime", "2s")
	engine := w.engineID(t, id)
	if !dockerRunning(t, engine) {
		t.Fatal("the container is not running to begin with")
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c := w.inspect(t, w.alice, name); c.State == "stopped" {
			if !strings.Contains(c.Reason, "lifetime ended") {
				t.Fatalf("stopped, but the reason is %q", c.Reason)
			}
			if dockerRunning(t, engine) {
				t.Fatal("the API says stopped, docker says running")
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the container outlived its lifetime")
}

// TestRestartKeepsState: a second server on the first one's data keeps
// its tokens and containers, and enforces a lifetime that ended while no
// server ran.
func TestRestartKeepsState(t *testing.T) {
	w := setup(t)
	long, longID := w.box(t, "bash")
	short, shortID := w.box(t, "bash", "--lifetime", "3s")
	shortEngine := w.engineID(t, shortID)
	// A session open across the stop: its connector must not outlive
	// the server.
	proxy := w.command(w.env(w.alice), "session", "proxy", longID, "--port", "8080")
	stdin, _ := proxy.StdinPipe()
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = proxy.Process.Kill(); _ = proxy.Wait() }()
	for i := 0; i < 50 && !w.hasProc(t, longID, "bash -c exec 3<>/dev/tcp"); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if !w.hasProc(t, longID, "bash -c exec 3<>/dev/tcp") {
		t.Fatalf("no connector while the session is open: %q", w.procs(t, longID))
	}
	longEngine := w.engineID(t, longID)
	// What a server killed with SIGKILL leaves: a process of a session
	// (it carries the server's mark), beside one an admin started with
	// docker exec, which is not the server's to end even though it has
	// the variable, with another value.
	mine := hostclass.SessionEnv + "=" + w.srv.Host.Mark
	for _, args := range [][]string{{"-e", mine, longEngine, "sleep", "1001"}, {"-e", hostclass.SessionEnv + "=1", longEngine, "sleep", "1002"}} {
		if out, err := exec.Command("docker", append([]string{"exec", "-d"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("docker exec: %v\n%s", err, out)
		}
	}
	w.shutdown()
	if out, _ := exec.Command("docker", "exec", longEngine, "ps", "-eo", "args").Output(); strings.Contains(string(out), "/dev/tcp") {
		t.Fatalf("the session's connector outlived the server:\n%s", out)
	}
	// Down long enough for the short lifetime to end, with nobody to
	// enforce it.
	time.Sleep(4 * time.Second)
	if !dockerRunning(t, shortEngine) {
		t.Fatal("something stopped the container while the server was down")
	}
	oldURL := w.url
	if err := w.start(); err != nil {
		t.Fatal(err)
	}
	if w.url == oldURL {
		t.Log("the new server took the same port")
	}
	// The same tokens work.
	who, err := mustClient(t, w, w.alice).Whoami(context.Background())
	if err != nil || who.Owner != w.aliceOwner {
		t.Fatalf("whoami after restart: %+v %v", who, err)
	}
	if c := w.inspect(t, w.alice, long); c.ID != longID || c.State != "running" {
		t.Fatalf("the long-lived box after restart: %+v", c)
	}
	if c := w.inspect(t, w.alice, short); c.State != "stopped" || dockerRunning(t, shortEngine) {
		t.Fatalf("the box whose lifetime ended during the restart: %+v", c)
	}
	if got := w.mustChalk(t, w.alice, "session", "exec", long, "echo", "ok"); got != "ok\n" {
		t.Fatalf("session after restart: %q", got)
	}
	if w.hasProc(t, longID, "sleep 1001") || !w.hasProc(t, longID, "sleep 1002") {
		t.Fatalf("after restart, want the session's leftover gone and the admin's process kept: %q", w.procs(t, longID))
	}
	// Every session process carries the mark.
	if got := w.mustChalk(t, w.alice, "session", "exec", long, "sh", "--", "-c", "echo $CHALK_SESSION"); got != w.srv.Host.Mark+"\n" || len(w.srv.Host.Mark) != 16 {
		t.Fatalf("CHALK_SESSION in a session: %q, want the server's mark %q", got, w.srv.Host.Mark)
	}
}

func mustClient(t *testing.T, w *world, token string) *client.Client {
	t.Helper()
	c, err := client.New(config.Settings{API: config.API{URL: w.url, Token: token, Fingerprint: w.pin}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNoRouteOut: a container reaches nothing outside its internal
// network. The target is a container the test starts on docker's default
// bridge: reachable from the host, never from the box.
func TestNoRouteOut(t *testing.T) {
	w := setup(t)
	name, id := w.box(t, "bash")
	out, err := exec.Command("docker", "network", "inspect", "-f", "{{.Internal}}", w.network).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Fatalf("network %s internal: %s %v", w.network, out, err)
	}
	out, err = exec.Command("docker", "inspect", "-f", "{{json .HostConfig.PortBindings}} {{json .NetworkSettings.Ports}}", w.engineID(t, id)).CombinedOutput()
	if err != nil || strings.Contains(string(out), "HostPort") {
		t.Fatalf("the container publishes a port: %s %v", out, err)
	}
	target := exec.Command("docker", "run", "-d", "--rm", "--label", "chalk.test=e2e", "--entrypoint", "/usr/local/bin/echoserver", w.images["bash"], "0.0.0.0")
	tid, err := target.Output()
	if err != nil {
		t.Fatal(err)
	}
	targetID := strings.TrimSpace(string(tid))
	defer exec.Command("docker", "rm", "-f", targetID).Run()
	ipOut, _ := exec.Command("docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", targetID).Output()
	ip := strings.TrimSpace(string(ipOut))
	var conn net.Conn
	for i := 0; i < 50; i++ {
		if conn, err = net.DialTimeout("tcp", ip+":7000", time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the host cannot reach the target %s: %v", ip, err)
	}
	conn.Close()
	probe := fmt.Sprintf("timeout 3 bash -c 'exec 3<>/dev/tcp/%s/7000' && echo reached || echo blocked", ip)
	if got := w.mustChalk(t, w.alice, "session", "exec", name, "sh", "--", "-c", probe); got != "blocked\n" {
		t.Fatalf("the box reached a host outside its network: %q", got)
	}
}

func TestVolumesOutliveContainers(t *testing.T) {
	w := setup(t)
	w.mustChalk(t, w.alice, "volume", "create", "work")
	defer w.chalk(t, w.alice, "", "volume", "rm", "work")
	name, id := w.box(t, "bash", "--volume", "work:/workspace")
	w.mustChalk(t, w.alice, "session", "exec", name, "sh", "--", "-c", "echo kept > /workspace/result")
	_, errOut, code := w.chalk(t, w.alice, "", "volume", "rm", "work")
	if code == 0 || !strings.Contains(errOut, "is mounted by container") {
		t.Fatalf("rm of a mounted volume: exit %d %q", code, errOut)
	}
	w.mustChalk(t, w.alice, "container", "rm", id)
	name2, _ := w.box(t, "bash", "--volume", "work:/data")
	if got := w.mustChalk(t, w.alice, "session", "exec", name2, "cat", "/data/result"); got != "kept\n" {
		t.Fatalf("the volume lost its data: %q", got)
	}
	if ls := w.mustChalk(t, w.alice, "volume", "ls"); !strings.Contains(ls, "work") {
		t.Fatalf("volume ls:\n%s", ls)
	}
	// Bob's "work" is not alice's.
	_, errOut, code = w.chalk(t, w.bob, "", "container", "run", "--image", w.images["bash"], "--volume", "work:/data")
	if code == 0 || !strings.Contains(errOut, `no volume "work"`) {
		t.Fatalf("bob mounting alice's volume: exit %d %q", code, errOut)
	}
}

func TestImageBuild(t *testing.T) {
	w := setup(t)
	dir := t.TempDir()
	df := fmt.Sprintf("FROM %s\nCOPY note.txt /note.txt\nCMD [\"sleep\", \"infinity\"]\n", w.images["bash"])
	for name, content := range map[string]string{"Dockerfile": df, "note.txt": "built through chalk\n", "secret.key": "x", ".dockerignore": "*.key\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := w.chalk(t, w.alice, "", "image", "build", "--name", "noted", dir)
	if code != 0 || out != "noted\n" {
		t.Fatalf("image build: exit %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	if ls := w.mustChalk(t, w.alice, "image", "ls"); !strings.Contains(ls, "noted") {
		t.Fatalf("image ls:\n%s", ls)
	}
	name, _ := w.box(t, "", "--image", "noted")
	if got := w.mustChalk(t, w.alice, "session", "exec", name, "cat", "/note.txt"); got != "built through chalk\n" {
		t.Fatalf("the built image's file: %q", got)
	}
	// A failing build says so.
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+w.images["bash"]+"\nRUN exit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = w.chalk(t, w.alice, "", "image", "build", "--name", "broken", dir)
	if code == 0 || !strings.Contains(errOut, "image build failed") {
		t.Fatalf("failing build: exit %d %q", code, errOut)
	}
	// Bob cannot run alice's image, by her name for it or by the
	// engine's.
	for _, ref := range []string{"noted", "chalk-api/" + w.aliceOwner + "/noted"} {
		_, errOut, code := w.chalk(t, w.bob, "", "container", "run", "--image", ref)
		if code == 0 || !strings.Contains(errOut, "is not on the server") {
			t.Errorf("bob runs %s: exit %d %q", ref, code, errOut)
		}
	}
}
