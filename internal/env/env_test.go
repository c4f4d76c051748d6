package env

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/stretchr/testify/require"
)

const minimalTOML = `name = "hello"

[student]
command = ["/bin/sh", "-c", "echo hi > /out/hello.txt"]
`

// writeTree creates files (path relative to dir -> content) under a new
// temporary directory and returns it. A value of "<dir>" makes a
// directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if content == "<dir>" {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

// withStudent is a chalk.toml made of minimalTOML's name and student
// table followed by extra.
func withStudent(extra string) string {
	return minimalTOML + extra
}

func TestLoadHappyPath(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Containerfile": "FROM scratch\n",
		"data/a.txt":    "a",
		"solution.py":   "print(1)\n",
		"chalk.toml": `name = "hello"

[student]
command = ["/bin/sh", "-c", "echo hi > /out/hello.txt"]
workdir = "/work/"
timeout = "10m"
env = { FOO = "bar", _X1 = "" }

[grader]
command = ["/bin/sh", "-c", "echo 1 > /out/reward"]
timeout = "1m30s"
env = {}

[hardware]
name = "gpu"
cpus = 0.5
memory = "8GiB"
disk = "20GB"

[[files]]
source = "data"
target = "/data"

[[files]]
source = "./solution.py"
target = "/opt/solution.py"
`,
	})

	e, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, &Env{
		Dir:           dir,
		ConfigPath:    filepath.Join(dir, "chalk.toml"),
		Name:          "hello",
		Containerfile: filepath.Join(dir, "Containerfile"),
		Student: Process{
			Command: []string{"/bin/sh", "-c", "echo hi > /out/hello.txt"},
			Workdir: "/work",
			Timeout: 10 * time.Minute,
			Env:     map[string]string{"FOO": "bar", "_X1": ""},
		},
		Grader: &Process{
			Command: []string{"/bin/sh", "-c", "echo 1 > /out/reward"},
			Workdir: "/",
			Timeout: 90 * time.Second,
			Env:     map[string]string{},
		},
		Hardware: Hardware{Name: "gpu", CPUs: 0.5, MemoryBytes: 8 * GiB, DiskBytes: 20e9},
		Files: []File{
			{Source: filepath.Join(dir, "data"), Target: "/data"},
			{Source: filepath.Join(dir, "solution.py"), Target: "/opt/solution.py"},
		},
	}, e)
	require.Equal(t, 7*GiB, e.StudentMemoryBytes())
}

func TestLoadDefaults(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Dockerfile": "FROM scratch\n",
		"chalk.toml": minimalTOML,
	})
	e, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "Dockerfile"), e.Containerfile)
	require.Equal(t, Process{
		Command: []string{"/bin/sh", "-c", "echo hi > /out/hello.txt"},
		Workdir: "/home/student",
		Timeout: 30 * time.Minute,
		Env:     map[string]string{},
	}, e.Student)
	require.Nil(t, e.Grader)
	require.Equal(t, Hardware{Name: "default", CPUs: 2, MemoryBytes: 4 * GiB, DiskBytes: 0}, e.Hardware)
	require.Equal(t, 3*GiB, e.StudentMemoryBytes())
	require.Empty(t, e.Files)
}

func TestLoadGraderDefaults(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Containerfile": "FROM scratch\n",
		"chalk.toml":    withStudent("[grader]\ncommand = [\"grade\"]\n"),
	})
	e, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, &Process{Command: []string{"grade"}, Workdir: "/", Timeout: 5 * time.Minute, Env: map[string]string{}}, e.Grader)
}

func TestLoadPrefersContainerfile(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Containerfile": "FROM scratch\n",
		"Dockerfile":    "FROM scratch\n",
		"chalk.toml":    minimalTOML,
	})
	e, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "Containerfile"), e.Containerfile)
}

func TestLoadContainerfileKey(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Containerfile":           "FROM scratch\n",
		"build/Gpu.Containerfile": "FROM scratch\n",
		"chalk.toml":              "containerfile = \"build/Gpu.Containerfile\"\n" + minimalTOML,
	})
	e, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "build", "Gpu.Containerfile"), e.Containerfile)
}

func TestLoadSizesAsIntegers(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Containerfile": "FROM scratch\n",
		"chalk.toml":    withStudent("[hardware]\ncpus = 4\nmemory = 3221225472\ndisk = 0\n"),
	})
	e, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, Hardware{Name: "default", CPUs: 4, MemoryBytes: 3 * GiB, DiskBytes: 0}, e.Hardware)
}

