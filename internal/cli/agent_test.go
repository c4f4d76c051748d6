package cli_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/modelproxy"
	"github.com/chalk-rl/chalk/internal/testenv"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// Eight runs of the agent example in parallel, against one scripted
// model: each transcript's model calls are the conversation its agent
// had, and its commands' output is what the agent fed back.
func TestAgentExampleEightInParallel(t *testing.T) {
	testenv.NeedDocker(t)
	bin := testenv.StaticChalk(t)
	root, _ := filepath.Abs("../..")
	env := filepath.Join(t.TempDir(), "agent")
	require.NoError(t, os.CopyFS(env, os.DirFS(filepath.Join(root, "examples", "agent"))))
	out, err := exec.Command(filepath.Join(root, "examples", "agent", "build.sh"), filepath.Join(env, "bin", "agent")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	script, err := modelproxy.LoadScript(filepath.Join(root, "examples", "agent", "model.toml"))
	require.NoError(t, err)
	gw, err := exec.Command("docker", "network", "inspect", "bridge", "--format", "{{(index .IPAM.Config 0).Gateway}}").Output()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", net.JoinHostPort(strings.TrimSpace(string(gw)), "0"))
	require.NoError(t, err)
	srv := &http.Server{Handler: modelproxy.NewServer(script, "", nil)}
	go srv.Serve(ln)
	defer srv.Close()

	runs := filepath.Join(t.TempDir(), "runs")
	cmd := exec.Command(bin, "run", "--runtime", "docker", "-n", "8", "--runs-dir", runs,
		"--model-proxy", "http://"+ln.Addr().String()+"/v1", env)
	cmd.Env = append(os.Environ(), "CHALK_HARNESS_BINARY="+bin)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Contains(t, string(b), "8 runs in")
	require.Contains(t, string(b), "8 ok, 0 failed")

	dirs, _ := filepath.Glob(filepath.Join(runs, "*"))
	require.Len(t, dirs, 8)
	for _, d := range dirs {
		events, err := transcript.ReadFile(filepath.Join(d, "transcript.jsonl"))
		require.NoError(t, err)
		var conv []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		}
		cb, err := os.ReadFile(filepath.Join(d, "out", "agent", "conversation.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(cb, &conv))
		var said, results []string
		for _, m := range conv {
			switch {
			case m.Role == "assistant" && m.Content != nil:
				said = append(said, *m.Content)
			case m.Role == "tool" && m.Content != nil:
				results = append(results, *m.Content)
			}
		}
		var calls []*transcript.ModelCallInfo
		var output strings.Builder
		for _, e := range events {
			switch {
			case e.Type == transcript.ModelCall:
				calls = append(calls, e.Model)
			case e.Type == transcript.Output && e.Process == "student":
				output.Write(e.Data())
			}
		}
		require.Len(t, calls, len(said), "one model call per turn the agent took")
		for i, c := range calls {
			require.Equal(t, 200, c.Status)
			var resp struct {
				Choices []struct {
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal(c.Response, &resp))
			require.Equal(t, said[i], resp.Choices[0].Message.Content, "call %d's answer is what the agent heard", i+1)
		}
		for _, r := range results {
			for _, line := range strings.Split(strings.TrimSpace(r), "\n") {
				require.Contains(t, output.String(), line, "the command's output the agent fed back is in the transcript")
			}
		}
		last := events[len(events)-1]
		require.Equal(t, transcript.StatusOK, last.Status)
	}
}
