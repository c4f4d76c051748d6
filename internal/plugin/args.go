package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/chalk-rl/chalk/internal/hint"
)

// The flags a container_run_args plugin may add are an allow list: each
// flag below, with its value checked. Everything else is refused, and the
// flags that would undo the sandbox's confinement are refused with the
// reason (denied). docs/plugins.md lists both.
var allowed = map[string]func(string) error{
	"--device":      checkDevice,
	"--gpus":        nonEmpty,
	"--group-add":   nonEmpty,
	"--shm-size":    nonEmpty,
	"--cpuset-cpus": nonEmpty,
	"--cpuset-mems": nonEmpty,
	"--ulimit":      checkUlimit,
	"--env":         checkEnv,
	"--label":       checkLabel,
	"--volume":      checkVolume,
	"--mount":       checkMount,
}

// short are the one-letter spellings of allowed flags.
var short = map[string]string{"-e": "--env", "-l": "--label", "-v": "--volume"}

// denied are flags that would undo confinement or that Chalk sets itself,
// with the reason given when a plugin asks for one.
var denied = map[string]string{
	"--privileged":         "it gives the sandbox every capability and every host device",
	"--cap-add":            "it gives the sandbox capabilities Chalk drops",
	"--cap-drop":           "Chalk sets the sandbox's capabilities itself",
	"--security-opt":       "it can turn off seccomp, AppArmor or SELinux confinement",
	"--network":            "Chalk sets the sandbox's network; --network host would bypass its firewall",
	"--net":                "Chalk sets the sandbox's network; --net host would bypass its firewall",
	"--network-alias":      "Chalk sets the sandbox's network",
	"--add-host":           "Chalk sets the sandbox's network",
	"--dns":                "Chalk sets the sandbox's network",
	"--publish":            "it would open a port into the sandbox",
	"-p":                   "it would open a port into the sandbox",
	"--publish-all":        "it would open ports into the sandbox",
	"-P":                   "it would open ports into the sandbox",
	"--pid":                "--pid host would show the sandbox every host process",
	"--ipc":                "--ipc host would share the host's IPC namespace",
	"--uts":                "--uts host would share the host's UTS namespace",
	"--userns":             "--userns host would undo the user namespace",
	"--cgroupns":           "--cgroupns host would show the host's cgroups",
	"--cgroup-parent":      "Chalk places the sandbox's cgroup itself",
	"--device-cgroup-rule": "it would let the sandbox create and use any device it can name",
	"--runtime":            "it would swap the engine's runtime, e.g. take a docker:gvisor sandbox out of gVisor",
	"--user":               "the harness must start as root to confine the student",
	"-u":                   "the harness must start as root to confine the student",
	"--entrypoint":         "the sandbox's entrypoint is Chalk's harness",
	"--volumes-from":       "it would mount another container's volumes",
	"--sysctl":             "it would change kernel settings Chalk relies on",
	"--memory":             "Chalk sets it: answer memory from the hardware_limits plugin instead",
	"-m":                   "Chalk sets it: answer memory from the hardware_limits plugin instead",
	"--memory-swap":        "Chalk sets the sandbox's memory",
	"--cpus":               "Chalk sets it: answer cpus from the hardware_limits plugin instead",
	"--pids-limit":         "Chalk sets the sandbox's process limit",
	"--oom-kill-disable":   "Chalk relies on the kernel's OOM killer",
	"--name":               "Chalk names the sandbox",
	"--rm":                 "Chalk removes the sandbox itself",
	"--read-only":          "Chalk sets the sandbox's root filesystem",
	"--tmpfs":              "Chalk sets the sandbox's file systems",
	"--init":               "the harness is the sandbox's first process",
	"--restart":            "Chalk runs each sandbox once",
	"--detach":             "Chalk attaches to the sandbox itself",
	"-d":                   "Chalk attaches to the sandbox itself",
	"--interactive":        "Chalk attaches to the sandbox itself",
	"-i":                   "Chalk attaches to the sandbox itself",
	"--tty":                "Chalk attaches to the sandbox itself",
	"-t":                   "Chalk attaches to the sandbox itself",
	"--platform":           "Chalk picks the image for the machine",
	"--pull":               "Chalk builds the image itself",
}

