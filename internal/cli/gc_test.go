package cli_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/testenv"
)

// A chalk killed with SIGKILL mid-run leaves its sandbox; chalk gc removes
// it, and leaves alone the sandboxes of a live owner, of another host, of
// a run kept with --keep-containers and those without an owner label;
// --dry-run removes nothing. The next chalk build cleans up on its own.
func TestGCRemovesSandboxesOfKilledChalk(t *testing.T) {
	testenv.NeedDocker(t)
	bin := testenv.StaticChalk(t)
	img := testenv.BaseImage(t)
	suffix := randomHex(t)
	name, keptName := "gc-"+suffix, "gc-kept-"+suffix
	t.Cleanup(func() { removeByEnv(name, keptName) })
	dir := t.TempDir()
	envDir := writeEnv(t, filepath.Join(dir, "a"), `name = "`+name+`"
[student]
command = ["/bin/sh", "-c", "echo working; sleep 300"]
`)
	keptDir := writeEnv(t, filepath.Join(dir, "b"), `name = "`+keptName+`"
[student]
command = ["true"]
`)
	chalk := func(cache string, args ...string) *exec.Cmd {
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "CHALK_HARNESS_BINARY="+bin, "XDG_CACHE_HOME="+cache)
		return c
	}
	runs := filepath.Join(dir, "runs")
	cache := t.TempDir()

	killed := killMidRun(t, chalk(cache, "run", "--runtime", "docker", "--runs-dir", runs, envDir), name)
	out, err := chalk(cache, "run", "--runtime", "docker", "--runs-dir", runs, "--keep-containers", keptDir).CombinedOutput()
	require.NoError(t, err, string(out))
	keptBoxes := keys(sandboxesOf(t, keptName))
	require.Len(t, keptBoxes, 1, "--keep-containers leaves the sandbox")
	kept := keptBoxes[0]

	host, err := os.Hostname()
	require.NoError(t, err)
	live := name + "-live"
	dockerCreate(t, img, live, run.LabelRun+"=live", run.LabelEnv+"="+name, run.LabelOwner+"="+run.FormatOwner(host, os.Getpid()))
	elsewhere := name + "-elsewhere"
	dockerCreate(t, img, elsewhere, run.LabelRun+"=elsewhere", run.LabelEnv+"="+name, run.LabelOwner+"=elsewhere-"+suffix+"/1/1")
	unowned := name + "-unowned"
	dockerCreate(t, img, unowned, run.LabelRun+"=unowned", run.LabelEnv+"="+name)
	all := []string{killed, live, elsewhere, unowned}
	require.ElementsMatch(t, all, keys(sandboxesOf(t, name)))

	out, err = chalk(cache, "gc", "--runtime", "docker", "--dry-run").Output()
	require.NoError(t, err)
	require.Regexp(t, `(?m)^would remove +docker +`+killed+` \(run [0-9a-f]{8}, owner `+host+`/[0-9]+/[0-9]+\): its chalk \(pid [0-9]+\) is no longer running$`, string(out))
	require.ElementsMatch(t, all, keys(sandboxesOf(t, name)), "--dry-run removes nothing")
	require.Len(t, sandboxesOf(t, keptName), 1)

	out, err = chalk(cache, "gc", "--runtime", "docker", "--json").Output()
	require.NoError(t, err, string(out))
	var report struct {
		Sandboxes []run.Leftover
		Errors    []string
	}
	require.NoError(t, json.Unmarshal(out, &report), string(out))
	require.Empty(t, report.Errors)
	got := map[string]run.Leftover{}
	for _, l := range report.Sandboxes {
		got[l.Name] = l
	}
	require.Equal(t, run.Removed, got[killed].Action)
	require.Equal(t, name, got[killed].Environment)
	require.Equal(t, run.Left, got[live].Action)
	require.Contains(t, got[live].Why, "still running")
	require.Equal(t, run.Left, got[elsewhere].Action)
	require.Contains(t, got[elsewhere].Why, "another host (elsewhere-"+suffix+")")
	require.Equal(t, run.Left, got[kept].Action)
	require.Contains(t, got[kept].Why, "kept on purpose")
	require.NotContains(t, got, unowned, "a sandbox without an owner label is not chalk gc's")
	require.ElementsMatch(t, []string{live, elsewhere, unowned}, keys(sandboxesOf(t, name)))
	require.Len(t, sandboxesOf(t, keptName), 1)

	// The next chalk build cleans up before it builds.
	killed = killMidRun(t, chalk(cache, "run", "--runtime", "docker", "--runs-dir", runs, envDir), name)
	require.Contains(t, keys(sandboxesOf(t, name)), killed)
	for _, args := range [][]string{{"version"}, {"gc", "--help"}, {"doctor", "--runtime", "nerdctl"}} {
		other := t.TempDir()
		_ = chalk(other, args...).Run()
		require.NoFileExists(t, filepath.Join(other, "chalk", "gc-swept"), "chalk %s does not clean up", args[0])
	}
	require.Contains(t, keys(sandboxesOf(t, name)), killed)
	buildCache := t.TempDir()
	build := chalk(buildCache, "build", "--runtime", "docker", envDir)
	var stderr strings.Builder
	build.Stderr = &stderr
	require.NoError(t, build.Run(), stderr.String())
	require.Regexp(t, `removed [0-9]+ sandbox(es)? left by chalk processes that died`, stderr.String())
	require.FileExists(t, filepath.Join(buildCache, "chalk", "gc-swept"))
	require.ElementsMatch(t, []string{live, elsewhere, unowned}, keys(sandboxesOf(t, name)))
}

