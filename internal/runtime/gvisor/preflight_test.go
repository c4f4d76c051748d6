package gvisor

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const daemonDown = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"

// dockerRuntimes is docker info's {{json .Runtimes}} on a host where runsc
// is loaded with args.
func dockerRuntimes(args ...string) string {
	b, _ := json.Marshal(map[string]any{
		"io.containerd.runc.v2": map[string]any{"path": "runc"},
		"runc":                  map[string]any{"path": "runc"},
		"runsc":                 map[string]any{"path": "/usr/bin/runsc", "runtimeArgs": args},
	})
	return string(b)
}

const dockerWithoutRunsc = `{"io.containerd.runc.v2":{"path":"runc","status":{}},"runc":{"path":"runc","status":{}}}` + "\n"

type fake struct {
	fixture   string            // testdata file served as /etc/docker/daemon.json; "" for none
	onPath    map[string]string // LookPath answers
	exists    []string          // paths Stat finds
	readErr   error             // ReadFile's error for daemon.json
	dockerOut string
	dockerErr error
	ran       [][]string
}

func (f *fake) host() runtime.Host {
	return runtime.Host{
		GOOS: "linux",
		LookPath: func(name string) (string, error) {
			if p, ok := f.onPath[name]; ok {
				return p, nil
			}
			return "", &fs.PathError{Op: "lookpath", Path: name, Err: fs.ErrNotExist}
		},
		ReadFile: func(name string) ([]byte, error) {
			if name == DaemonJSONPath && f.readErr != nil {
				return nil, &fs.PathError{Op: "open", Path: name, Err: f.readErr}
			}
			if name != DaemonJSONPath || f.fixture == "" {
				return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
			}
			return os.ReadFile(filepath.Join("testdata", f.fixture))
		},
		Stat: func(name string) (fs.FileInfo, error) {
			for _, p := range f.exists {
				if p == name {
					return nil, nil
				}
			}
			return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
		},
		Access: func(string, uint32) error { return nil },
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			f.ran = append(f.ran, append([]string{name}, args...))
			if _, ok := ctx.Deadline(); !ok {
				return nil, errors.New("no timeout on the command")
			}
			if name != "docker" || strings.Join(args, " ") != "info --format {{json .Runtimes}}" {
				return nil, errors.New("unexpected command")
			}
			return []byte(f.dockerOut), f.dockerErr
		},
		Getenv:  func(string) string { return "" },
		Geteuid: func() int { return 1000 },
	}
}

// good is a host where everything is set up.
func good() *fake {
	return &fake{
		fixture:   "runsc-complete.json",
		onPath:    map[string]string{"runsc": "/usr/bin/runsc", "docker": "/usr/bin/docker"},
		exists:    []string{"/usr/bin/runsc"},
		dockerOut: dockerRuntimes(RuntimeArgs...) + "\n",
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), got)
}

func find(t *testing.T, checks []runtime.Check, name string) runtime.Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check named %q in %+v", name, checks)
	return runtime.Check{}
}

