package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

const systemPrompt = `You are an agent working in a Linux sandbox. Use the run tool to execute
shell commands and the write_file tool to write files into the output
directory. When the task is done, answer with a short summary and call no
tool.`

var errTurnLimit = errors.New("turn limit reached without a final answer")

// agent is one episode: the conversation so far and how to continue it.
type agent struct {
	cfg      config
	client   *client
	log      io.Writer
	messages []message
	final    string
	done     bool
}

// solve runs the loop: ask the model, run its tool calls, send back the
// results, until it answers without a tool call.
func (a *agent) solve(ctx context.Context) error {
	task, err := os.ReadFile(a.cfg.taskFile)
	if err != nil {
		return fmt.Errorf("read the task: %w", err)
	}
	if err := os.MkdirAll(a.cfg.outDir, 0o755); err != nil {
		return fmt.Errorf("make the output directory: %w", err)
	}
	a.messages = []message{
		{Role: "system", Content: str(systemPrompt)},
		{Role: "user", Content: str(string(task))},
	}
	for turn := 1; turn <= a.cfg.maxTurns; turn++ {
		reply, err := a.client.chat(ctx, a.messages)
		if err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		a.messages = append(a.messages, reply)
		if reply.Content != nil && *reply.Content != "" {
			fmt.Fprintf(a.log, "[turn %d] model: %s\n", turn, *reply.Content)
		}
		if len(reply.ToolCalls) == 0 {
			a.final, a.done = deref(reply.Content), true
			fmt.Fprintf(a.log, "[turn %d] final answer after %d turns\n", turn, turn)
			return nil
		}
		for _, tc := range reply.ToolCalls {
			fmt.Fprintf(a.log, "[turn %d] tool %s %s\n", turn, tc.Function.Name, tc.Function.Arguments)
			result := a.tool(ctx, tc)
			fmt.Fprintf(a.log, "[turn %d] result: %s\n", turn, indentResult(result))
			a.messages = append(a.messages, message{Role: "tool", ToolCallID: tc.ID, Content: str(result)})
		}
	}
	return fmt.Errorf("%w (--max-turns %d)", errTurnLimit, a.cfg.maxTurns)
}

// save writes the conversation and the final answer into OUT/agent/.
func (a *agent) save() error {
	if len(a.messages) == 0 {
		return nil
	}
	dir := filepath.Join(a.cfg.outDir, "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save the conversation: %w", err)
	}
	b, err := json.MarshalIndent(a.messages, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "conversation.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save the conversation: %w", err)
	}
	if !a.done {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "final.txt"), []byte(a.final+"\n"), 0o644); err != nil {
		return fmt.Errorf("save the final answer: %w", err)
	}
	return nil
}

func str(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// indentResult shows a tool's result in the log: its lines indented
// under the first, at most 4 KiB of it.
func indentResult(s string) string {
	const most = 4 << 10
	if len(s) > most {
		s = s[:most] + fmt.Sprintf("\n[%d more bytes]", len(s)-most)
	}
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
