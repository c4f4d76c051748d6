// Package plugin runs Chalk's plugins: external programs, named in Chalk's
// config file, that answer one JSON request on stdin with one JSON object
// on stdout. hardware_limits maps an environment's hardware name to CPUs,
// memory, a disk budget and devices; container_run_args adds engine flags,
// such as device flags, to the sandbox of a container runtime. Every
// answer is checked before any sandbox starts. docs/plugins.md describes
// the protocol.
package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/chalk-rl/chalk/internal/config"
	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/hint"
)

// Plugin names: the keys of the [plugins] table.
const (
	HardwareLimits   = "hardware_limits"
	ContainerRunArgs = "container_run_args"
)

// DefaultTimeout bounds each plugin call unless [plugins] timeout says
// otherwise.
const DefaultTimeout = 30 * time.Second

// Command is a configured plugin: what to run and where it was named.
type Command struct {
	Name   string   // hardware_limits or container_run_args
	Argv   []string // the program, resolved to a path, and its arguments
	Dir    string   // the config file's directory: the plugin's working directory
	Config string   // the config file that names it
}

// Program is the plugin's program.
func (c *Command) Program() string { return c.Argv[0] }

func (c *Command) String() string {
	return fmt.Sprintf("plugin %s (%s)", c.Name, strings.Join(c.Argv, " "))
}

// Plugins are the plugins the config names. A nil *Plugins, or one with
// no plugin set, leaves the hardware as chalk.toml says and adds no flags.
type Plugins struct {
	HardwareLimits   *Command
	ContainerRunArgs *Command
	Timeout          time.Duration
	// Configs are the config files read, project first.
	Configs []string
}

// Load reads the [plugins] table of the config files that apply in dir
// (config.Files: the nearest .chalk/config.toml at or above dir, then the
// user's) and checks that each plugin it names can be run. A key
// in the project's file wins over the same key in the user's. Other tables
// of the files are left to their own readers.
func Load(dir string) (*Plugins, error) {
	paths, err := config.Files(dir)
	if err != nil {
		return nil, err
	}
	p := &Plugins{Timeout: DefaultTimeout}
	// The user's file first, so that the project's keys replace its keys.
	for i := len(paths) - 1; i >= 0; i-- {
		c, err := readConfig(paths[i])
		if err != nil {
			return nil, err
		}
		p.Configs = append([]string{paths[i]}, p.Configs...)
		if c.hardware != nil {
			p.HardwareLimits = c.hardware
		}
		if c.runArgs != nil {
			p.ContainerRunArgs = c.runArgs
		}
		if c.timeout != 0 {
			p.Timeout = c.timeout
		}
	}
	return p, nil
}

type fileConfig struct {
	hardware, runArgs *Command
	timeout           time.Duration
}

var knownKeys = []string{HardwareLimits, ContainerRunArgs, "timeout"}

// readConfig decodes the [plugins] table of the file at path.
func readConfig(path string) (*fileConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, hint.Wrap(err, "check that "+path+" is a readable file")
	}
	var doc struct {
		Plugins map[string]any `toml:"plugins"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		fix := "fix the TOML syntax at that position; the format is described at https://toml.io"
		if strings.Contains(err.Error(), "cannot decode") {
			fix = "write [plugins] as a table, e.g.\n\n    [plugins]\n    hardware_limits = \"plugins/hardware.sh\""
		}
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, hint.Newf(fix, "%s:%d:%d: %s", path, line, col, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return nil, hint.Newf(fix, "%s: %s", path, strings.TrimPrefix(err.Error(), "toml: "))
	}
	c := &fileConfig{}
	keys := make([]string, 0, len(doc.Plugins))
	for k := range doc.Plugins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dir := filepath.Dir(path)
	for _, k := range keys {
		v := doc.Plugins[k]
		switch k {
		case HardwareLimits, ContainerRunArgs:
			cmd, err := command(path, dir, k, v)
			if err != nil {
				return nil, err
			}
			if k == HardwareLimits {
				c.hardware = cmd
			} else {
				c.runArgs = cmd
			}
		case "timeout":
			s, ok := v.(string)
			d, err := time.ParseDuration(s)
			if !ok || err != nil || d <= 0 {
				return nil, hint.Newf(`write a duration above zero in quotes, e.g. timeout = "30s"`,
					"%s: [plugins] timeout %s is not a duration", path, show(v))
			}
			c.timeout = d
		default:
			msg := fmt.Sprintf("%s: [plugins] has an unknown key %q", path, k)
			if s := env.Closest(k, knownKeys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, hint.New(msg, "the keys of [plugins] are "+strings.Join(knownKeys, ", ")+"; see docs/plugins.md")
		}
	}
	return c, nil
}

// command reads a plugin's value, a program or an array of a program and
// its arguments, and checks that the program can be run.
func command(path, dir, key string, v any) (*Command, error) {
	example := fmt.Sprintf(`%s = "plugins/%s.sh" or %s = ["python3", "plugins/%s.py"]`, key, key, key, key)
	var argv []string
	switch v := v.(type) {
	case string:
		argv = []string{v}
	case []any:
		for _, a := range v {
			s, ok := a.(string)
			if !ok {
				return nil, hint.Newf("write the program and its arguments as strings, e.g. "+example,
					"%s: [plugins] %s: %s in the array is not a string", path, key, show(a))
			}
			argv = append(argv, s)
		}
	default:
		return nil, hint.Newf("name the program, e.g. "+example, "%s: [plugins] %s must be a string or an array of strings, not %s", path, key, show(v))
	}
	if len(argv) == 0 || strings.TrimSpace(argv[0]) == "" {
		return nil, hint.Newf("name the program, e.g. "+example, "%s: [plugins] %s is empty", path, key)
	}
	c := &Command{Name: key, Argv: argv, Dir: dir, Config: path}
	prog := argv[0]
	spaceHint := ""
	if len(argv) == 1 && strings.ContainsAny(prog, " \t") {
		spaceHint = fmt.Sprintf("; to pass arguments, write an array: %s = [%s]", key, quoteAll(strings.Fields(prog)))
	}
	if !strings.Contains(prog, "/") {
		// A bare name: a file next to the config, else a command on PATH.
		if _, err := os.Lstat(filepath.Join(dir, prog)); err != nil {
			p, err := exec.LookPath(prog)
			if err != nil {
				return nil, hint.Newf(fmt.Sprintf("install %s, or give its path (a relative path starts from %s)%s", prog, dir, spaceHint),
					"%s: plugin %s: program %q is neither in %s nor on PATH", path, key, prog, dir)
			}
			c.Argv[0] = p
			return c, nil
		}
	}
	if !filepath.IsAbs(prog) {
		prog = filepath.Join(dir, prog)
	}
	c.Argv[0] = prog
	st, err := os.Stat(prog)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, hint.Newf(fmt.Sprintf("create it, or fix %s in %s (a relative path starts from %s)%s", key, path, dir, spaceHint),
			"%s: plugin %s: %s does not exist", path, key, prog)
	case err != nil:
		return nil, hint.Wrap(fmt.Errorf("%s: plugin %s: %w", path, key, err), "check that "+prog+" is readable")
	case st.IsDir():
		return nil, hint.Newf("name the program in that directory, e.g. "+example,
			"%s: plugin %s: %s is a directory", path, key, prog)
	case st.Mode().Perm()&0o111 == 0:
		return nil, hint.Newf("make it executable: chmod +x "+prog,
			"%s: plugin %s: %s is not executable", path, key, prog)
	}
	return c, nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// show writes a decoded TOML value for an error message.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case map[string]any:
		return "a table"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%v", v)
}
