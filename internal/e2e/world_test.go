package e2e

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/api"
	"github.com/chalk-rl/chalk/internal/client"
	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/session"
	"github.com/chalk-rl/chalk/internal/store"
	"github.com/chalk-rl/chalk/internal/testenv"
)

// world is what every test here shares: one server, one chalk binary,
// one set of images, built once per test binary.
type world struct {
	dir         string // scratch space for the whole binary
	bin         string // the chalk binary
	url, pin    string // the server's address and certificate fingerprint
	srv         *api.Server
	st          *store.Store
	network     string
	alice, bob  string // tokens of two owners
	aliceOwner  string
	bobOwner    string
	key         string // ssh private key, whose public half the sshd image trusts
	images      map[string]string
	shutdown    func()
	dataDir     string
	storeClosed bool
}

var (
	once     sync.Once
	theWorld *world
	worldErr error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if theWorld != nil {
		theWorld.close()
	}
	os.Exit(code)
}

// setup returns the shared world, making it on first use.
func setup(t testing.TB) *world {
	t.Helper()
	testenv.NeedDocker(t)
	base := testenv.BaseImage(t)
	for _, tool := range []string{"ssh", "scp", "ssh-keygen", "socat", "curl", "nc", "sshd", "rsync"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err2 := os.Stat("/usr/sbin/" + tool); err2 != nil {
				skipOrFail(t, tool+" is not installed; run scripts/setup.sh")
			}
		}
	}
	once.Do(func() { theWorld, worldErr = makeWorld(base) })
	if worldErr != nil {
		t.Fatal(worldErr)
	}
	return theWorld
}

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func makeWorld(base string) (*world, error) {
	dir, err := os.MkdirTemp("", "chalk-e2e-")
	if err != nil {
		return nil, err
	}
	w := &world{dir: dir, images: map[string]string{}}
	w.network = fmt.Sprintf("chalk-e2e-%d", os.Getpid())
	w.aliceOwner = fmt.Sprintf("alice-e2e-%d", os.Getpid())
	w.bobOwner = fmt.Sprintf("bob-e2e-%d", os.Getpid())
	if err := w.buildChalk(); err != nil {
		return nil, err
	}
	if err := w.buildImages(base); err != nil {
		return nil, err
	}
	w.dataDir = filepath.Join(dir, "server")
	if err := w.start(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	_, w.alice, err = w.st.CreateToken(ctx, w.aliceOwner, "e2e")
	if err != nil {
		return nil, err
	}
	_, w.bob, err = w.st.CreateToken(ctx, w.bobOwner, "e2e")
	return w, err
}

// start runs the server on the state in w.dataDir.
func (w *world) start() error {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(w.dataDir, "chalk.db"))
	if err != nil {
		return err
	}
	host, err := hostclass.New(w.network, os.Getenv("DOCKER_HOST"))
	if err != nil {
		return err
	}
	host.SocketRoot = filepath.Join(w.dataDir, "sessions")
	log := slog.New(slog.NewJSONHandler(logFile(w.dir), nil))
	srv := &api.Server{Store: st, Host: host, Log: log, ReapInterval: 200 * time.Millisecond, StopGrace: time.Second,
		Keepalive: session.Keepalive{Interval: time.Second, Timeout: 2 * time.Second}}
	if err := srv.Prepare(ctx); err != nil {
		return err
	}
	cert, err := api.LoadCertificate("", "", w.dataDir, nil)
	if err != nil {
		return err
	}
	ln, err := api.Listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := srv.HTTPServer(cert, slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	rctx, cancel := context.WithCancel(ctx)
	go srv.Run(rctx)
	go hs.ServeTLS(ln, "", "")
	w.srv, w.st = srv, st
	w.url = "https://" + ln.Addr().String()
	w.pin = client.Fingerprint(cert.Certificate[0])
	w.shutdown = func() {
		cancel()
		sctx, c2 := context.WithTimeout(ctx, 3*time.Second)
		defer c2()
		_ = hs.Shutdown(sctx)
		srv.EndSessions(sctx)
		hs.Close()
		st.Close()
	}
	return nil
}

func logFile(dir string) *os.File {
	f, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return os.Stderr
	}
	return f
}

