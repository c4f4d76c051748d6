// Package env loads and validates an environment directory: its Containerfile and chalk.toml.
package env

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/hint"
)

// ConfigName is the name of the configuration file in an environment
// directory.
const ConfigName = "chalk.toml"

// Defaults applied by Load when chalk.toml leaves a key out.
const (
	DefaultStudentWorkdir = "/home/student"
	DefaultStudentTimeout = 30 * time.Minute
	DefaultGraderWorkdir  = "/"
	DefaultGraderTimeout  = 5 * time.Minute
	DefaultHardwareName   = "default"
	DefaultCPUs           = 2.0
	DefaultMemoryBytes    = 4 * GiB

	// HarnessMemoryBytes is the part of hardware.memory kept for the
	// harness; the student's limit is the rest.
	HarnessMemoryBytes = 1 * GiB
	// MinMemoryBytes is the smallest hardware.memory accepted.
	MinMemoryBytes = 2 * GiB
)

// Env is a loaded, validated environment directory.
type Env struct {
	Dir           string // absolute
	ConfigPath    string // absolute path of chalk.toml
	Name          string
	Containerfile string // absolute path
	Student       Process
	Grader        *Process // nil when absent
	Hardware      Hardware
	Files         []File
}

// Process is how the student or the grader is started in the sandbox.
type Process struct {
	Command []string
	Workdir string
	Timeout time.Duration
	Env     map[string]string // never nil
}

// Hardware is what the sandbox gets. Name is the key a hardware_limits
// plugin maps; DiskBytes is zero when there is no cap.
type Hardware struct {
	Name        string
	CPUs        float64
	MemoryBytes int64
	DiskBytes   int64
}

// File is a host file or directory copied into the sandbox when a run
// starts.
type File struct {
	Source string // absolute, inside Env.Dir
	Target string // absolute path in the sandbox
}

// StudentMemoryBytes is the memory limit of the student: the hardware
// memory minus what is kept for the harness.
func (e *Env) StudentMemoryBytes() int64 {
	return e.Hardware.MemoryBytes - HarnessMemoryBytes
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)
	// imageComponentRE is the grammar of one component of an image
	// reference; the name must fit it, or the image tag would be refused.
	imageComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	envNameRE        = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

const minimalConfig = `name = "hello"

[student]
command = ["/bin/sh", "-c", "echo hi > /out/hello.txt"]`

// Load reads and validates the environment in dir.
func Load(dir string) (*Env, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("environment directory %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, hint.Newf(
			"create it with a Containerfile and a chalk.toml such as:\n\n"+indent(minimalConfig),
			"environment directory %s does not exist", abs)
	case err != nil:
		return nil, hint.Wrap(fmt.Errorf("environment directory: %w", err),
			"check that the directory is readable")
	case !st.IsDir():
		return nil, hint.Newf("pass the directory that holds chalk.toml, not a file in it",
			"%s is not a directory", abs)
	}
	realDir, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("environment directory: %w", err)
	}

	configPath := filepath.Join(abs, ConfigName)
	data, err := os.ReadFile(configPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, hint.Newf(
			"create "+configPath+" containing at least:\n\n"+indent(minimalConfig)+
				"\n\nThe keys are documented in docs/environment.md.",
			"no %s in %s", ConfigName, abs)
	case err != nil:
		return nil, hint.Wrap(err, "check that "+configPath+" is a readable file")
	}

	raw, err := decode(configPath, data)
	if err != nil {
		return nil, err
	}
	l := &loader{path: configPath, dir: abs, realDir: realDir, pos: positions(data)}
	return l.build(raw)
}

// loader turns the decoded configuration into an Env, reporting errors
// at the position of the offending key.
type loader struct {
	path    string
	dir     string
	realDir string
	pos     map[string]position
}

// errAt returns an error about key, located at the key's position when it
// is known.
func (l *loader) errAt(key, fix, format string, args ...any) error {
	loc := l.path
	if p, ok := l.pos[key]; ok {
		loc = fmt.Sprintf("%s:%d:%d", l.path, p.line, p.col)
	}
	return hint.Newf(fix, "%s: %s", loc, fmt.Sprintf(format, args...))
}

