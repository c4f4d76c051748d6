// Package gvisor is the docker:gvisor runtime: docker running each sandbox
// under gVisor's runsc, registered as a docker runtime in daemon.json.
package gvisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/runtime"
)

// Name is the value of --runtime that selects this runtime.
const Name = "docker:gvisor"

// DaemonJSONPath is where docker reads its configuration.
const DaemonJSONPath = "/etc/docker/daemon.json"

// DefaultRunscPath is the runsc path written to daemon.json when runsc isn't
// on PATH.
const DefaultRunscPath = "/usr/local/bin/runsc"

// ReloadDocker makes docker read daemon.json again.
const ReloadDocker = "sudo systemctl reload docker"

// runTimeout bounds docker info, which hangs while the daemon is stuck.
const runTimeout = 15 * time.Second

// Fixes, exact as printed.
const (
	fixRunsc = "# install gVisor from its apt repository (other systems: https://gvisor.dev/docs/user_guide/install/):\n" +
		"curl -fsSL https://gvisor.dev/archive.key | sudo gpg --dearmor -o /usr/share/keyrings/gvisor-archive-keyring.gpg\n" +
		"echo \"deb [arch=$(dpkg --print-architecture) signed-by=/usr/share/keyrings/gvisor-archive-keyring.gpg] https://storage.googleapis.com/gvisor/releases release main\" | sudo tee /etc/apt/sources.list.d/gvisor.list >/dev/null\n" +
		"sudo apt-get update && sudo apt-get install -y runsc"
	fixDocker = "sudo apt-get install docker.io docker-buildx\n" +
		"sudo usermod -aG docker $USER\n" +
		"# then log out and log in again"
	fixDockerGroup = "sudo usermod -aG docker $USER\n" +
		"# then log out and log in again"
	fixDockerStart = "sudo systemctl start docker"
)

// Preflight checks that runsc is installed, that daemonJSONPath registers
// it as a docker runtime with RuntimeArgs, and that docker has loaded it.
// When daemon.json needs a change, the fix writes the whole file, keeping
// everything else in it. It only looks; it never changes the machine.
func Preflight(ctx context.Context, h runtime.Host, daemonJSONPath string) []runtime.Check {
	runsc, runscPath := checkRunsc(h)
	daemon := checkDaemonJSON(h, daemonJSONPath, runscPath, runsc.Status == runtime.Pass)
	return []runtime.Check{runsc, daemon, checkDockerRuntimes(ctx, h, daemon.Status == runtime.Pass)}
}

func pass(name, detail string) runtime.Check {
	return runtime.Check{Runtime: Name, Name: name, Status: runtime.Pass, Detail: detail}
}

func fail(name, detail, fix string) runtime.Check {
	return runtime.Check{Runtime: Name, Name: name, Status: runtime.Fail, Detail: detail, Fix: fix}
}

// checkRunsc looks for runsc and returns the path daemon.json should name.
func checkRunsc(h runtime.Host) (runtime.Check, string) {
	p, err := h.LookPath("runsc")
	if err != nil || !filepath.IsAbs(p) {
		return fail("runsc", "runsc is not on PATH", fixRunsc), DefaultRunscPath
	}
	return pass("runsc", p), p
}

func checkDaemonJSON(h runtime.Host, path, runscPath string, runscFound bool) runtime.Check {
	const name = "daemon.json"
	data, err := h.ReadFile(path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return fail(name, "can't read "+path+": "+runtime.ErrText(err),
			"# make it readable, then run chalk again for the file to write:\nsudo chmod 644 "+runtime.ShellQuote(path))
	}
	if !missing {
		problems, err := inspect(h, data)
		var perr *ParseError
		switch {
		case errors.As(err, &perr):
			return fail(name, path+" is not valid JSON: "+perr.Error(),
				fmt.Sprintf("# fix the JSON in %s first (line %d), then run chalk again for the file to write", path, perr.Line))
		case err != nil:
			return fail(name, path+": "+err.Error(),
				"# make "+path+" a JSON object first, then run chalk again for the file to write")
		case len(problems) == 0:
			return pass(name, path+" registers runsc with the runtimeArgs Chalk needs")
		}
		detail := path + ": " + strings.Join(problems, "; ")
		return fail(name, detail, writeFix(path, data, runscPath, runscFound, false))
	}
	return fail(name, path+" does not exist", writeFix(path, nil, runscPath, runscFound, true))
}