func TestLoadRelativeDir(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Containerfile": "FROM scratch\n",
		"chalk.toml":    minimalTOML,
	})
	t.Chdir(filepath.Dir(dir))
	e, err := Load(filepath.Base(dir))
	require.NoError(t, err)
	require.Equal(t, dir, e.Dir)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		// In err and hint, $DIR stands for the directory and $CFG for
		// its chalk.toml.
		err  string
		hint string
	}{
		{
			name:  "no chalk.toml",
			files: map[string]string{"Containerfile": "FROM scratch\n"},
			err:   "no chalk.toml in $DIR",
			hint:  "create $CFG containing at least:\n\n    name = \"hello\"\n\n    [student]\n",
		},
		{
			name:  "no Containerfile",
			files: map[string]string{"chalk.toml": minimalTOML},
			err:   "no Containerfile or Dockerfile in $DIR",
			hint:  "add a Containerfile",
		},
		{
			name:  "Containerfile is a directory",
			files: map[string]string{"chalk.toml": minimalTOML, "Containerfile": "<dir>"},
			err:   "$DIR/Containerfile is not a regular file",
			hint:  "replace it with a file",
		},
		{
			name:  "syntax error",
			files: map[string]string{"chalk.toml": "name = \"hello\n"},
			err:   "$CFG:1:",
			hint:  "fix the TOML syntax",
		},
		{
			name:  "duplicate key",
			files: map[string]string{"chalk.toml": "name = \"a\"\nname = \"b\"\n"},
			err:   "$CFG:2:1: key name is already defined",
			hint:  "keep a single definition",
		},
		{
			name:  "unknown table",
			files: map[string]string{"chalk.toml": "name = \"hello\"\n\n[studnet]\ncommand = [\"x\"]\n"},
			err:   `$CFG:3:2: unknown table "studnet" (did you mean "student"?)`,
			hint:  "remove it or fix its spelling; the keys are documented in docs/environment.md",
		},
		{
			name: "unknown dotted key",
			files: map[string]string{"chalk.toml": `name = "hello"
[student]
command = ["x"]
[grader]
command = ["y"]

[hardware]
cpus = 2
studnet.command = 1
`},
			err:  `$CFG:9:1: unknown key "hardware.studnet.command"`,
			hint: "remove it or fix its spelling",
		},
		{
			name:  "unknown key is reported with its line",
			files: map[string]string{"chalk.toml": withStudent("timout = \"1m\"\n")},
			err:   `$CFG:5:1: unknown key "student.timout" (did you mean "student.timeout"?)`,
			hint:  "remove it or fix its spelling; the keys are documented in docs/environment.md",
		},
		{
			name:  "every unknown key is reported",
			files: map[string]string{"chalk.toml": withStudent("foo = 1\n[[files]]\nsource = \"a\"\ntraget = \"/a\"\n")},
			err:   "$CFG:5:1: unknown key \"student.foo\"\n$CFG:8:1: unknown key \"files.traget\" (did you mean \"files.target\"?)",
		},
		{
			name:  "timeout of the wrong type",
			files: map[string]string{"chalk.toml": "name = \"hello\"\n[student]\ntimeout = 10\ncommand = [\"x\"]\n"},
			err:   "$CFG:3:11: student.timeout: expected a quoted Go duration, found an integer",
			hint:  `write it as a quoted Go duration, e.g. timeout = "30m"`,
		},
		{
			name:  "command of the wrong type",
			files: map[string]string{"chalk.toml": "name = \"hello\"\n[student]\ncommand = \"echo hi\"\n"},
			err:   "$CFG:3:11: student.command: expected an array of strings, found a string",
			hint:  `command = ["/bin/sh", "-c", "echo hi"]`,
		},
		{
			name:  "command element of the wrong type",
			files: map[string]string{"chalk.toml": "name = \"hello\"\n[grader]\ncommand = [\"x\", 3]\n"},
			err:   "$CFG:3:17: grader.command: expected an array of strings, found an integer",
		},
		{
			name:  "env value of the wrong type",
			files: map[string]string{"chalk.toml": withStudent("env = { A = 1 }\n")},
			err:   "$CFG:5:13: student.env: expected a table of strings, found an integer",
			hint:  `env = { FOO = "bar" }`,
		},
		{
			name:  "cpus of the wrong type",
			files: map[string]string{"chalk.toml": withStudent("[hardware]\ncpus = \"two\"\n")},
			err:   "$CFG:6:8: hardware.cpus: expected a number, found a string",
			hint:  "cpus = 2",
		},
		{
			name:  "student is not a table",
			files: map[string]string{"chalk.toml": "name = \"hello\"\nstudent = 3\n"},
			err:   "$CFG:2:11: student: expected a table, found an integer",
			hint:  "[student] on its own line",
		},
		{
			name:  "name of the wrong type",
			files: map[string]string{"chalk.toml": "name = 1\n"},
			err:   "$CFG:1:8: name: expected a quoted string, found an integer",
		},
		{
			name:  "missing name",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "[student]\ncommand = [\"x\"]\n"},
			err:   "$CFG: name is required",
			hint:  `name = "hello"`,
		},
		{
			name:  "bad name",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "name = \"Hello World\"\n[student]\ncommand = [\"x\"]\n"},
			err:   `$CFG:1:8: name "Hello World" cannot be used in an image name`,
			hint:  "lowercase letters, digits",
		},
		{
			name:  "name ending with a separator",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "name = \"hello-\"\n[student]\ncommand = [\"x\"]\n"},
			err:   `$CFG:1:8: name "hello-" cannot be used in an image name`,
		},
		{
			name:  "name too long",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "name = \"" + strings.Repeat("a", 64) + "\"\n[student]\ncommand = [\"x\"]\n"},
			err:   `cannot be used in an image name`,
		},
		{
			name:  "missing student",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "name = \"hello\"\n"},
			err:   "$CFG: student.command is required",
			hint:  "add a [student] table, e.g.\n\n    [student]\n    command = [",
		},
		{
			name:  "missing student command",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "name = \"hello\"\n[student]\nworkdir = \"/w\"\n"},
			err:   "$CFG: student.command is required",
			hint:  "add a line such as this under [student]:\n\n    command = [",
		},
		{
			name:  "missing grader command",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[grader]\ntimeout = \"1m\"\n")},
			err:   "$CFG: grader.command is required",
			hint:  `command = ["/bin/sh", "-c", "echo 1 > /out/reward"]`,
		},
		{
			name:  "empty command",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "name = \"hello\"\n[student]\ncommand = []\n"},
			err:   "$CFG:3:1: student.command is empty",
		},
		{
			name:  "empty program",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "name = \"hello\"\n[student]\ncommand = [\"\", \"x\"]\n"},
			err:   "$CFG:3:1: student.command starts with an empty string",
		},
		{
			name:  "bad duration",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("timeout = \"ten minutes\"\n")},
			err:   `$CFG:5:11: student.timeout "ten minutes" is not a duration`,
			hint:  `write a Go duration such as "90s", "10m" or "1h30m"`,
		},
		{
			name:  "zero duration",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[grader]\ncommand = [\"g\"]\ntimeout = \"0s\"\n")},
			err:   `$CFG:7:11: grader.timeout "0s" must be above zero`,
			hint:  `timeout = "5m0s"`,
		},
		{
			name:  "relative workdir",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("workdir = \"home\"\n")},
			err:   `$CFG:5:11: student.workdir "home" is not an absolute path`,
			hint:  `workdir = "/home/student"`,
		},
		{
			name:  "bad env name",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("env = { OK = \"1\", \"1BAD\" = \"2\" }\n")},
			err:   `$CFG:5:28: student.env: "1BAD" is not a valid environment variable name`,
			hint:  "letters, digits and '_'",
		},
		{
			name:  "bad env name in a table",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[student.env]\n\"A-B\" = \"2\"\n")},
			err:   `$CFG:6:9: student.env: "A-B" is not a valid environment variable name`,
		},
		{
			name:  "bad size",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[hardware]\nmemory = \"4 gigs\"\n")},
			err:   `$CFG:6:10: hardware.memory "4 gigs" is not a size`,
			hint:  `write a size such as memory = "4GiB"`,
		},
		{
			name:  "size of the wrong type",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[hardware]\ndisk = 1.5\n")},
			err:   `$CFG:6:8: hardware.disk: expected a size, found a float`,
			hint:  `disk = "20GiB"`,
		},
		{
			name:  "negative size",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[hardware]\ndisk = -1\n")},
			err:   `$CFG:6:8: hardware.disk -1 is negative`,
		},
		{
			name:  "too little memory",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[hardware]\nmemory = \"1GiB\"\n")},
			err:   `$CFG:6:10: hardware.memory 1GiB is below the minimum of 2GiB`,
			hint:  "1GiB is kept for the harness",
		},
		{
			name:  "zero cpus",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[hardware]\ncpus = 0\n")},
			err:   `$CFG:6:8: hardware.cpus 0 must be a number above zero`,
		},
		{
			name:  "nan cpus",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[hardware]\ncpus = nan\n")},
			err:   `hardware.cpus NaN must be a number above zero`,
		},
		{
			name:  "empty hardware name",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[hardware]\nname = \"\"\n")},
			err:   `$CFG:6:8: hardware.name is empty`,
		},
		{
			name:  "missing containerfile",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "containerfile = \"Gpu.Containerfile\"\n" + minimalTOML},
			err:   `$CFG:1:17: containerfile "Gpu.Containerfile" does not exist in $DIR`,
			hint:  "create it, or fix the path",
		},
		{
			name:  "containerfile outside",
			files: map[string]string{"Containerfile": "x", "chalk.toml": "containerfile = \"../Containerfile\"\n" + minimalTOML},
			err:   `$CFG:1:17: containerfile "../Containerfile" is outside the environment directory`,
		},
		{
			name:  "missing files source",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[[files]]\ntarget = \"/a\"\n")},
			err:   `$CFG:5:3: files[0].source is required`,
			hint:  `source = "data"`,
		},
		{
			name:  "missing files target",
			files: map[string]string{"Containerfile": "x", "data": "", "chalk.toml": withStudent("[[files]]\nsource = \"data\"\n[[files]]\nsource = \"data\"\n")},
			err:   `$CFG:5:3: files[0].target is required`,
			hint:  `target = "/data"`,
		},
		{
			name:  "files source missing",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[[files]]\nsource = \"data\"\ntarget = \"/data\"\n")},
			err:   `$CFG:6:10: files[0].source "data" does not exist in $DIR`,
		},
		{
			name:  "files source with ..",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[[files]]\nsource = \"data/../../x\"\ntarget = \"/data\"\n")},
			err:   `$CFG:6:10: files[0].source "data/../../x" is outside the environment directory`,
			hint:  "without '..'",
		},
		{
			name:  "files source absolute",
			files: map[string]string{"Containerfile": "x", "chalk.toml": withStudent("[[files]]\nsource = \"/etc/passwd\"\ntarget = \"/data\"\n")},
			err:   `$CFG:6:10: files[0].source "/etc/passwd" is absolute`,
			hint:  "a path relative to the environment directory",
		},
		{
			name:  "files target relative",
			files: map[string]string{"Containerfile": "x", "data": "", "chalk.toml": withStudent("[[files]]\nsource = \"data\"\ntarget = \"data\"\n")},
			err:   `$CFG:7:10: files[0].target "data" is not an absolute path`,
		},
		{
			name:  "files target root",
			files: map[string]string{"Containerfile": "x", "data": "", "chalk.toml": withStudent("[[files]]\nsource = \"data\"\ntarget = \"/\"\n")},
			err:   `$CFG:7:10: files[0].target / is Chalk's own (/, /out and /.chalk are reserved)`,
			hint:  `target = "/data"`,
		},
		{
			name:  "files target in /out",
			files: map[string]string{"Containerfile": "x", "data": "", "chalk.toml": withStudent("[[files]]\nsource = \"data\"\ntarget = \"/out/data\"\n")},
			err:   `$CFG:7:10: files[0].target /out/data is Chalk's own`,
		},
		{
			name:  "files target in /.chalk",
			files: map[string]string{"Containerfile": "x", "data": "", "chalk.toml": withStudent("[[files]]\nsource = \"data\"\ntarget = \"/.chalk/x/..\"\n")},
			err:   `$CFG:7:10: files[0].target /.chalk is Chalk's own`,
		},
		{
			name: "files duplicate target",
			files: map[string]string{"Containerfile": "x", "a": "", "b": "", "chalk.toml": withStudent(
				"[[files]]\nsource = \"a\"\ntarget = \"/x\"\n[[files]]\nsource = \"b\"\ntarget = \"/x/\"\n")},
			err: `$CFG:10:10: files[1].target "/x" is also the target of files[0]`,
		},
		{
			name: "files as inline tables",
			files: map[string]string{"Containerfile": "x", "a": "", "chalk.toml": "files = [\n" +
				"  { source = \"a\", target = \"/a\" },\n" +
				"  { source = \"../b\", target = \"/b\" },\n" +
				"]\n" + minimalTOML},
			err: `$CFG:3:14: files[1].source "../b" is outside the environment directory`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			cfg := filepath.Join(dir, "chalk.toml")
			expand := func(s string) string {
				return strings.NewReplacer("$DIR", dir, "$CFG", cfg).Replace(s)
			}
			_, err := Load(dir)
			require.Error(t, err)
			require.Contains(t, err.Error(), expand(tt.err))
			require.NotEmpty(t, hint.Of(err), "every error carries a hint")
			if tt.hint != "" {
				require.Contains(t, hint.Of(err), expand(tt.hint))
			}
		})
	}
}

func TestLoadMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Load(dir)
	require.EqualError(t, err, "environment directory "+dir+" does not exist")
	require.Contains(t, hint.Of(err), "create it with a Containerfile and a chalk.toml such as:")
	require.Contains(t, hint.Of(err), `name = "hello"`)
}

func TestLoadNotADirectory(t *testing.T) {
	dir := writeTree(t, map[string]string{"chalk.toml": minimalTOML})
	_, err := Load(filepath.Join(dir, "chalk.toml"))
	require.EqualError(t, err, filepath.Join(dir, "chalk.toml")+" is not a directory")
	require.NotEmpty(t, hint.Of(err))
}

func TestLoadRefusesSymlinksOut(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret": "s", "Containerfile": "FROM scratch\n"})
	tests := []struct {
		name   string
		link   string // name of the link in the environment directory
		target string
		toml   string
		err    string
	}{
		{
			name:   "files source",
			link:   "data",
			target: filepath.Join(outside, "secret"),
			toml:   withStudent("[[files]]\nsource = \"data\"\ntarget = \"/data\"\n"),
			err:    `:6:10: files[0].source "data" leads through a symbolic link to ` + filepath.Join(outside, "secret") + `, outside the environment directory`,
		},
		{
			name:   "files source below a linked directory",
			link:   "dir",
			target: outside,
			toml:   withStudent("[[files]]\nsource = \"dir/secret\"\ntarget = \"/data\"\n"),
			err:    `files[0].source "dir/secret" leads through a symbolic link`,
		},
		{
			name:   "containerfile key",
			link:   "Gpu.Containerfile",
			target: filepath.Join(outside, "Containerfile"),
			toml:   "containerfile = \"Gpu.Containerfile\"\n" + minimalTOML,
			err:    `:1:17: containerfile "Gpu.Containerfile" leads through a symbolic link`,
		},
		{
			name:   "default Containerfile",
			link:   "Containerfile",
			target: filepath.Join(outside, "Containerfile"),
			toml:   minimalTOML,
			err:    `Containerfile is a symbolic link to ` + filepath.Join(outside, "Containerfile") + `, outside the environment directory`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{"chalk.toml": tt.toml})
			if tt.link != "Containerfile" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM scratch\n"), 0o644))
			}
			require.NoError(t, os.Symlink(tt.target, filepath.Join(dir, tt.link)))
			_, err := Load(dir)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.err)
			require.Contains(t, hint.Of(err), "copy what it points to into "+dir)
		})
	}
}

func TestLoadFollowsSymlinksInside(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Containerfile": "FROM scratch\n",
		"real/x":        "x",
		"chalk.toml":    withStudent("[[files]]\nsource = \"data\"\ntarget = \"/data\"\n"),
	})
	require.NoError(t, os.Symlink("real", filepath.Join(dir, "data")))
	e, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, []File{{Source: filepath.Join(dir, "real"), Target: "/data"}}, e.Files)
}

func TestPositions(t *testing.T) {
	pos := positions([]byte(`name = "x"
[student]
command = ["a", "b"]
env = { A = "1" }
[[files]]
source = "s"
[[files]]
  target = '/t'
`))
	require.Equal(t, map[string]position{
		"name":               {1, 8},
		"student":            {2, 2},
		"student.command":    {3, 1},
		"student.command[0]": {3, 12},
		"student.command[1]": {3, 17},
		"student.env":        {4, 7},
		"student.env.A":      {4, 13},
		"files[0]":           {5, 3},
		"files[0].source":    {6, 10},
		"files[1]":           {7, 3},
		"files[1].target":    {8, 12},
	}, pos)
}