// killMidRun starts cmd, a chalk run whose student prints "working" and
// sleeps, kills chalk with SIGKILL once the student works, and returns the
// name of the sandbox it left, which names chalk's pid as its owner.
func killMidRun(t *testing.T, cmd *exec.Cmd, envName string) string {
	t.Helper()
	before := sandboxesOf(t, envName)
	startUntilWorking(t, cmd)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	var left []string
	for n, owner := range sandboxesOf(t, envName) {
		if _, ok := before[n]; !ok {
			left = append(left, n)
			o, err := run.ParseOwner(owner)
			require.NoError(t, err)
			require.Equal(t, cmd.Process.Pid, o.PID, "the owner label names the chalk that was killed")
		}
	}
	require.Len(t, left, 1, "a chalk killed with SIGKILL leaves its sandbox")
	return left[0]
}

// sandboxesOf returns the names of the containers labelled with the
// environment name, and their owner labels.
func sandboxesOf(t *testing.T, name string) map[string]string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "--all", "--filter", "label="+run.LabelEnv+"="+name,
		"--format", `{{.Names}}	{{.Label "`+run.LabelOwner+`"}}`).Output()
	require.NoError(t, err)
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if n, owner, ok := strings.Cut(line, "\t"); ok || n != "" {
			m[n] = owner
		}
	}
	return m
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func dockerCreate(t *testing.T, img, name string, labels ...string) {
	t.Helper()
	args := []string{"create", "--name", name}
	for _, l := range labels {
		args = append(args, "--label", l)
	}
	out, err := exec.Command("docker", append(args, img, "true")...).CombinedOutput()
	require.NoError(t, err, string(out))
}

// removeByEnv removes the containers and images this test made, found by
// their environment label.
func removeByEnv(names ...string) {
	for _, n := range names {
		for _, kind := range [][]string{{"ps", "--all"}, {"images"}} {
			out, _ := exec.Command("docker", append(kind, "--quiet", "--filter", "label="+run.LabelEnv+"="+n)...).Output()
			ids := strings.Fields(string(out))
			if len(ids) == 0 {
				continue
			}
			rm := []string{"rm", "--force"}
			if kind[0] == "images" {
				rm = []string{"image", "rm", "--force"}
			}
			_ = exec.Command("docker", append(rm, ids...)...).Run()
		}
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
