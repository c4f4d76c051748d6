package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testAgent(t *testing.T, timeout time.Duration) *agent {
	return &agent{cfg: config{outDir: t.TempDir(), commandTimeout: timeout}}
}

func call(name, args string) toolCall {
	return toolCall{ID: "c1", Type: "function", Function: function{Name: name, Arguments: args}}
}

func TestRunTool(t *testing.T) {
	a := testAgent(t, 10*time.Second)
	ctx := context.Background()
	require.Equal(t, "exit status 0\nhi\n", a.tool(ctx, call("run", `{"command":"echo hi"}`)))
	require.Equal(t, "exit status 3\noops\n", a.tool(ctx, call("run", `{"command":"echo oops >&2; exit 3"}`)))
	require.Equal(t, "exit status 0\n"+a.cfg.outDir+"\n", a.tool(ctx, call("run", `{"command":"echo $OUT_DIR"}`)))
	require.Contains(t, a.tool(ctx, call("run", `{"cmd":"ls"}`)), `error: run takes {"command": "..."}`)

	// Output past 16 KiB is left out, and says how much.
	got := a.tool(ctx, call("run", `{"command":"head -c 20000 /dev/zero | tr '\\0' x"}`))
	require.Len(t, strings.Split(got, "\n")[1], maxOutput)
	require.Contains(t, got, "[3616 more bytes of output left out]")
}

// At the timeout the whole process group goes, children included, and
// the call returns at once rather than when they would have ended.
func TestRunToolTimeout(t *testing.T) {
	a := testAgent(t, 300*time.Millisecond)
	pidFile := filepath.Join(a.cfg.outDir, "pid")
	start := time.Now()
	got := a.tool(context.Background(), call("run", `{"command":"sleep 30 & echo $! > `+pidFile+`; echo started; wait"}`))
	require.Less(t, time.Since(start), 10*time.Second, "the tool call came back before the children would have ended")
	require.Equal(t, "timed out after 300ms\nstarted\n", got)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid := strings.TrimSpace(string(b))
	require.Eventually(t, func() bool {
		_, err := os.Stat("/proc/" + pid)
		if err != nil {
			return true
		}
		st, _ := os.ReadFile("/proc/" + pid + "/stat")
		return strings.Contains(string(st), ") Z ") // killed, not yet reaped
	}, 5*time.Second, 50*time.Millisecond, "the background sleep was killed")
}

func TestWriteFileTool(t *testing.T) {
	a := testAgent(t, time.Second)
	ctx := context.Background()
	require.Equal(t, "wrote 5 bytes to notes/a.txt", a.tool(ctx, call("write_file", `{"path":"notes/a.txt","content":"hello"}`)))
	b, err := os.ReadFile(filepath.Join(a.cfg.outDir, "notes", "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
	require.Equal(t, "wrote 0 bytes to empty", a.tool(ctx, call("write_file", `{"path":"empty","content":""}`)))

	for _, p := range []string{"../escape", "/etc/passwd", "a/../../b"} {
		require.Contains(t, a.tool(ctx, call("write_file", `{"path":"`+p+`","content":"x"}`)), "is not a relative path inside the output directory", p)
	}
	require.Contains(t, a.tool(ctx, call("write_file", `{"path":"x"}`)), "write_file takes")
	require.Equal(t, `error: there is no tool "browse"; the tools are run and write_file`, a.tool(ctx, call("browse", `{}`)))
}
