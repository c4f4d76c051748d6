package firecracker

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/runtime"
)

type fakeInfo struct {
	name string
	mode fs.FileMode
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

type result struct {
	out string
	err error
}

// fake is a machine made of maps. Anything not in them doesn't exist.
type fake struct {
	goos     string
	onPath   map[string]string
	files    map[string]fs.FileMode // what Stat finds
	denied   map[string]bool        // paths Access refuses
	contents map[string]string      // what ReadFile reads
	run      map[string]result      // command line -> result
	env      map[string]string
	euid     int
	cacheDir string
}

func notExist(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

func (f *fake) host() runtime.Host {
	return runtime.Host{
		GOOS: f.goos,
		LookPath: func(name string) (string, error) {
			if p, ok := f.onPath[name]; ok {
				return p, nil
			}
			return "", errors.New(`exec: "` + name + `": executable file not found in $PATH`)
		},
		ReadFile: func(name string) ([]byte, error) {
			if c, ok := f.contents[name]; ok {
				return []byte(c), nil
			}
			return nil, notExist("open", name)
		},
		Stat: func(name string) (fs.FileInfo, error) {
			if m, ok := f.files[name]; ok {
				return fakeInfo{name: name, mode: m}, nil
			}
			return nil, notExist("stat", name)
		},
		Access: func(path string, mode uint32) error {
			if _, ok := f.files[path]; !ok {
				return &fs.PathError{Op: "access", Path: path, Err: syscall.ENOENT}
			}
			if f.denied[path] {
				return &fs.PathError{Op: "access", Path: path, Err: syscall.EACCES}
			}
			return nil
		},
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			if _, ok := ctx.Deadline(); !ok {
				return nil, errors.New("no timeout on the command")
			}
			r, ok := f.run[strings.Join(append([]string{name}, args...), " ")]
			if !ok {
				return nil, errors.New("unexpected command")
			}
			return []byte(r.out), r.err
		},
		Getenv:   func(k string) string { return f.env[k] },
		Geteuid:  func() int { return f.euid },
		CacheDir: f.cacheDir,
	}
}

const (
	home  = "/home/ada"
	cache = home + "/.cache"
	fcDir = cache + "/chalk/firecracker"
)

// good is an Ubuntu 22.04 machine with everything set up.
func good() *fake {
	return &fake{
		goos: "linux",
		onPath: map[string]string{
			"docker":    "/usr/bin/docker",
			"pasta":     "/usr/bin/pasta",
			"ip":        "/usr/sbin/ip",
			"iptables":  "/usr/sbin/iptables",
			"mkfs.ext4": "/usr/sbin/mkfs.ext4",
			"debugfs":   "/usr/sbin/debugfs",
		},
		files: map[string]fs.FileMode{
			"/dev/kvm": fs.ModeDevice | fs.ModeCharDevice | 0o660,
			home:       fs.ModeDir | 0o755,
			cache:      fs.ModeDir | 0o755,
		},
		denied:   map[string]bool{},
		contents: map[string]string{},
		run: map[string]result{
			"docker buildx version": {out: "github.com/docker/buildx 0.14.1 0.14.1-0ubuntu1~22.04.1\n"},
		},
		env:      map[string]string{},
		euid:     1000,
		cacheDir: cache,
	}
}

var allGood = map[string]runtime.Status{
	"/dev/kvm":                     runtime.Pass,
	"docker":                       runtime.Pass,
	"docker buildx":                runtime.Pass,
	"pasta, ip, iptables":          runtime.Pass,
	"mkfs.ext4, debugfs":           runtime.Pass,
	"user namespaces for pasta":    runtime.Pass,
	"jailer":                       runtime.Skip,
	"firecracker and guest kernel": runtime.Pass,
}

// with returns allGood changed by the pairs name, status, name, status...
func with(pairs ...any) map[string]runtime.Status {
	m := map[string]runtime.Status{}
	for k, v := range allGood {
		m[k] = v
	}
	for i := 0; i < len(pairs); i += 2 {
		m[pairs[i].(string)] = pairs[i+1].(runtime.Status)
	}
	return m
}

func TestPreflight(t *testing.T) {
	type want struct {
		check  string
		fix    string // exact; "" when the check has none
		detail string // substring
	}
	tests := []struct {
		name     string
		modify   func(*fake)
		statuses map[string]runtime.Status
		want     []want
		canRun   bool
	}{
		{
			name:     "all good",
			modify:   func(*fake) {},
			statuses: allGood,
			want: []want{
				{check: "/dev/kvm", detail: "read and write access"},
				{check: "docker buildx", detail: "github.com/docker/buildx 0.14.1"},
				{check: "pasta, ip, iptables", detail: "/usr/bin/pasta, /usr/sbin/ip, /usr/sbin/iptables"},
				{check: "firecracker and guest kernel", detail: "downloaded on first run into " + fcDir},
			},
			canRun: true,
		},
		{
			name:     "no /dev/kvm",
			modify:   func(f *fake) { delete(f.files, "/dev/kvm") },
			statuses: with("/dev/kvm", runtime.Fail),
			want: []want{{
				check:  "/dev/kvm",
				fix:    "# this machine can't run the firecracker VM; pick another runtime, e.g.\nchalk run --runtime docker ...",
				detail: "missing: this machine can't run the VM",
			}},
		},
		{
			name:     "/dev/kvm not accessible",
			modify:   func(f *fake) { f.denied["/dev/kvm"] = true },
			statuses: with("/dev/kvm", runtime.Fail),
			want: []want{{
				check:  "/dev/kvm",
				fix:    "sudo usermod -aG kvm $USER\n# then log out and log in again",
				detail: "no read and write access: permission denied",
			}},
			canRun: true,
		},
		{
			name:     "no docker",
			modify:   func(f *fake) { delete(f.onPath, "docker") },
			statuses: with("docker", runtime.Fail, "docker buildx", runtime.Skip),
			want: []want{{
				check: "docker",
				fix:   "sudo apt-get install docker.io docker-buildx\nsudo usermod -aG docker $USER\n# then log out and log in again",
			}},
			canRun: true,
		},
		{
			name: "no buildx",
			modify: func(f *fake) {
				f.run["docker buildx version"] = result{err: errors.New("docker: unknown command: docker buildx\n\nRun 'docker --help' for more information")}
			},
			statuses: with("docker buildx", runtime.Fail),
			want: []want{{
				check: "docker buildx",
				fix: "sudo apt-get install docker-buildx\n" +
					"# Debian has no docker-buildx package; build the plugin with Go instead:\n" +
					"GOBIN=/tmp/buildx go install github.com/docker/buildx/cmd/buildx@v0.38.2\n" +
					"sudo install -D -m 0755 /tmp/buildx/buildx /usr/local/lib/docker/cli-plugins/docker-buildx",
				detail: "docker buildx version failed: docker: unknown command: docker buildx",
			}},
			canRun: true,
		},
		{
			name: "no network tools",
			modify: func(f *fake) {
				delete(f.onPath, "pasta")
				delete(f.onPath, "ip")
				delete(f.onPath, "iptables")
			},
			statuses: with("pasta, ip, iptables", runtime.Fail),
			want: []want{{
				check:  "pasta, ip, iptables",
				fix:    "sudo apt-get install passt iproute2 iptables",
				detail: "not found: pasta, ip, iptables",
			}},
			canRun: true,
		},
		{
			name:     "only iptables missing",
			modify:   func(f *fake) { delete(f.onPath, "iptables") },
			statuses: with("pasta, ip, iptables", runtime.Fail),
			want:     []want{{check: "pasta, ip, iptables", fix: "sudo apt-get install iptables", detail: "not found: iptables"}},
			canRun:   true,
		},
		{
			name: "sbin tools off PATH, as for a Debian user",
			modify: func(f *fake) {
				for _, n := range []string{"ip", "iptables", "mkfs.ext4", "debugfs"} {
					delete(f.onPath, n)
				}
				f.files["/usr/sbin/ip"] = 0o755
				f.files["/sbin/iptables"] = 0o755
				f.files["/usr/sbin/mkfs.ext4"] = 0o755
				f.files["/usr/sbin/debugfs"] = 0o644 // not executable: doesn't count
			},
			statuses: with("mkfs.ext4, debugfs", runtime.Fail),
			want: []want{
				{check: "pasta, ip, iptables", detail: "/usr/bin/pasta, /usr/sbin/ip, /sbin/iptables"},
				{check: "mkfs.ext4, debugfs", fix: "sudo apt-get install e2fsprogs", detail: "not found: debugfs"},
			},
			canRun: true,
		},
		{
			name: "no e2fsprogs",
			modify: func(f *fake) {
				delete(f.onPath, "mkfs.ext4")
				delete(f.onPath, "debugfs")
			},
			statuses: with("mkfs.ext4, debugfs", runtime.Fail),
			want:     []want{{check: "mkfs.ext4, debugfs", fix: "sudo apt-get install e2fsprogs", detail: "not found: mkfs.ext4, debugfs"}},
			canRun:   true,
		},
		{
			name:     "AppArmor restricts user namespaces",
			modify:   func(f *fake) { f.contents[AppArmorUserNS] = "1\n" },
			statuses: with("user namespaces for pasta", runtime.Fail),
			want: []want{{
				check: "user namespaces for pasta",
				fix: "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\n" +
					"# this lasts until the next reboot. Or start the VM through Firecracker's jailer instead, as root:\n" +
					"sudo CHALK_FIRECRACKER_JAILER=1 chalk run ...",
				detail: "kernel.apparmor_restrict_unprivileged_userns=1",
			}},
			canRun: true,
		},
		{
			name:     "AppArmor allows user namespaces",
			modify:   func(f *fake) { f.contents[AppArmorUserNS] = "0\n" },
			statuses: allGood,
			want:     []want{{check: "user namespaces for pasta", detail: "AppArmor allows them"}},
			canRun:   true,
		},
		{
			name: "jailer as root lifts the AppArmor restriction",
			modify: func(f *fake) {
				f.contents[AppArmorUserNS] = "1\n"
				f.env[JailerEnv] = "1"
				f.euid = 0
			},
			statuses: with("user namespaces for pasta", runtime.Skip, "jailer", runtime.Pass),
			want:     []want{{check: "jailer", detail: "running as root"}},
			canRun:   true,
		},
		{
			name: "jailer without root",
			modify: func(f *fake) {
				f.contents[AppArmorUserNS] = "1\n"
				f.env[JailerEnv] = "1"
			},
			statuses: with("user namespaces for pasta", runtime.Skip, "jailer", runtime.Fail),
			want: []want{{
				check:  "jailer",
				fix:    "# the jailer needs root: run chalk run with sudo, setting the variable after sudo\nsudo CHALK_FIRECRACKER_JAILER=1 chalk run ...",
				detail: "CHALK_FIRECRACKER_JAILER=1 but chalk isn't running as root",
			}},
			canRun: true,
		},
		{
			name: "jailer variable other than 1 is off",
			modify: func(f *fake) {
				f.contents[AppArmorUserNS] = "1\n"
				f.env[JailerEnv] = "true"
			},
			statuses: with("user namespaces for pasta", runtime.Fail),
			canRun:   true,
		},
		{
			name: "cache present",
			modify: func(f *fake) {
				f.files[cache+"/chalk"] = fs.ModeDir | 0o755
				f.files[fcDir] = fs.ModeDir | 0o755
			},
			statuses: allGood,
			want:     []want{{check: "firecracker and guest kernel", detail: "cached in " + fcDir}},
			canRun:   true,
		},
		{
			name: "cache not writable",
			modify: func(f *fake) {
				f.files[cache+"/chalk"] = fs.ModeDir | 0o755
				f.files[fcDir] = fs.ModeDir | 0o755
				f.denied[fcDir] = true
			},
			statuses: with("firecracker and guest kernel", runtime.Fail),
			want: []want{{
				check:  "firecracker and guest kernel",
				fix:    `sudo chown -R "$USER" ` + fcDir,
				detail: fcDir + " is not writable: permission denied",
			}},
			canRun: true,
		},
		{
			name: "cache can't be created",
			modify: func(f *fake) {
				f.files[cache+"/chalk"] = fs.ModeDir | 0o755
				f.denied[cache+"/chalk"] = true
			},
			statuses: with("firecracker and guest kernel", runtime.Fail),
			want: []want{{
				check:  "firecracker and guest kernel",
				fix:    `sudo mkdir -p ` + fcDir + ` && sudo chown "$USER" ` + fcDir,
				detail: "can't create " + fcDir + ": permission denied",
			}},
			canRun: true,
		},
		{
			name: "cache is a file",
			modify: func(f *fake) {
				f.files[cache+"/chalk"] = fs.ModeDir | 0o755
				f.files[fcDir] = 0o644
			},
			statuses: with("firecracker and guest kernel", runtime.Fail),
			want:     []want{{check: "firecracker and guest kernel", fix: "rm " + fcDir, detail: "is not a directory"}},
			canRun:   true,
		},
		{
			name: "cache path needs quoting",
			modify: func(f *fake) {
				f.cacheDir = "/home/o'hara/my cache"
				f.files[f.cacheDir+"/chalk/firecracker"] = fs.ModeDir | 0o755
				f.denied[f.cacheDir+"/chalk/firecracker"] = true
			},
			statuses: with("firecracker and guest kernel", runtime.Fail),
			want: []want{{
				check: "firecracker and guest kernel",
				fix:   `sudo chown -R "$USER" '/home/o'\''hara/my cache/chalk/firecracker'`,
			}},
			canRun: true,
		},
		{
			name:     "no cache dir",
			modify:   func(f *fake) { f.cacheDir = "" },
			statuses: with("firecracker and guest kernel", runtime.Fail),
			want: []want{{
				check:  "firecracker and guest kernel",
				fix:    "export XDG_CACHE_HOME=~/.cache",
				detail: "neither XDG_CACHE_HOME nor HOME is set",
			}},
			canRun: true,
		},
		{
			name: "everything missing",
			modify: func(f *fake) {
				f.onPath = map[string]string{}
				f.denied["/dev/kvm"] = true
				f.contents[AppArmorUserNS] = "1"
			},
			statuses: with(
				"/dev/kvm", runtime.Fail,
				"docker", runtime.Fail,
				"docker buildx", runtime.Skip,
				"pasta, ip, iptables", runtime.Fail,
				"mkfs.ext4, debugfs", runtime.Fail,
				"user namespaces for pasta", runtime.Fail,
			),
			canRun: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := good()
			tt.modify(f)
			h := f.host()
			checks := Preflight(context.Background(), h)

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
			require.Equal(t, tt.statuses, got)
			require.Len(t, checks, len(allGood), "check names must be unique")

			for _, w := range tt.want {
				c := find(t, checks, w.check)
				require.Equal(t, w.fix, c.Fix, "fix of %q", w.check)
				require.Contains(t, c.Detail, w.detail, "detail of %q", w.check)
			}
			require.Equal(t, tt.canRun, CanRunVM(h))
		})
	}
}

