package run_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/harness"
	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/registry"
	"github.com/chalk-rl/chalk/internal/testenv"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// These tests run real sandboxes on docker whose students attack each
// rule of their confinement, and check the outcome in the transcript.

func docker(t testing.TB) runtime.Runtime {
	t.Helper()
	testenv.NeedDocker(t)
	t.Setenv(run.HarnessEnv, testenv.StaticChalk(t))
	rt, err := registry.Lookup("docker")
	require.NoError(t, err)
	return rt
}

// environment writes an environment whose student and grader are the
// given bash scripts.
func environment(t testing.TB, hardware, student, grader string) *env.Env {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"Containerfile": "FROM " + testenv.BaseImage(t) + "\nCOPY student.sh grade.sh /env/\n",
		"chalk.toml": `name = "attack"
[student]
command = ["/bin/bash", "/env/student.sh"]
timeout = "2m"
[grader]
command = ["/bin/bash", "/env/grade.sh"]
timeout = "1m"
` + hardware,
		"student.sh": student,
		"grade.sh":   grader,
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	e, err := env.Load(dir)
	require.NoError(t, err)
	// Removed afterwards, so that test runs do not pile images up in the
	// daemon (a later run builds it again, from the build cache).
	if tag, err := run.ImageTag(e); err == nil {
		t.Cleanup(func() { _ = exec.Command("docker", "image", "rm", "-f", tag).Run() })
	}
	return e
}

type outcome struct {
	res    *run.Result
	events []transcript.Event
}

func (o outcome) output(process string) string {
	var b strings.Builder
	for _, e := range o.events {
		if e.Type == transcript.Output && e.Process == process {
			b.Write(e.Data())
		}
	}
	return b.String()
}

func (o outcome) has(typ, process string) bool {
	for _, e := range o.events {
		if e.Type == typ && (process == "" || e.Process == process) {
			return true
		}
	}
	return false
}

func (o outcome) hit(name string) *transcript.Event {
	for i, e := range o.events {
		if e.Type == transcript.LimitHit && e.Limit.Name == name {
			return &o.events[i]
		}
	}
	return nil
}

func runIt(t *testing.T, rt runtime.Runtime, e *env.Env, o run.Options) outcome {
	t.Helper()
	o.Env, o.Runtime, o.RunsDir = e, rt, t.TempDir()
	o.Log = slog.New(slog.DiscardHandler)
	o.BuildLog = io.Discard
	res, err := run.Run(context.Background(), o)
	require.NoError(t, err)
	events, err := transcript.ReadFile(res.Transcript)
	require.NoError(t, err)
	last := events[len(events)-1]
	require.Equal(t, transcript.RunFinished, last.Type)
	require.Positive(t, last.DurationMS, "run.finished says how long the run took")
	requireNoSandbox(t, res.ID)
	return outcome{res: res, events: events}
}

func requireNoSandbox(t *testing.T, id string) {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+run.LabelRun+"="+id).Output()
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(out)), "the run's sandbox was left behind")
}

func TestAttackMemory(t *testing.T) {
	rt := docker(t)
	// A second process shows that the whole student goes, not just the hog.
	e := environment(t, "[hardware]\nmemory = \"2GiB\"\n",
		`sleep 300 & /.chalk/chalk check probe memory 3000000000; echo "the hog lived"; wait`,
		`echo "grader ran"; echo 0.5 > /out/reward`)
	o := runIt(t, rt, e, run.Options{})
	hit := o.hit("memory")
	require.NotNil(t, hit, "no limit.hit for memory in %v", o.events)
	require.Equal(t, "kernel", hit.Limit.Enforcement)
	require.Equal(t, "killed", hit.Limit.Action)
	require.NotContains(t, o.output("student"), "the hog lived")
	require.Equal(t, transcript.StatusFailed, o.res.Status)
	require.Contains(t, o.res.Message, "memory limit of 1 GiB")
	require.Contains(t, o.output("grader"), "grader ran", "the harness lived on and ran the grader")
	require.NotNil(t, o.res.Reward)
	require.True(t, o.has(transcript.OutCopied, ""))
}