// AllowedFlags lists the flags a container_run_args plugin may add.
func AllowedFlags() []string {
	var fs []string
	for f := range allowed {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	return fs
}

// CheckArgs checks flags a container_run_args plugin answered. Each must
// be an allowed flag, as --flag=value or --flag value, with a value that
// keeps the sandbox confined.
func CheckArgs(args []string) error {
	allowedList := "the flags a plugin may add are " + strings.Join(AllowedFlags(), ", ") + "; see docs/plugins.md"
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			return hint.Newf("answer only flags, each with its value: "+allowedList,
				"args[%d] %q is not a flag: the engine would take it as the image or the command", i, a)
		}
		name, value, hasValue := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") && len(a) > 2 {
			// -vVALUE, -v=VALUE, -eKEY=V: one letter and its value.
			name, value, hasValue = a[:2], strings.TrimPrefix(a[2:], "="), true
		}
		if long, ok := short[name]; ok {
			name = long
		}
		if why, ok := denied[name]; ok {
			return hint.Newf("remove it from the plugin's answer: "+allowedList,
				"args[%d] %q is not allowed: %s", i, a, why)
		}
		check, ok := allowed[name]
		if !ok {
			return hint.Newf("remove it from the plugin's answer: "+allowedList,
				"args[%d] %q is not a flag a plugin may add", i, a)
		}
		if !hasValue {
			if i+1 >= len(args) {
				return hint.Newf(fmt.Sprintf("give it a value: %s=VALUE", name), "args[%d] %s has no value", i, name)
			}
			i++
			value = args[i]
		}
		if err := check(value); err != nil {
			return hint.Newf("remove it from the plugin's answer or change its value; see docs/plugins.md",
				"args[%d] %s %q is not allowed: %v", i, name, value, err)
		}
	}
	return nil
}

func nonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("it is empty")
	}
	return nil
}

// Host devices a plugin may not pass: memory, ports, and disks.
var (
	deniedDevices     = []string{"/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/console"}
	blockDeviceRE     = regexp.MustCompile(`^/dev/(sd|hd|vd|xvd|nvme|loop|dm-|md|mmcblk|sr|nbd|rbd|zd|mapper/|disk/)`)
	cdiDeviceRE       = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*=[a-zA-Z0-9*][a-zA-Z0-9._:*-]*$`)
	envNameRE         = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	namedVolumeRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]+$`)
	allowedUlimits    = []string{"memlock", "stack", "nofile"}
	allowedVolumeOpts = []string{"ro", "rw", "z", "Z", "nocopy", "private", "rprivate", "slave", "rslave", "cached", "delegated", "consistent"}
)

// checkDevice allows a host device under /dev (not memory, ports or
// disks), or a CDI device name such as nvidia.com/gpu=all.
func checkDevice(v string) error {
	if cdiDeviceRE.MatchString(v) {
		return nil
	}
	host, _, _ := strings.Cut(v, ":")
	if !strings.HasPrefix(host, "/dev/") {
		return errors.New("a device is a path under /dev, or a CDI name such as nvidia.com/gpu=all")
	}
	clean := path.Clean(host)
	if !strings.HasPrefix(clean, "/dev/") {
		return errors.New("the device path leads out of /dev")
	}
	real := clean
	if r, err := filepath.EvalSymlinks(clean); err == nil {
		real = r
	}
	for _, p := range []string{clean, real} {
		if slices.Contains(deniedDevices, p) {
			return fmt.Errorf("%s gives access to the host's memory or kernel", p)
		}
		if blockDeviceRE.MatchString(p) {
			return fmt.Errorf("%s is a host disk", p)
		}
	}
	if st, err := os.Stat(real); err == nil && st.Mode()&fs.ModeDevice != 0 && st.Mode()&fs.ModeCharDevice == 0 {
		return fmt.Errorf("%s is a block device, a host disk", real)
	}
	return nil
}

func checkUlimit(v string) error {
	name, _, ok := strings.Cut(v, "=")
	if !ok || !slices.Contains(allowedUlimits, name) {
		return fmt.Errorf("a plugin may raise only %s, as NAME=SOFT[:HARD]", strings.Join(allowedUlimits, ", "))
	}
	return nil
}

func checkEnv(v string) error {
	k, _, ok := strings.Cut(v, "=")
	switch {
	case !ok:
		return errors.New("write KEY=VALUE: a bare KEY would copy the variable from Chalk's own environment")
	case !envNameRE.MatchString(k):
		return fmt.Errorf("%q is not a variable name", k)
	case strings.HasPrefix(strings.ToUpper(k), "CHALK_"):
		return errors.New("CHALK_ variables configure the harness; set them in chalk.toml or your shell")
	}
	return nil
}

