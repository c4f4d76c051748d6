package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/runtime"
)

// Version is the plugin protocol version Chalk speaks: every request
// carries it, and every answer must name it.
const Version = 1

// Limits on what a plugin may print.
const (
	maxStdout = 1 << 20
	maxStderr = 8 << 10
	// waitDelay is how long a plugin's own children may hold its output
	// open after it was killed.
	waitDelay = 2 * time.Second
)

// call runs c with req as JSON on stdin and decodes its answer into
// resp, refusing unknown fields. Every failure names the plugin, says
// what it printed and how to fix it.
func (p *Plugins) call(ctx context.Context, c *Command, req, resp any) ([]byte, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), fmt.Sprintf("CHALK_PLUGIN_PROTOCOL=%d", Version), "CHALK_PLUGIN="+c.Name)
	stdout := &capped{max: maxStdout}
	stderr := &tail{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	ownGroup(cmd)
	cmd.WaitDelay = waitDelay

	byHand := fmt.Sprintf("run it by hand to see what it does: printf %%s %s | %s", runtime.ShellQuote(string(in)), runtime.ShellJoin(c.Argv))
	err = cmd.Run()
	printed := func() string {
		var b strings.Builder
		if s := strings.TrimSpace(string(stdout.Bytes())); s != "" {
			fmt.Fprintf(&b, "\nstdout: %s", excerpt(s))
		}
		if s := strings.TrimSpace(stderr.String()); s != "" {
			fmt.Fprintf(&b, "\nstderr: %s", s)
		}
		return b.String()
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, hint.Newf(fmt.Sprintf("make it answer sooner, or give it longer with timeout = \"%s\" under [plugins] in %s", 2*timeout, c.Config),
			"%s did not answer within %s%s", c, timeout, printed())
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		return nil, hint.Newf(fmt.Sprintf("create it, or fix %s in %s", c.Name, c.Config), "%s: %s does not exist", c, c.Program())
	case errors.Is(err, os.ErrPermission):
		return nil, hint.Newf("make it executable: chmod +x "+c.Program(), "%s: %s is not executable", c, c.Program())
	case errors.Is(err, syscall.ENOEXEC):
		return nil, hint.Newf("start the script with a #! line, e.g. #!/bin/sh", "%s: %s is not a program the system can run", c, c.Program())
	case errors.As(err, &exit):
		how := fmt.Sprintf("exited with status %d", exit.ExitCode())
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			how = fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
		}
		return nil, hint.Newf(byHand, "%s %s%s", c, how, printed())
	case err != nil && stdout.over:
		return nil, hint.Newf("print one JSON object, under 1 MiB", "%s printed more than 1 MiB", c)
	case err != nil:
		return nil, hint.Wrap(fmt.Errorf("%s: %w%s", c, err, printed()), byHand)
	case stdout.over:
		return nil, hint.Newf("print one JSON object, under 1 MiB", "%s printed more than 1 MiB", c)
	}

	out := bytes.TrimSpace(stdout.Bytes())
	fix := "print exactly one JSON object on stdout, as docs/plugins.md describes, and anything else on stderr; " + byHand
	if len(out) == 0 {
		return nil, hint.Newf(fix, "%s printed nothing on stdout%s", c, printed())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(resp); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, hint.Newf(fix, "%s printed something that is not JSON (%v)%s", c, err, printed())
		case errors.As(err, &typ):
			field := typ.Field
			if field == "" {
				return nil, hint.Newf(fix, "%s printed %s, not a JSON object%s", c, typ.Value, printed())
			}
			return nil, hint.Newf(fix, "%s answered with %s for %q, which must be %s%s", c, typ.Value, field, kindOf(typ.Type.String()), printed())
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return nil, hint.Newf(fmt.Sprintf("remove it or fix its spelling; the fields of a %s answer are %s", c.Name, fieldsOf(c.Name)),
				"%s answered with an unknown field %s%s", c, strings.TrimPrefix(err.Error(), "json: unknown field "), printed())
		}
		return nil, hint.Newf(fix, "%s printed something that is not a JSON object (%v)%s", c, err, printed())
	}
	if dec.More() {
		return nil, hint.Newf(fix, "%s printed more than one JSON value%s", c, printed())
	}
	return out, nil
}

// checkVersion checks the version an answer names.
func checkVersion(c *Command, v *int, out string) error {
	switch {
	case v == nil:
		return hint.Newf(fmt.Sprintf(`add "version": %d to the answer`, Version),
			"%s answered without a \"version\"\nstdout: %s", c, excerpt(out))
	case *v != Version:
		return hint.Newf(fmt.Sprintf(`answer with "version": %d, the protocol in docs/plugins.md, or use a chalk that speaks version %d`, Version, *v),
			"%s speaks plugin protocol version %d; this chalk speaks version %d", c, *v, Version)
	}
	return nil
}

func fieldsOf(name string) string {
	if name == HardwareLimits {
		return "version, cpus, memory, disk, devices (each: kind, count, passthrough)"
	}
	return "version, args"
}

func kindOf(goType string) string {
	switch {
	case strings.Contains(goType, "float"), strings.Contains(goType, "int"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.HasPrefix(goType, "[]string"):
		return "an array of strings"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.Contains(goType, "string"):
		return "a string"
	}
	return "an object"
}

func excerpt(s string) string {
	const n = 500
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// capped keeps up to max bytes and notes that more came.
type capped struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); len(p) > room {
		c.over = true
		c.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// tail keeps the last max bytes written.
type tail struct {
	b   []byte
	max int
	cut bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tail) String() string {
	if t.cut {
		return "…" + string(t.b)
	}
	return string(t.b)
}

var _ io.Writer = (*tail)(nil)