func TestPreflight(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*fake)
		want   map[string]runtime.Status
		// daemon.json check
		daemonGolden string   // golden file holding its exact fix
		daemonFix    string   // its exact fix, when not golden
		daemonDetail []string // substrings of its detail
		// docker runtimes check
		dockerFix    string
		dockerDetail []string
		runscFix     string
	}{
		{
			name:   "all good",
			modify: func(*fake) {},
			want:   map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Pass, "docker runtimes": runtime.Pass},
		},
		{
			name: "daemon.json missing",
			modify: func(f *fake) {
				f.fixture = ""
				f.dockerOut = dockerWithoutRunsc
			},
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Fail, "docker runtimes": runtime.Fail},
			daemonGolden: "missing.txt",
			daemonDetail: []string{"/etc/docker/daemon.json does not exist"},
			dockerFix:    "# after writing daemon.json as shown for the daemon.json check:\nsudo systemctl reload docker",
			dockerDetail: []string{"docker lists no runsc runtime, only io.containerd.runc.v2, runc; reload docker after editing daemon.json"},
		},
		{
			name: "no runtimes key",
			modify: func(f *fake) {
				f.fixture = "no-runtimes.json"
				f.dockerOut = dockerWithoutRunsc
			},
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Fail, "docker runtimes": runtime.Fail},
			daemonGolden: "no-runtimes.txt",
			daemonDetail: []string{"runtimes has no runsc"},
		},
		{
			name: "other keys and an nvidia runtime",
			modify: func(f *fake) {
				f.fixture = "other-runtime.json"
				f.dockerOut = dockerWithoutRunsc
			},
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Fail, "docker runtimes": runtime.Fail},
			daemonGolden: "other-runtime.txt",
			daemonDetail: []string{"runtimes has no runsc"},
		},
		{
			name: "runsc lacks args",
			modify: func(f *fake) {
				f.fixture = "runsc-missing-args.json"
				f.dockerOut = dockerRuntimes("--net-raw", "-overlay2=none", "-network=sandbox")
			},
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Fail, "docker runtimes": runtime.Fail},
			daemonGolden: "runsc-missing-args.txt",
			daemonDetail: []string{"runtimes.runsc.runtimeArgs lacks -net-raw --systrap-disable-syscall-patching -file-access=shared --net-disconnect-ok"},
			dockerDetail: []string{"docker's runsc runtime lacks -net-raw --systrap-disable-syscall-patching -file-access=shared --net-disconnect-ok"},
		},
		{
			name:         "invalid JSON",
			modify:       func(f *fake) { f.fixture = "invalid.json" },
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Fail, "docker runtimes": runtime.Pass},
			daemonFix:    "# fix the JSON in /etc/docker/daemon.json first (line 6), then run chalk again for the file to write",
			daemonDetail: []string{"/etc/docker/daemon.json is not valid JSON: line 6, column 5: "},
		},
		{
			name:         "not an object",
			modify:       func(f *fake) { f.fixture = "not-object.json" },
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Fail, "docker runtimes": runtime.Pass},
			daemonFix:    "# make /etc/docker/daemon.json a JSON object first, then run chalk again for the file to write",
			daemonDetail: []string{"the file is an array, not a JSON object"},
		},
		{
			name:         "runtimes not an object",
			modify:       func(f *fake) { f.fixture = "runtimes-not-object.json" },
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Fail, "docker runtimes": runtime.Pass},
			daemonFix:    "# make /etc/docker/daemon.json a JSON object first, then run chalk again for the file to write",
			daemonDetail: []string{"runtimes is an array, not a JSON object"},
		},
		{
			name:         "daemon.json unreadable",
			modify:       func(f *fake) { f.readErr = fs.ErrPermission },
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Fail, "docker runtimes": runtime.Pass},
			daemonFix:    "# make it readable, then run chalk again for the file to write:\nsudo chmod 644 /etc/docker/daemon.json",
			daemonDetail: []string{"can't read /etc/docker/daemon.json: permission denied"},
		},
		{
			name: "runsc not installed",
			modify: func(f *fake) {
				delete(f.onPath, "runsc")
				f.exists = nil
			},
			want:         map[string]runtime.Status{"runsc": runtime.Fail, "daemon.json": runtime.Fail, "docker runtimes": runtime.Pass},
			runscFix:     fixRunsc,
			daemonGolden: "runsc-not-installed.txt",
			daemonDetail: []string{"runtimes.runsc.path /usr/bin/runsc does not exist"},
		},
		{
			name:         "docker daemon down",
			modify:       func(f *fake) { f.dockerOut, f.dockerErr = "", errors.New(daemonDown) },
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Pass, "docker runtimes": runtime.Fail},
			dockerFix:    "sudo systemctl start docker",
			dockerDetail: []string{"docker info failed: " + daemonDown},
		},
		{
			name: "docker socket not allowed",
			modify: func(f *fake) {
				f.dockerOut = ""
				f.dockerErr = errors.New("permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.47/info\": dial unix /var/run/docker.sock: connect: permission denied")
			},
			want:      map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Pass, "docker runtimes": runtime.Fail},
			dockerFix: "sudo usermod -aG docker $USER\n# then log out and log in again",
		},
		{
			name:         "docker not reloaded",
			modify:       func(f *fake) { f.dockerOut = dockerWithoutRunsc },
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Pass, "docker runtimes": runtime.Fail},
			dockerFix:    "sudo systemctl reload docker",
			dockerDetail: []string{"reload docker after editing daemon.json"},
		},
		{
			name:         "docker not installed",
			modify:       func(f *fake) { delete(f.onPath, "docker") },
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Pass, "docker runtimes": runtime.Fail},
			dockerFix:    "sudo apt-get install docker.io docker-buildx\nsudo usermod -aG docker $USER\n# then log out and log in again",
			dockerDetail: []string{"docker is not on PATH"},
		},
		{
			name:         "docker prints garbage",
			modify:       func(f *fake) { f.dockerOut = "<no value>\n" },
			want:         map[string]runtime.Status{"runsc": runtime.Pass, "daemon.json": runtime.Pass, "docker runtimes": runtime.Fail},
			dockerFix:    "# see what docker reports:\ndocker info --format '{{json .Runtimes}}'",
			dockerDetail: []string{"can't read docker's runtimes"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := good()
			tt.modify(f)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			checks := Preflight(ctx, f.host(), DaemonJSONPath)

			got := map[string]runtime.Status{}
			for _, c := range checks {
				require.Equal(t, Name, c.Runtime)
				got[c.Name] = c.Status
				if c.Status == runtime.Fail {
					require.NotEmpty(t, c.Fix, "failed check %q has no fix", c.Name)
				} else {
					require.Empty(t, c.Fix, "check %q has a fix but didn't fail", c.Name)
				}
			}
			require.Equal(t, tt.want, got)

			daemon := find(t, checks, "daemon.json")
			if tt.daemonGolden != "" {
				golden(t, tt.daemonGolden, daemon.Fix)
			}
			if tt.daemonFix != "" {
				require.Equal(t, tt.daemonFix, daemon.Fix)
			}
			for _, s := range tt.daemonDetail {
				require.Contains(t, daemon.Detail, s)
			}
			docker := find(t, checks, "docker runtimes")
			if tt.dockerFix != "" {
				require.Equal(t, tt.dockerFix, docker.Fix)
			}
			for _, s := range tt.dockerDetail {
				require.Contains(t, docker.Detail, s)
			}
			if tt.runscFix != "" {
				require.Equal(t, tt.runscFix, find(t, checks, "runsc").Fix)
			}
		})
	}
}