func TestPreflightNotLinux(t *testing.T) {
	f := good()
	f.goos = "darwin"
	h := f.host()
	checks := Preflight(context.Background(), h)
	require.Equal(t, []runtime.Check{{
		Runtime: Name,
		Name:    "linux",
		Status:  runtime.Fail,
		Detail:  "this machine runs darwin: firecracker needs Linux with KVM",
		Fix:     "# this machine can't run the firecracker VM; pick another runtime, e.g.\nchalk run --runtime docker ...",
	}}, checks)
	require.False(t, CanRunVM(h))
}

func TestCacheDir(t *testing.T) {
	tests := []struct {
		name string
		xdg  string
		home string
		want string
	}{
		{"XDG_CACHE_HOME", "/var/cache/ada", "/home/ada", "/var/cache/ada/chalk/firecracker"},
		{"home", "", "/home/ada", "/home/ada/.cache/chalk/firecracker"},
		{"relative XDG_CACHE_HOME is ignored", "cache", "/home/ada", "/home/ada/.cache/chalk/firecracker"},
		{"neither", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "XDG_CACHE_HOME" {
					return tt.xdg
				}
				return ""
			}
			h := runtime.Host{CacheDir: runtime.UserCacheDir(getenv, tt.home)}
			require.Equal(t, tt.want, CacheDir(h))
		})
	}
}

