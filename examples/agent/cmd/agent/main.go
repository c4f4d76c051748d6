// Command agent is the student of examples/agent: a small tool-using agent
// loop. It sends its task to an OpenAI-compatible model, runs the tool
// calls the model asks for (run: a shell command; write_file: a file in
// the output directory), sends the results back, and stops at the model's
// final answer or at the turn limit. It leaves the conversation and the
// final answer in OUT/agent/.
//
// The model's base URL is read from CHALK_MODEL_URL, else OPENAI_BASE_URL
// (both set by Chalk's harness to its model endpoint); OPENAI_API_KEY, when
// set, is sent as a bearer token. It uses the standard library only, so it
// builds into one static binary (see ../../build.sh).
//
// Exit status: 0 final answer; 1 error (the model could not be used);
// 2 bad command line; 3 turn limit reached without a final answer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit statuses.
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitTurnLimit = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is what one episode needs.
type config struct {
	baseURL        string
	apiKey         string
	model          string
	taskFile       string
	outDir         string
	maxTurns       int
	commandTimeout time.Duration
	stream         bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := config{}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.taskFile, "task", "/task/TASK.md", "file holding the task, sent as the first user message")
	fs.StringVar(&c.outDir, "out", "/out", "output directory: write_file writes here, and the agent leaves agent/ here")
	fs.StringVar(&c.model, "model", envOr("CHALK_AGENT_MODEL", "chalk-scripted"), "model name to ask for (env CHALK_AGENT_MODEL)")
	fs.IntVar(&c.maxTurns, "max-turns", 10, "most model calls before giving up")
	fs.DurationVar(&c.commandTimeout, "command-timeout", 30*time.Second, "how long one run tool call may take")
	fs.BoolVar(&c.stream, "stream", os.Getenv("CHALK_AGENT_STREAM") == "1", "ask for streamed answers (env CHALK_AGENT_STREAM=1)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	c.baseURL = envOr("CHALK_MODEL_URL", os.Getenv("OPENAI_BASE_URL"))
	if c.baseURL == "" {
		fmt.Fprintln(stderr, "agent: no model endpoint: set CHALK_MODEL_URL (or OPENAI_BASE_URL) to an OpenAI-compatible base URL such as http://127.0.0.1:8787/v1; inside a Chalk run the harness sets it")
		return exitUsage
	}
	c.apiKey = os.Getenv("OPENAI_API_KEY")
	if c.maxTurns < 1 {
		fmt.Fprintln(stderr, "agent: --max-turns must be at least 1")
		return exitUsage
	}

	a := &agent{cfg: c, client: newClient(c), log: stdout}
	err := a.solve(ctx)
	if serr := a.save(); serr != nil {
		fmt.Fprintf(stderr, "agent: %v\n", serr)
		if err == nil {
			return exitError
		}
	}
	switch {
	case errors.Is(err, errTurnLimit):
		fmt.Fprintf(stderr, "agent: %v\n", err)
		return exitTurnLimit
	case err != nil:
		fmt.Fprintf(stderr, "agent: %v\n", err)
		return exitError
	}
	return exitOK
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