func checkLabel(v string) error {
	if strings.HasPrefix(v, "dev.chalk.") {
		return errors.New("dev.chalk. labels are Chalk's own: it finds its sandboxes by them")
	}
	return nonEmpty(v)
}

// Host paths a mount may not expose, nor contain: the host's own
// configuration, kernel interfaces, and the engines' sockets and state.
var sensitivePaths = []string{
	"/boot", "/dev", "/etc", "/proc", "/root", "/run", "/sys", "/var/run",
	"/var/lib/docker", "/var/lib/containers", "/var/lib/containerd", "/var/lib/kubelet",
}

// Paths in the sandbox a mount may not cover.
var reservedTargets = []string{"/.chalk", "/out", "/proc", "/sys", "/dev"}

// checkVolume checks -v SOURCE:TARGET[:OPTIONS].
func checkVolume(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return errors.New("write SOURCE:TARGET[:OPTIONS]")
	}
	if len(parts) == 3 {
		for _, o := range strings.Split(parts[2], ",") {
			if !slices.Contains(allowedVolumeOpts, o) {
				return fmt.Errorf("option %q: a plugin may use %s", o, strings.Join(allowedVolumeOpts, ", "))
			}
		}
	}
	if err := checkSource(parts[0]); err != nil {
		return err
	}
	return checkTarget(parts[1])
}

// checkMount checks --mount type=...,source=...,target=....
func checkMount(v string) error {
	kv := map[string]string{}
	for _, f := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(f, "=")
		switch k {
		case "type", "source", "src", "target", "destination", "dst", "readonly", "ro", "bind-propagation",
			"volume-nocopy", "tmpfs-size", "tmpfs-mode", "consistency":
			kv[k] = val
		default:
			return fmt.Errorf("mount option %q: a plugin may use type, source, target, readonly, bind-propagation, volume-nocopy, tmpfs-size, tmpfs-mode", k)
		}
	}
	switch t := kv["type"]; t {
	case "", "bind", "volume", "tmpfs":
	default:
		return fmt.Errorf("mount type %q: a plugin may mount bind, volume or tmpfs", t)
	}
	if bp, ok := kv["bind-propagation"]; ok && !slices.Contains([]string{"private", "rprivate", "slave", "rslave"}, bp) {
		return fmt.Errorf("bind-propagation %q would carry mounts back to the host; use private or rslave", bp)
	}
	src := first(kv, "source", "src")
	if kv["type"] != "tmpfs" {
		if src == "" {
			return errors.New("name the source")
		}
		if err := checkSource(src); err != nil {
			return err
		}
	}
	return checkTarget(first(kv, "target", "destination", "dst"))
}

func first(kv map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := kv[k]; ok {
			return v
		}
	}
	return ""
}

// checkSource allows a named volume, or a host path that neither is nor
// holds anything in sensitivePaths nor a socket.
func checkSource(src string) error {
	if !strings.HasPrefix(src, "/") {
		if namedVolumeRE.MatchString(src) {
			return nil
		}
		return fmt.Errorf("source %q is neither an absolute host path nor a volume name", src)
	}
	clean := filepath.Clean(src)
	real := clean
	if r, err := filepath.EvalSymlinks(clean); err == nil {
		real = r
	}
	for _, s := range []string{clean, real} {
		if s == "/" {
			return errors.New("it would expose the host's whole file system")
		}
		for _, sp := range sensitivePaths {
			if s == sp || strings.HasPrefix(s, sp+"/") {
				return fmt.Errorf("%s is the host's own (%s)", s, sp)
			}
			if strings.HasPrefix(sp, s+"/") {
				return fmt.Errorf("%s holds %s, which is the host's own", s, sp)
			}
		}
		if strings.HasSuffix(s, ".sock") {
			return fmt.Errorf("%s is a socket: an engine's socket gives root on the host", s)
		}
		if st, err := os.Stat(s); err == nil && st.Mode()&fs.ModeSocket != 0 {
			return fmt.Errorf("%s is a socket: an engine's socket gives root on the host", s)
		}
	}
	return nil
}

func checkTarget(t string) error {
	if !strings.HasPrefix(t, "/") {
		return fmt.Errorf("target %q is not an absolute path in the sandbox", t)
	}
	c := path.Clean(t)
	if c == "/" {
		return errors.New("it would cover the sandbox's root")
	}
	for _, r := range reservedTargets {
		if c == r || strings.HasPrefix(c, r+"/") {
			return fmt.Errorf("target %s is Chalk's or the kernel's (%s)", c, r)
		}
	}
	return nil
}