func TestAttackForkBomb(t *testing.T) {
	rt := docker(t)
	e := environment(t, "",
		`bomb() { bomb | bomb & }; ( bomb ) 2>/dev/null & sleep 3; echo "student still here"`,
		`echo "grader ran"; ps -e --no-headers 2>/dev/null | wc -l > /out/procs || ls /proc | grep -c '^[0-9]' > /out/procs`)
	o := runIt(t, rt, e, run.Options{})
	hit := o.hit("processes")
	require.NotNil(t, hit, "no limit.hit for processes")
	require.Equal(t, "kernel", hit.Limit.Enforcement)
	require.Contains(t, o.output("grader"), "grader ran")
	procs, err := os.ReadFile(filepath.Join(o.res.Out, "procs"))
	require.NoError(t, err)
	// The grader sees the harness and itself, not what the bomb left.
	require.Less(t, atoi(t, string(procs)), 10, "the bomb's processes outlived the student")
}

func TestAttackDisk(t *testing.T) {
	rt := docker(t)
	e := environment(t, "[hardware]\ndisk = \"64MiB\"\n",
		`echo kept > /out/kept.txt
dd if=/dev/zero of=/home/student/fill bs=1M count=256 2>&1
dd if=/dev/zero of=/tmp/fill bs=1M count=256 2>&1
echo done`,
		`echo 1 > /out/reward`)
	o := runIt(t, rt, e, run.Options{})
	out := o.output("student")
	require.Contains(t, out, "No space left on device")
	require.Contains(t, out, "done")
	hit := o.hit("disk")
	require.NotNil(t, hit, "no limit.hit for disk")
	require.Equal(t, "kernel", hit.Limit.Enforcement)
	kept, err := os.ReadFile(filepath.Join(o.res.Out, "kept.txt"))
	require.NoError(t, err, "/out was not copied back")
	require.Equal(t, "kept\n", string(kept))
	require.NotNil(t, o.res.Reward)
	_, err = os.Stat(filepath.Join(o.res.Dir, ".sandbox"))
	require.ErrorIs(t, err, os.ErrNotExist, "the disk image and the private directory are removed")
}

func atoi(t *testing.T, s string) int {
	var n int
	_, err := fmt.Sscan(strings.TrimSpace(s), &n)
	require.NoError(t, err)
	return n
}

// testNetwork makes a docker network whose bridge also holds the cloud
// metadata address and a private address, so that every address the
// student attacks answers on this machine: a broken firewall would show
// as a connection, and still send nothing out. Masquerading is off.
type testNetwork struct {
	name, bridge string
	gateway      string
	metadata     string
	private      string
	public       string // from TEST-NET-3, reserved for documentation: never routed anywhere
}

func newTestNetwork(t *testing.T) testNetwork {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	n := testNetwork{
		name: "chalk-test-" + id, bridge: "chk" + id,
		gateway: fmt.Sprintf("10.213.%d.1", int(b[0])%250+1), metadata: "169.254.169.254",
		private: fmt.Sprintf("192.168.213.%d", int(b[1])%250+1),
		public:  fmt.Sprintf("203.0.113.%d", int(b[2])%250+1),
	}
	subnet := strings.TrimSuffix(n.gateway, ".1") + ".0/24"
	out, err := exec.Command("docker", "network", "create", "--subnet", subnet, "--gateway", n.gateway,
		"-o", "com.docker.network.bridge.name="+n.bridge,
		"-o", "com.docker.network.bridge.enable_ip_masquerade=false", n.name).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command("docker", "network", "rm", n.name).Run() })
	for _, a := range []string{n.metadata, n.private, n.public} {
		out, err := exec.Command("ip", "addr", "add", a+"/32", "dev", n.bridge).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	return n
}

// hostAddress is an IPv4 address of this host outside docker's bridges.
func hostAddress() string {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 ||
			strings.HasPrefix(i.Name, "docker") || strings.HasPrefix(i.Name, "br-") ||
			strings.HasPrefix(i.Name, "veth") || strings.HasPrefix(i.Name, "chk") {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
				return ip.IP.String()
			}
		}
	}
	return ""
}