// inspect lists what daemon.json lacks for runsc.
func inspect(h runtime.Host, data []byte) ([]string, error) {
	_, runtimes, err := parse(data)
	if err != nil {
		return nil, err
	}
	raw, ok := runtimes["runsc"]
	if !ok {
		return []string{"runtimes has no runsc"}, nil
	}
	var entry runscEntry
	if err := json.Unmarshal(raw, &entry); err != nil {
		return []string{"runtimes.runsc is malformed: " + err.Error()}, nil
	}
	var problems []string
	switch {
	case entry.Path == "":
		problems = append(problems, "runtimes.runsc has no path")
	case !exists(h, entry.Path):
		problems = append(problems, "runtimes.runsc.path "+entry.Path+" does not exist")
	}
	if m := missingArgs(entry.RuntimeArgs); len(m) > 0 {
		problems = append(problems, "runtimes.runsc.runtimeArgs lacks "+strings.Join(m, " "))
	}
	return problems, nil
}

// exists reports whether docker would find the runtime at path: absolute
// paths as they are, bare names on PATH.
func exists(h runtime.Host, path string) bool {
	if filepath.IsAbs(path) {
		_, err := h.Stat(path)
		return err == nil
	}
	_, err := h.LookPath(path)
	return err == nil
}

// writeFix is the whole daemon.json to write, between a comment line and
// the command that reloads docker. It is plain content rather than a
// heredoc, so copying it from indented output still gives the same JSON.
func writeFix(path string, existing []byte, runscPath string, runscFound, create bool) string {
	content, err := DaemonJSON(existing, runscPath)
	if err != nil {
		// inspect parsed existing already; this is unreachable.
		return "# can't compute the file: " + err.Error()
	}
	var b strings.Builder
	if !runscFound {
		fmt.Fprintf(&b, "# install runsc first; this file expects it at %s, so if it lands elsewhere, run chalk again\n", runscPath)
	}
	if create {
		fmt.Fprintf(&b, "# create %s with exactly this content:\n", path)
	} else {
		fmt.Fprintf(&b, "# replace %s with exactly this content, which keeps your other settings:\n", path)
	}
	b.Write(content)
	b.WriteString("# then reload docker:\n")
	b.WriteString(ReloadDocker)
	return b.String()
}

func checkDockerRuntimes(ctx context.Context, h runtime.Host, daemonOK bool) runtime.Check {
	const name = "docker runtimes"
	if _, err := h.LookPath("docker"); err != nil {
		return fail(name, "docker is not on PATH", fixDocker)
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	out, err := h.Run(ctx, "docker", "info", "--format", "{{json .Runtimes}}")
	if err != nil {
		msg := runtime.FirstLine(err.Error())
		fix := "# see why docker info fails:\ndocker info"
		switch {
		case strings.Contains(msg, "Cannot connect to the Docker daemon"):
			fix = fixDockerStart
		case strings.Contains(strings.ToLower(msg), "permission denied"):
			fix = fixDockerGroup
		}
		return fail(name, "docker info failed: "+msg, fix)
	}
	var runtimes map[string]struct {
		Path        string   `json:"path"`
		RuntimeArgs []string `json:"runtimeArgs"`
	}
	if err := json.Unmarshal(out, &runtimes); err != nil {
		return fail(name, "can't read docker's runtimes: "+err.Error(),
			"# see what docker reports:\ndocker info --format '{{json .Runtimes}}'")
	}
	reload := ReloadDocker
	if !daemonOK {
		reload = "# after writing daemon.json as shown for the daemon.json check:\n" + ReloadDocker
	}
	got, ok := runtimes["runsc"]
	if !ok {
		names := make([]string, 0, len(runtimes))
		for n := range runtimes {
			names = append(names, n)
		}
		slices.Sort(names)
		return fail(name, "docker lists no runsc runtime, only "+strings.Join(names, ", ")+"; reload docker after editing daemon.json", reload)
	}
	// Recent dockers report each runtime's args; when they do, they must
	// be the current ones, or docker hasn't reloaded daemon.json.
	if got.RuntimeArgs != nil {
		if m := missingArgs(got.RuntimeArgs); len(m) > 0 {
			return fail(name, "docker's runsc runtime lacks "+strings.Join(m, " ")+": reload docker after editing daemon.json", reload)
		}
	}
	return pass(name, "docker has the runsc runtime")
}
