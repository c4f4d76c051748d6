package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/modelproxy"
	"github.com/chalk-rl/chalk/internal/testenv"
	"github.com/chalk-rl/chalk/internal/transcript"
)

var (
	buildOnce sync.Once
	agentBin  string
	buildErr  error
	buildOut  []byte
)

// TestMain removes the agent binary that the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if agentBin != "" {
		os.RemoveAll(filepath.Dir(agentBin))
	}
	os.Exit(code)
}

// agentBinary builds the agent with ../../build.sh, as the quickstart does.
func agentBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chalk-agent-test")
		if err != nil {
			buildErr = err
			return
		}
		agentBin = filepath.Join(dir, "agent")
		buildOut, buildErr = exec.Command("../../build.sh", agentBin).CombinedOutput()
	})
	require.NoError(t, buildErr, "build.sh: %s", buildOut)
	return agentBin
}

// scriptedModel serves ../../model.toml.
func scriptedModel(t *testing.T) string {
	t.Helper()
	s, err := modelproxy.LoadScript("../../model.toml")
	require.NoError(t, err)
	srv := httptest.NewServer(modelproxy.NewServer(s, "", nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

type episode struct {
	code   int
	stdout string
	stderr string
	out    string
}

// runAgent runs the agent binary in a temporary directory, as the student
// does in the sandbox, with the task files in place of /task.
func runAgent(t *testing.T, env []string, args ...string) episode {
	t.Helper()
	work, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	task, err := filepath.Abs("../../task")
	require.NoError(t, err)
	cmd := exec.Command(agentBinary(t), append([]string{"--task", filepath.Join(task, "TASK.md"), "--out", out}, args...)...)
	cmd.Dir = work
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "TASK_DIR=" + task}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return episode{code: code, stdout: stdout.String(), stderr: stderr.String(), out: out}
}

func conversation(t *testing.T, out string) []message {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "agent", "conversation.json"))
	require.NoError(t, err)
	var msgs []message
	require.NoError(t, json.Unmarshal(b, &msgs))
	return msgs
}

// grade runs the environment's grader on what the agent left.
func grade(t *testing.T, out string) string {
	t.Helper()
	task, _ := filepath.Abs("../../task")
	cmd := exec.Command("../../grade.sh")
	cmd.Env = append(os.Environ(), "TASK_DIR="+task, "OUT_DIR="+out)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	reward, err := os.ReadFile(filepath.Join(out, "reward"))
	require.NoError(t, err)
	return strings.TrimSpace(string(reward))
}

func TestAgentSolvesTheTask(t *testing.T) {
	base := scriptedModel(t)
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			args := []string{}
			if stream {
				args = append(args, "--stream")
			}
			ep := runAgent(t, []string{"CHALK_MODEL_URL=" + base}, args...)
			require.Equal(t, 0, ep.code, "stdout:\n%s\nstderr:\n%s", ep.stdout, ep.stderr)
			require.Contains(t, ep.stdout, "[turn 3] final answer after 3 turns")

			answer, err := os.ReadFile(filepath.Join(ep.out, "answer.txt"))
			require.NoError(t, err)
			require.Equal(t, "3\n", string(answer))
			final, err := os.ReadFile(filepath.Join(ep.out, "agent", "final.txt"))
			require.NoError(t, err)
			require.Contains(t, string(final), "cache and db")

			msgs := conversation(t, ep.out)
			roles := []string{}
			for _, m := range msgs {
				roles = append(roles, m.Role)
			}
			require.Equal(t, []string{"system", "user", "assistant", "tool", "assistant", "tool", "tool", "assistant"}, roles)
			// The results the model saw are what the commands printed.
			require.Equal(t, "exit status 0\n12\n3\n", *msgs[3].Content)
			require.Equal(t, "call_1_1", msgs[3].ToolCallID)
			require.Equal(t, "wrote 2 bytes to answer.txt", *msgs[5].Content)
			require.Equal(t, "exit status 0\ncache\ndb\n", *msgs[6].Content)
			require.Equal(t, "1", grade(t, ep.out))
		})
	}
}

// Through the forwarder the harness serves, eight agents in parallel
// share one scripted model, each with its own forwarder, as eight runs
// do: every call is recorded, and each run's records are the
// conversation its agent had.
func TestAgentsThroughForwarders(t *testing.T) {
	upstream := scriptedModel(t)
	agentBinary(t)
	for i := range 8 {
		stream := i%2 == 1
		t.Run(fmt.Sprintf("run%d", i+1), func(t *testing.T) {
			t.Parallel()
			agentThroughForwarder(t, upstream, stream)
		})
	}
}