// TestPreflightFixWritesWorkingFile runs the file each fix prints through
// the checks again: it must pass.
func TestPreflightFixWritesWorkingFile(t *testing.T) {
	for _, fixture := range []string{"", "no-runtimes.json", "other-runtime.json", "runsc-missing-args.json"} {
		t.Run(fixture, func(t *testing.T) {
			f := good()
			f.fixture = fixture
			fix := find(t, Preflight(context.Background(), f.host(), DaemonJSONPath), "daemon.json").Fix

			start := strings.Index(fix, "\n{\n")
			end := strings.Index(fix, "\n}\n# then reload docker:\nsudo systemctl reload docker")
			require.True(t, start >= 0 && end > start, fix)
			require.True(t, strings.HasSuffix(fix, "\n}\n# then reload docker:\nsudo systemctl reload docker"), fix)
			written := fix[start+1 : end+3]

			problems, err := inspect(f.host(), []byte(written))
			require.NoError(t, err)
			require.Empty(t, problems)
		})
	}
}

func TestRuntimeArgs(t *testing.T) {
	require.Equal(t, []string{
		"-net-raw",
		"--systrap-disable-syscall-patching",
		"-overlay2=none",
		"-file-access=shared",
		"-network=sandbox",
		"--net-disconnect-ok",
	}, RuntimeArgs)
}

func TestMissingArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"all, in order", RuntimeArgs, nil},
		{"all, reversed, with extras", []string{"--debug", "--net-disconnect-ok", "-network=sandbox", "-file-access=shared", "-overlay2=none", "--systrap-disable-syscall-patching", "-net-raw"}, nil},
		{"none", nil, RuntimeArgs},
		{"dashes must match", []string{"--net-raw", "-systrap-disable-syscall-patching", "-overlay2=none", "-file-access=shared", "-network=sandbox", "-net-disconnect-ok"},
			[]string{"-net-raw", "--systrap-disable-syscall-patching", "--net-disconnect-ok"}},
		{"values must match", []string{"-net-raw", "--systrap-disable-syscall-patching", "-overlay2=root:memory", "-file-access=exclusive", "-network=host", "--net-disconnect-ok"},
			[]string{"-overlay2=none", "-file-access=shared", "-network=sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, missingArgs(tt.args))
		})
	}
}

// TestRealHost runs the preflight read-only against this machine, whatever
// it has.
func TestRealHost(t *testing.T) {
	checks := Preflight(context.Background(), runtime.RealHost(), DaemonJSONPath)
	var b strings.Builder
	runtime.WriteChecks(&b, checks)
	t.Log("\n" + b.String())
	require.Len(t, checks, 3)
}