func TestAttackNetworkAndHarness(t *testing.T) {
	rt := docker(t)
	tn := newTestNetwork(t)
	// One listener on every address of this host: the targets.
	port := answerEverywhere(t)
	// The model proxy, on the test network's gateway.
	proxy := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	})}
	pl, err := net.Listen("tcp", tn.gateway+":0")
	require.NoError(t, err)
	go proxy.Serve(pl)
	defer proxy.Close()
	proxyAddr := pl.Addr().String()

	targets := map[string]string{
		"metadata": fmt.Sprintf("%s:%d", tn.metadata, port),
		"private":  fmt.Sprintf("%s:%d", tn.private, port),
		"gateway":  fmt.Sprintf("%s:%d", tn.gateway, port),
		"proxy":    proxyAddr,
	}
	if h := hostAddress(); h != "" {
		targets["host"] = fmt.Sprintf("%s:%d", h, port)
	} else {
		t.Log("this host has no address outside docker's bridges; the host-address attack is left out")
	}
	probes := `p() { if /.chalk/chalk check probe "$2" "$3" > /tmp/p.$$ 2>&1; then echo "$1: allowed"; else echo "$1: refused: $(cat /tmp/p.$$)"; fi; }
`
	var attack strings.Builder
	for name, addr := range targets {
		fmt.Fprintf(&attack, "p %s connect %s\n", name, addr)
	}
	student := probes + attack.String() + `
p harness-loopback connect 127.0.0.1:` + fmt.Sprint(harness.EventsPort) + `
p harness-address connect "$(hostname -i | cut -d' ' -f1):` + fmt.Sprint(harness.EventsPort) + `"
p signal-harness signal 1
p ptrace-harness ptrace 1
p harness-environ read /proc/1/environ
p run-config read /.chalk/run/config.json
p userns unshare
hp=${CHALK_MODEL_URL#http://}; hp=${hp%%/*}
body='{"model":"m","messages":[{"role":"user","content":"hi"}]}'
exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}"
printf 'POST /v1/chat/completions HTTP/1.0\r\nHost: model\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' "${#body}" "$body" >&3
echo "model: $(head -1 <&3)"
`
	// The grader is root: nothing filters it, so it shows each target
	// answers.
	grader := probes + attack.String() + "[ -e /.chalk/run/config.json ] && echo config-present || echo config-gone\n"
	e := environment(t, "", student, grader)
	o := runIt(t, rt, e, run.Options{
		ExtraArgs: []string{"--network", tn.name},
		Model:     &harness.ModelConfig{URL: "http://" + proxyAddr + "/v1"},
	})
	out, gout := o.output("student"), o.output("grader")
	t.Logf("student:\n%s\ngrader:\n%s", out, gout)
	for name := range targets {
		require.Contains(t, gout, name+": allowed", "the target %s does not answer root, so the student's refusal proves nothing", name)
		require.Contains(t, out, name+": refused: refused: dial tcp "+targets[name]+": connect: no route to host")
	}
	for _, name := range []string{"harness-loopback", "harness-address"} {
		require.Regexp(t, name+`: refused: refused: dial tcp [0-9.]+:7070: connect: no route to host`, out)
	}
	require.Contains(t, out, "signal-harness: refused: refused: operation not permitted")
	require.Contains(t, out, "ptrace-harness: refused: refused: operation not permitted")
	require.Contains(t, out, "harness-environ: refused: refused: open /proc/1/environ: permission denied")
	require.Contains(t, out, "run-config: refused: refused: open /.chalk/run/config.json: permission denied")
	require.Contains(t, out, "userns: refused: refused: fork/exec /proc/self/exe: operation not permitted")
	require.Contains(t, out, "model: HTTP/1.0 200 OK", "the student reaches the model proxy through the harness")
	require.Contains(t, gout, "config-gone", "the harness removes the run's config, and the key in it, once read")
	var call *transcript.ModelCallInfo
	for _, e := range o.events {
		if e.Type == transcript.ModelCall {
			call = e.Model
		}
	}
	require.NotNil(t, call, "the model call is in the transcript")
	require.Equal(t, 200, call.Status)
	require.Equal(t, 3, call.PromptTokens)
}