func (l *loader) build(raw *rawConfig) (*Env, error) {
	e := &Env{Dir: l.dir, ConfigPath: l.path}

	// name
	if raw.Name == nil {
		return nil, hint.Newf(`add a line such as: name = "hello"`, "%s: name is required", l.path)
	}
	e.Name = *raw.Name
	if !nameRE.MatchString(e.Name) || !imageComponentRE.MatchString(e.Name) {
		return nil, l.errAt("name",
			`use 1 to 63 lowercase letters, digits, '.', '_' or '-', starting and ending with a letter or digit, e.g. name = "hello"`,
			"name %q cannot be used in an image name", e.Name)
	}

	// containerfile
	if raw.Containerfile != nil {
		p, err := l.insideFile("containerfile", *raw.Containerfile, false)
		if err != nil {
			return nil, err
		}
		e.Containerfile = p
	} else {
		p, err := l.defaultContainerfile()
		if err != nil {
			return nil, err
		}
		e.Containerfile = p
	}

	// student
	if raw.Student == nil {
		return nil, hint.Newf("add a [student] table, e.g.\n\n"+indent(`[student]
command = ["/bin/sh", "-c", "echo hi > /out/hello.txt"]`),
			"%s: student.command is required", l.path)
	}
	student, err := l.process("student", raw.Student, DefaultStudentWorkdir, DefaultStudentTimeout)
	if err != nil {
		return nil, err
	}
	e.Student = *student

	// grader
	if raw.Grader != nil {
		g, err := l.process("grader", raw.Grader, DefaultGraderWorkdir, DefaultGraderTimeout)
		if err != nil {
			return nil, err
		}
		e.Grader = g
	}

	// hardware
	hw, err := l.hardware(raw.Hardware)
	if err != nil {
		return nil, err
	}
	e.Hardware = *hw

	// files
	targets := map[string]string{}
	for i, f := range raw.Files {
		key := fmt.Sprintf("files[%d]", i)
		if f.Source == nil {
			return nil, l.errAt(key, `add a line such as: source = "data" (a path relative to the environment directory)`,
				"%s.source is required", key)
		}
		if f.Target == nil {
			return nil, l.errAt(key, `add a line such as: target = "/data" (an absolute path in the sandbox)`,
				"%s.target is required", key)
		}
		src, err := l.insideFile(key+".source", *f.Source, true)
		if err != nil {
			return nil, err
		}
		target, err := l.sandboxPath(key+".target", *f.Target, `e.g. target = "/data"`)
		if err != nil {
			return nil, err
		}
		if reserved(target) {
			return nil, l.errAt(key+".target", `copy somewhere else, e.g. target = "/data"`,
				"%s.target %s is Chalk's own (/, /out and /.chalk are reserved)", key, target)
		}
		if prev, dup := targets[target]; dup {
			return nil, l.errAt(key+".target", "give each [[files]] entry its own target",
				"%s.target %q is also the target of %s", key, target, prev)
		}
		targets[target] = key
		e.Files = append(e.Files, File{Source: src, Target: target})
	}
	return e, nil
}

func (l *loader) defaultContainerfile() (string, error) {
	for _, name := range []string{"Containerfile", "Dockerfile"} {
		p := filepath.Join(l.dir, name)
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", hint.Wrap(err, "check that "+p+" is readable")
		}
		if !st.Mode().IsRegular() {
			return "", hint.Newf("replace it with a file, or name another one with containerfile = \"...\" in "+ConfigName,
				"%s is not a regular file", p)
		}
		return l.resolveInside(p, "", "")
	}
	return "", hint.Newf("add a Containerfile describing the sandbox image, e.g.\n\n"+indent("FROM debian:stable-slim")+
		"\n\nor name one in "+ConfigName+` with containerfile = "path/to/Containerfile"`,
		"no Containerfile or Dockerfile in %s", l.dir)
}