func agentThroughForwarder(t *testing.T, upstream string, stream bool) {
	var mu sync.Mutex
	var calls []transcript.ModelCallInfo
	f, err := modelproxy.NewForwarder(modelproxy.ForwarderConfig{
		Upstream: upstream, ServiceTier: "flex",
		Record: func(c transcript.ModelCallInfo) { mu.Lock(); calls = append(calls, c); mu.Unlock() },
	})
	require.NoError(t, err)
	e, err := f.Listen("127.0.0.1:0")
	require.NoError(t, err)
	env := []string{}
	for k, v := range e.StudentEnv() {
		env = append(env, k+"="+v)
	}
	args := []string{}
	if stream {
		args = append(args, "--stream")
	}
	ep := runAgent(t, env, args...)
	require.NoError(t, e.Close(context.Background()))
	require.Equal(t, 0, ep.code, "stdout:\n%s\nstderr:\n%s", ep.stdout, ep.stderr)
	msgs := conversation(t, ep.out)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 3)
	assistants := []message{}
	for _, m := range msgs {
		if m.Role == "assistant" {
			assistants = append(assistants, m)
		}
	}
	for i, c := range calls {
		require.Equal(t, 200, c.Status)
		require.Equal(t, stream, c.Stream)
		require.Empty(t, c.Error)
		require.Equal(t, "flex", c.ServiceTier)
		require.Equal(t, "chalk-scripted", c.Model)
		require.Positive(t, c.PromptTokens)
		require.Positive(t, c.CompletionTokens)
		var req struct {
			Messages []message `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(c.Request, &req))
		require.Equal(t, msgs[:len(req.Messages)], req.Messages, "call %d sent the conversation so far", i+1)
		var resp struct {
			Choices []struct {
				Message message `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(c.Response, &resp))
		require.Equal(t, assistants[i], resp.Choices[0].Message, "call %d's answer is the agent's turn %d", i+1, i+1)
	}
}

func TestAgentFailures(t *testing.T) {
	base := scriptedModel(t)

	ep := runAgent(t, nil)
	require.Equal(t, exitUsage, ep.code)
	require.Contains(t, ep.stderr, "set CHALK_MODEL_URL (or OPENAI_BASE_URL)")

	ep = runAgent(t, []string{"CHALK_MODEL_URL=" + base}, "--max-turns", "2")
	require.Equal(t, exitTurnLimit, ep.code, ep.stderr)
	require.Contains(t, ep.stderr, "turn limit reached without a final answer (--max-turns 2)")
	require.Len(t, conversation(t, ep.out), 7, "the conversation so far is saved")
	require.NoFileExists(t, filepath.Join(ep.out, "agent", "final.txt"))

	// A student whose commands print something else diverges from the
	// script, and says why.
	ep = runAgent(t, []string{"CHALK_MODEL_URL=" + base, "PATH=/nonexistent"})
	require.Equal(t, exitError, ep.code)
	require.Contains(t, ep.stderr, "turn 2: the model answered 409 Conflict: the conversation diverged from the script")

	// Nothing listens: the agent tries three times, then says so.
	ep = runAgent(t, []string{"CHALK_MODEL_URL=http://127.0.0.1:1/v1"}, "--max-turns", "1")
	require.Equal(t, exitError, ep.code)
	require.Contains(t, ep.stderr, "connection refused")
}

// The environment builds with chalk build on docker, and in its image the
// agent solves the task against a scripted model on the host's loopback
// (host network), and the grader rewards it: the run chalk run makes,
// less the harness.
func TestAgentImage(t *testing.T) {
	testenv.NeedDocker(t)
	testenv.BaseImage(t)
	tmp := t.TempDir()
	envDir := filepath.Join(tmp, "agent")
	require.NoError(t, os.CopyFS(envDir, os.DirFS("../..")))
	require.NoError(t, os.RemoveAll(filepath.Join(envDir, "bin")))
	agent, err := os.ReadFile(agentBinary(t)) // what build.sh makes
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(envDir, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(envDir, "bin", "agent"), agent, 0o755))
	if img := os.Getenv(testenv.BaseImageEnv); img != "" {
		cf := filepath.Join(envDir, "Containerfile")
		b, err := os.ReadFile(cf)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cf, []byte(strings.Replace(string(b), "FROM debian:bookworm-slim", "FROM "+img, 1)), 0o644))
	}

	chalk := testenv.StaticChalk(t)
	var stderr strings.Builder
	cmd := exec.Command(chalk, "build", "--runtime", "docker", envDir)
	cmd.Stderr = &stderr
	tagOut, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	tag := strings.TrimSpace(string(tagOut))
	require.True(t, strings.HasPrefix(tag, "chalk-agent:"), tag)

	base := scriptedModel(t)
	out := filepath.Join(tmp, "out")
	require.NoError(t, os.Mkdir(out, 0o777))
	require.NoError(t, os.Chmod(out, 0o777))
	b, err := exec.Command("docker", "run", "--rm", "--network", "host", "--user", "61000:61000",
		"-e", "CHALK_MODEL_URL="+base, "-e", "TASK_DIR=/task", "-v", out+":/out",
		tag, "/env/agent", "--task", "/task/TASK.md").CombinedOutput()
	require.NoError(t, err, string(b))
	require.Contains(t, string(b), "final answer after 3 turns")
	b, err = exec.Command("docker", "run", "--rm", "-v", out+":/out", tag, "/env/grade.sh").CombinedOutput()
	require.NoError(t, err, string(b))
	reward, err := os.ReadFile(filepath.Join(out, "reward"))
	require.NoError(t, err)
	require.Equal(t, "1", strings.TrimSpace(string(reward)), string(b))
}