// checkConfinement runs chalk check confinement --json in a sandbox
// started with caps and devices, on the test network.
func checkConfinement(t *testing.T, tn testNetwork, caps, devices []string) (int, map[string]any) {
	t.Helper()
	args := []string{"run", "--rm", "--network", tn.name, "-v", testenv.StaticChalk(t) + ":/.chalk/chalk:ro"}
	for _, c := range caps {
		args = append(args, "--cap-add", c)
	}
	for _, d := range devices {
		args = append(args, "--device-cgroup-rule", d)
	}
	args = append(args, testenv.BaseImage(t), "/.chalk/chalk", "check", "confinement", "--json")
	cmd := exec.Command("docker", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	var rep map[string]any
	require.NoError(t, json.Unmarshal(out, &rep), "stdout %s stderr %s", out, stderr.String())
	return cmd.ProcessState.ExitCode(), rep
}

func checks(rep map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range rep["checks"].([]any) {
		m := c.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

func TestCheckConfinementInSandbox(t *testing.T) {
	docker(t)
	tn := newTestNetwork(t)
	code, rep := checkConfinement(t, tn, run.HarnessCaps, run.HarnessDevices)
	require.Equal(t, 0, code, "%v", rep)
	require.Equal(t, true, rep["ok"])
	require.Empty(t, rep["left_behind"])
	cs := checks(rep)
	for _, name := range []string{"identity", "memory", "processes", "disk", "firewall", "reach the cloud metadata address",
		"reach the harness's port", "reach the host (gateway " + tn.gateway + ")", "reach loopback", "student session",
		"signal the harness", "ptrace the harness", "read the harness's environment", "read the run's config", "make a user namespace"} {
		require.Contains(t, cs, name)
		require.Equal(t, "pass", cs[name]["status"], "%s: %v", name, cs[name])
	}
	for _, name := range []string{"memory", "processes", "disk", "firewall"} {
		require.Equal(t, "kernel", cs[name]["enforcement"], name)
	}
	require.Equal(t, "67108864 bytes", cs["memory"]["configured"])
	require.Equal(t, float64(3<<30), rep["student_memory_bytes"])
}

func TestCheckConfinementWithoutNetAdmin(t *testing.T) {
	docker(t)
	tn := newTestNetwork(t)
	code, rep := checkConfinement(t, tn, []string{"SYS_ADMIN"}, run.HarnessDevices)
	require.Equal(t, 1, code)
	require.Equal(t, false, rep["ok"])
	fw := checks(rep)["firewall"]
	require.Equal(t, "fail", fw["status"])
	require.Equal(t, "none", fw["enforcement"])
	require.Contains(t, fw["reason"], "CAP_NET_ADMIN")
	require.Empty(t, rep["left_behind"])
}

func TestCheckConfinementWithoutPrivileges(t *testing.T) {
	docker(t)
	tn := newTestNetwork(t)
	code, rep := checkConfinement(t, tn, nil, nil)
	require.Equal(t, 1, code)
	cs := checks(rep)
	// The watchdog stands in for the kernel, and says why; the firewall
	// has no stand-in.
	for _, name := range []string{"memory", "processes", "disk"} {
		require.Equal(t, "watchdog", cs[name]["enforcement"], name)
		require.Equal(t, "pass", cs[name]["status"], "%s: %v", name, cs[name])
		require.NotEmpty(t, cs[name]["reason"])
	}
	require.Equal(t, "fail", cs["firewall"]["status"])
}

// Each network policy, attacked: the same targets, answered on this
// machine, reached or refused as docs/confinement.md says.
func TestNetworkPolicies(t *testing.T) {
	rt := docker(t)
	tn := newTestNetwork(t)
	port := answerEverywhere(t)
	student := fmt.Sprintf(`p() { if /.chalk/chalk check probe connect "$2" > /tmp/p.$$ 2>&1; then echo "$1: allowed"; else echo "$1: refused"; fi; }
p metadata %s:%d
p private %s:%d
p public %s:%d
p gateway %s:%d
`, tn.metadata, port, tn.private, port, tn.public, port, tn.gateway, port)
	e := environment(t, "", student, "true")
	for _, tc := range []struct {
		policy  string
		allowed []string
	}{
		{"proxy", nil},
		{"none", nil},
		{"internal", []string{"private"}},
		{"public", []string{"public"}},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			o := runIt(t, rt, e, run.Options{Network: tc.policy, ExtraArgs: []string{"--network", tn.name}})
			out := o.output("student")
			for _, name := range []string{"metadata", "private", "public", "gateway"} {
				want := "refused"
				if slices.Contains(tc.allowed, name) {
					want = "allowed"
				}
				require.Contains(t, out, name+": "+want, "policy %s:\n%s", tc.policy, out)
			}
		})
	}
}

// answerEverywhere listens on every address of this machine, accepting
// and closing each connection: the targets the student attacks. It
// returns the port.
func answerEverywhere(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