// insideFile checks that rel, the value of key, names an existing file
// (or, with dirOK, a directory) inside the environment directory and
// returns its absolute path.
func (l *loader) insideFile(key, rel string, dirOK bool) (string, error) {
	form := "a path relative to the environment directory, without '..'"
	if rel == "" {
		return "", l.errAt(key, "write "+form, "%s is empty", key)
	}
	native := filepath.FromSlash(rel)
	if filepath.IsAbs(native) || strings.HasPrefix(rel, "/") || filepath.VolumeName(native) != "" {
		return "", l.errAt(key, "write "+form+", e.g. \"data\" for "+filepath.Join(l.dir, "data"),
			"%s %q is absolute", key, rel)
	}
	clean := filepath.Clean(native)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", l.errAt(key, "write "+form+"; move what it names into "+l.dir,
			"%s %q is outside the environment directory", key, rel)
	}
	p := filepath.Join(l.dir, clean)
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(p); lerr == nil {
			return "", l.errAt(key, "fix or remove the symbolic link", "%s %q is a broken symbolic link", key, rel)
		}
		return "", l.errAt(key, "create it, or fix the path ("+form+")",
			"%s %q does not exist in %s", key, rel, l.dir)
	}
	if err != nil {
		return "", l.errAt(key, "check that it is readable", "%s %q: %v", key, rel, err)
	}
	if !st.Mode().IsRegular() && !(dirOK && st.IsDir()) {
		want := "a regular file"
		if dirOK {
			want = "a regular file or a directory"
		}
		return "", l.errAt(key, "point it at "+want, "%s %q is not %s", key, rel, want)
	}
	return l.resolveInside(p, key, rel)
}

// resolveInside follows the symbolic links in p, which is inside l.dir,
// and refuses them when they lead out of it. It returns the resolved path,
// expressed below l.dir.
func (l *loader) resolveInside(p, key, rel string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", hint.Wrap(err, "check that "+p+" is readable")
	}
	r, err := filepath.Rel(l.realDir, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		fix := "copy what it points to into " + l.dir + " instead of linking to it"
		if key == "" {
			return "", hint.Newf(fix, "%s is a symbolic link to %s, outside the environment directory", p, real)
		}
		return "", l.errAt(key, fix, "%s %q leads through a symbolic link to %s, outside the environment directory", key, rel, real)
	}
	return filepath.Join(l.dir, r), nil
}

// sandboxPath checks that v, the value of key, is an absolute path in the
// sandbox and returns it cleaned.
func (l *loader) sandboxPath(key, v, example string) (string, error) {
	if !path.IsAbs(v) {
		return "", l.errAt(key, "write an absolute path in the sandbox, "+example,
			"%s %q is not an absolute path", key, v)
	}
	return path.Clean(v), nil
}

func (l *loader) process(table string, raw *rawProcess, workdir string, timeout time.Duration) (*Process, error) {
	example := `command = ["/bin/sh", "-c", "echo hi > /out/hello.txt"]`
	if table == "grader" {
		example = `command = ["/bin/sh", "-c", "echo 1 > /out/reward"]`
	}
	key := table + ".command"
	if raw.Command == nil {
		return nil, hint.Newf("add a line such as this under ["+table+"]:\n\n"+indent(example),
			"%s: %s is required", l.path, key)
	}
	if len(raw.Command) == 0 {
		return nil, l.errAt(key, "give the program and its arguments, e.g. "+example, "%s is empty", key)
	}
	if raw.Command[0] == "" {
		return nil, l.errAt(key, "give the program to run first, e.g. "+example, "%s starts with an empty string", key)
	}
	p := &Process{
		Command: append([]string(nil), raw.Command...),
		Workdir: workdir,
		Timeout: timeout,
		Env:     map[string]string{},
	}
	if raw.Workdir != nil {
		w, err := l.sandboxPath(table+".workdir", *raw.Workdir, `e.g. workdir = "`+workdir+`"`)
		if err != nil {
			return nil, err
		}
		p.Workdir = w
	}
	if raw.Timeout != nil {
		k := table + ".timeout"
		d, err := time.ParseDuration(*raw.Timeout)
		if err != nil {
			return nil, l.errAt(k, `write a Go duration such as "90s", "10m" or "1h30m"`,
				"%s %q is not a duration", k, *raw.Timeout)
		}
		if d <= 0 {
			return nil, l.errAt(k, `write a duration above zero, e.g. timeout = "`+timeout.String()+`"`,
				"%s %q must be above zero", k, *raw.Timeout)
		}
		p.Timeout = d
	}
	names := make([]string, 0, len(raw.Env))
	for k := range raw.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !envNameRE.MatchString(k) {
			key := table + ".env"
			if _, ok := l.pos[key+"."+k]; ok {
				key = key + "." + k
			}
			return nil, l.errAt(key, "use letters, digits and '_', not starting with a digit, e.g. env = { MY_VAR = \"1\" }",
				"%s.env: %q is not a valid environment variable name", table, k)
		}
		p.Env[k] = raw.Env[k]
	}
	return p, nil
}