func TestUseJailer(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "": false, "0": false, "yes": false} {
		h := runtime.Host{Getenv: func(string) string { return v }}
		require.Equal(t, want, UseJailer(h), "%s=%q", JailerEnv, v)
	}
}

// TestRealHost runs the real host's Run, and the whole preflight read-only
// against this machine, whatever it has.
func TestRealHost(t *testing.T) {
	h := runtime.RealHost()
	ctx := context.Background()

	out, err := h.Run(ctx, "sh", "-c", "echo out; echo oops >&2; exit 3")
	require.Equal(t, "out\n", string(out))
	require.EqualError(t, err, "oops")
	var re *runtime.RunError
	require.ErrorAs(t, err, &re)

	out, err = h.Run(ctx, "sh", "-c", "echo fine")
	require.NoError(t, err)
	require.Equal(t, "fine\n", string(out))

	checks := Preflight(ctx, h)
	var b strings.Builder
	runtime.WriteChecks(&b, checks)
	t.Log("\n" + b.String())
	for _, c := range checks {
		require.Equal(t, Name, c.Runtime)
		require.Contains(t, []runtime.Status{runtime.Pass, runtime.Fail, runtime.Skip}, c.Status)
	}
}

func find(t *testing.T, checks []runtime.Check, name string) runtime.Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check named %q", name)
	return runtime.Check{}
}
