package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// maxOutput is the most output of a command sent back to the model.
const maxOutput = 16 << 10

// tool runs one tool call and returns the text sent back to the model.
// A failing tool is reported to the model, which may try something else.
func (a *agent) tool(ctx context.Context, tc toolCall) string {
	switch tc.Function.Name {
	case "run":
		var args struct {
			Command string `json:"command"`
		}
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || args.Command == "" {
			return `error: run takes {"command": "..."}`
		}
		return a.runCommand(ctx, args.Command)
	case "write_file":
		var args struct {
			Path    string  `json:"path"`
			Content *string `json:"content"`
		}
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || args.Path == "" || args.Content == nil {
			return `error: write_file takes {"path": "...", "content": "..."}`
		}
		return a.writeFile(args.Path, *args.Content)
	}
	return fmt.Sprintf("error: there is no tool %q; the tools are run and write_file", tc.Function.Name)
}

// runCommand runs command with /bin/sh in its own process group, which is
// killed whole at the timeout. OUT_DIR names the output directory.
func (a *agent) runCommand(ctx context.Context, command string) string {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Env = append(os.Environ(), "OUT_DIR="+a.cfg.outDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var status string
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		status = fmt.Sprintf("timed out after %s", a.cfg.commandTimeout)
	case errors.As(err, &exit):
		status = fmt.Sprintf("exit status %d", exit.ExitCode())
	case err != nil:
		status = "error: " + err.Error()
	default:
		status = "exit status 0"
	}
	return status + "\n" + out.String()
}

// writeFile writes content to path inside the output directory.
func (a *agent) writeFile(path, content string) string {
	if !filepath.IsLocal(path) {
		return fmt.Sprintf("error: %q is not a relative path inside the output directory", path)
	}
	p := filepath.Join(a.cfg.outDir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "error: " + err.Error()
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(content), path)
}

// capped keeps the first maxOutput bytes written to it and counts the
// rest. It is written to by stdout and stderr at once.
type capped struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := maxOutput - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped > 0 {
		return c.buf.String() + fmt.Sprintf("\n[%d more bytes of output left out]\n", c.dropped)
	}
	return c.buf.String()
}