func (l *loader) hardware(raw *rawHardware) (*Hardware, error) {
	hw := &Hardware{
		Name:        DefaultHardwareName,
		CPUs:        DefaultCPUs,
		MemoryBytes: DefaultMemoryBytes,
	}
	if raw == nil {
		return hw, nil
	}
	if raw.Name != nil {
		if strings.TrimSpace(*raw.Name) == "" {
			return nil, l.errAt("hardware.name", `name the hardware a hardware_limits plugin maps, e.g. name = "default", or leave the key out`,
				"hardware.name is empty")
		}
		hw.Name = *raw.Name
	}
	if raw.CPUs != nil {
		c := *raw.CPUs
		if !(c > 0) || math.IsInf(c, 0) {
			return nil, l.errAt("hardware.cpus", "write a number above zero, e.g. cpus = 2 or cpus = 0.5",
				"hardware.cpus %v must be a number above zero", c)
		}
		hw.CPUs = c
	}
	if raw.Memory != nil {
		m, err := l.size("hardware.memory", raw.Memory, `memory = "4GiB"`)
		if err != nil {
			return nil, err
		}
		if m < MinMemoryBytes {
			return nil, l.errAt("hardware.memory",
				`give at least 2GiB, e.g. memory = "4GiB": 1GiB is kept for the harness and the student gets the rest`,
				"hardware.memory %s is below the minimum of %s", FormatSize(m), FormatSize(MinMemoryBytes))
		}
		hw.MemoryBytes = m
	}
	if raw.Disk != nil {
		d, err := l.size("hardware.disk", raw.Disk, `disk = "20GiB"`)
		if err != nil {
			return nil, err
		}
		hw.DiskBytes = d
	}
	return hw, nil
}

// size reads a size given either as a string ParseSize accepts or as a
// TOML integer counting bytes.
func (l *loader) size(key string, v any, example string) (int64, error) {
	fix := "write a size such as " + example + ` ("GiB", "MiB", "G", "GB", ...; a bare integer counts bytes)`
	switch v := v.(type) {
	case string:
		n, err := ParseSize(v)
		if err != nil {
			return 0, l.errAt(key, fix, "%s %q is not a size", key, v)
		}
		return n, nil
	case int64:
		if v < 0 {
			return 0, l.errAt(key, fix, "%s %d is negative", key, v)
		}
		return v, nil
	default:
		return 0, l.errAt(key, fix, "%s: expected a size, found %s", key, tomlKind(v))
	}
}

// tomlKind names the TOML type of a decoded value, with its article.
func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date or time"
	}
}

// reserved reports whether the sandbox path p (clean, absolute) is one
// Chalk manages: the root, the output directory or the harness's own.
func reserved(p string) bool {
	for _, r := range []string{"/out", "/.chalk"} {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return p == "/"
}

// indent indents every non-empty line of s by four spaces.
func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if line != "" {
			lines[i] = "    " + line
		}
	}
	return strings.Join(lines, "\n")
}