func (w *world) close() {
	if w.shutdown != nil {
		w.shutdown()
	}
	for _, owner := range []string{w.aliceOwner, w.bobOwner} {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+hostclass.LabelOwner+"="+owner).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
		out, _ = exec.Command("docker", "volume", "ls", "-q", "--filter", "label="+hostclass.LabelOwner+"="+owner).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"volume", "rm", "-f"}, ids...)...).Run()
		}
		out, _ = exec.Command("docker", "images", "-q", "--filter", "label="+hostclass.LabelOwner+"="+owner).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rmi", "-f"}, ids...)...).Run()
		}
	}
	_ = exec.Command("docker", "network", "rm", w.network).Run()
	os.RemoveAll(w.dir)
}

// buildChalk builds the chalk binary that ssh's ProxyCommand runs.
func (w *world) buildChalk() error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	w.bin = filepath.Join(w.dir, "bin", "chalk")
	cmd := exec.Command("go", "build", "-trimpath", "-o", w.bin, "./cmd/chalk")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build chalk: %v\n%s", err, out)
	}
	return nil
}

// env is the environment chalk runs with as owner token.
func (w *world) env(token string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHALK_API_") {
			env = append(env, kv)
		}
	}
	return append(env, "CHALK_API_URL="+w.url, "CHALK_API_TOKEN="+token, "CHALK_API_FINGERPRINT="+w.pin)
}

// chalk runs the chalk binary as token's owner and returns its stdout,
// stderr and exit code.
func (w *world) chalk(t testing.TB, token string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Env = w.env(token)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("chalk %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// mustChalk is chalk that fails the test on a non-zero exit.
func (w *world) mustChalk(t testing.TB, token string, args ...string) string {
	t.Helper()
	out, errOut, code := w.chalk(t, token, "", args...)
	if code != 0 {
		t.Fatalf("chalk %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// box runs a container of image kind for the test, as alice, and returns
// its name and ID. It is removed when the test ends.
func (w *world) box(t testing.TB, kind string, extra ...string) (name, id string) {
	t.Helper()
	name = strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[len(name)-50:]
	}
	name = strings.Trim(name, "-.")
	boxMu.Lock()
	boxCount[name]++
	if n := boxCount[name]; n > 1 {
		name = fmt.Sprintf("%s-%d", name, n)
	}
	boxMu.Unlock()
	args := []string{"container", "run", "--name", name, "--compute-class", "host", "--lifetime", "10m"}
	if kind != "" {
		args = append(args, "--image", w.images[kind])
	}
	args = append(args, extra...)
	id = strings.TrimSpace(w.mustChalk(t, w.alice, args...))
	t.Cleanup(func() { w.chalk(t, w.alice, "", "container", "rm", id) })
	return name, id
}

// engineID is docker's ID of API container id.
func (w *world) engineID(t testing.TB, id string) string {
	t.Helper()
	c, err := w.st.FindContainer(context.Background(), w.aliceOwner, id)
	if err != nil {
		t.Fatal(err)
	}
	return c.EngineID
}

// procs lists the command lines of the processes in container id.
func (w *world) procs(t testing.TB, id string) []string {
	t.Helper()
	out, err := exec.Command("docker", "exec", w.engineID(t, id), "ps", "-eo", "args").CombinedOutput()
	if err != nil {
		// Images without ps: ask the engine.
		out, err = exec.Command("docker", "top", w.engineID(t, id), "-o", "args").CombinedOutput()
		if err != nil {
			t.Fatalf("list processes: %v\n%s", err, out)
		}
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	return lines
}

// waitNoProc waits until no process in container id starts with prefix.
func (w *world) waitNoProc(t testing.TB, id, prefix string) {
	t.Helper()
	var left []string
	for i := 0; i < 50; i++ {
		left = left[:0]
		for _, p := range w.procs(t, id) {
			// A zombie (ps shows "[cat] <defunct>") is left behind too.
			if strings.HasPrefix(p, prefix) || strings.HasSuffix(p, "<defunct>") {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("processes left in the container: %q", left)
}

var goarch = runtime.GOARCH

var (
	boxMu    sync.Mutex
	boxCount = map[string]int{}
)

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// command is the chalk binary with env, not yet started.
func (w *world) command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(w.bin, args...)
	cmd.Env = env
	return cmd
}
