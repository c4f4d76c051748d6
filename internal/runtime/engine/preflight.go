package engine

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/runtime"
)

// BinaryCheck checks that bin is on PATH.
func BinaryCheck(runtimeName, bin, fix string) runtime.Check {
	c := runtime.Check{Runtime: runtimeName, Name: bin + " is installed"}
	path, err := exec.LookPath(bin)
	if err != nil {
		c.Status, c.Detail, c.Fix = runtime.Fail, "not found on PATH", fix
		return c
	}
	c.Status, c.Detail = runtime.Pass, path
	return c
}

// probe runs bin args with a short deadline and returns its combined
// output.
func probe(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// CommandCheck passes when bin args exits 0; detail is its first line of
// output.
func CommandCheck(ctx context.Context, runtimeName, name, fix, bin string, args ...string) runtime.Check {
	c := runtime.Check{Runtime: runtimeName, Name: name}
	out, err := probe(ctx, bin, args...)
	first, _, _ := strings.Cut(out, "\n")
	if err != nil {
		c.Status, c.Fix = runtime.Fail, fix
		c.Detail = first
		if c.Detail == "" {
			c.Detail = err.Error()
		}
		return c
	}
	c.Status, c.Detail = runtime.Pass, first
	return c
}

// DaemonCheck checks that the engine's service answers, with the fix that
// fits what the client said.
func (e *Engine) DaemonCheck(ctx context.Context, args ...string) runtime.Check {
	c := runtime.Check{Runtime: e.RuntimeName, Name: e.Bin + " daemon answers"}
	out, err := probe(ctx, e.Bin, args...)
	if err != nil {
		c.Status = runtime.Fail
		c.Detail = lastLine(out)
		if c.Detail == "" {
			c.Detail = err.Error()
		}
		c.Fix = e.daemonFix()
		if strings.Contains(out, "permission denied") {
			c.Fix = "add yourself to the " + e.Bin + " group and log in again: sudo usermod -aG " + e.Bin + " $USER"
		}
		return c
	}
	c.Status, c.Detail = runtime.Pass, "version "+lastLine(out)
	return c
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Step is one preflight check, named before it runs.
type Step struct {
	Name string
	Run  func(ctx context.Context) runtime.Check
	// ForBuild steps are left out of a preflight that asked for no build
	// checks (runtime.WithoutBuildChecks); Build runs them, and only them
	// (runtime.OnlyBuildChecks).
	ForBuild bool
}

// RunSteps runs steps in order. Once one fails, the rest are reported as
// skipped: when the client is missing, asking its daemon says nothing new.
func RunSteps(ctx context.Context, runtimeName string, steps ...Step) []runtime.Check {
	var out []runtime.Check
	failed := ""
	for _, s := range steps {
		if runtime.SkipCheck(ctx, s.ForBuild) {
			continue
		}
		if failed != "" {
			out = append(out, runtime.Check{Runtime: runtimeName, Name: s.Name, Status: runtime.Skip, Detail: "needs: " + failed})
			continue
		}
		c := s.Run(ctx)
		c.Runtime, c.Name = runtimeName, s.Name
		if c.Status == runtime.Fail {
			failed = s.Name
		}
		out = append(out, c)
	}
	return out
}
