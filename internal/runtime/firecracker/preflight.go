// Package firecracker runs sandboxes as Firecracker microVMs on Linux with
// KVM: each student gets its own guest kernel.
package firecracker

import (
	"context"
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
const Name = "firecracker"

// KVMDevice is the device Firecracker needs read and write access to.
const KVMDevice = "/dev/kvm"

// JailerEnv names the variable that, set to "1", makes Chalk start the VM
// through Firecracker's jailer, as root, instead of unprivileged with pasta.
const JailerEnv = "CHALK_FIRECRACKER_JAILER"

// AppArmorUserNS is the sysctl file that, holding 1, stops pasta from
// creating the user namespace it needs (Ubuntu 24.04 and later).
const AppArmorUserNS = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"

// runTimeout bounds each command a check runs, so a hung tool can't hang
// the preflight.
const runTimeout = 15 * time.Second

// sbinDirs are searched after PATH: Debian leaves them off an ordinary
// user's PATH, yet ip, iptables, mkfs.ext4 and debugfs live there.
var sbinDirs = []string{"/usr/sbin", "/sbin"}

// CanRunVM reports whether this machine can run the Firecracker VM at all:
// it is Linux and has /dev/kvm. Chalk picks firecracker as the default
// runtime when it does, and then Preflight says what else is missing.
func CanRunVM(h runtime.Host) bool {
	if h.GOOS != "linux" {
		return false
	}
	_, err := h.Stat(KVMDevice)
	return err == nil
}

// UseJailer reports whether CHALK_FIRECRACKER_JAILER is set to 1.
func UseJailer(h runtime.Host) bool {
	return h.Getenv(JailerEnv) == "1"
}

// CacheDir is where Chalk keeps the Firecracker binary and the guest kernel:
// chalk/firecracker under the user's cache directory, or "" when that is
// unknown.
func CacheDir(h runtime.Host) string {
	if h.CacheDir == "" {
		return ""
	}
	return filepath.Join(h.CacheDir, "chalk", "firecracker")
}

// LookTool finds an executable on PATH, then in /usr/sbin and /sbin, which
// Debian leaves off an ordinary user's PATH.
func LookTool(h runtime.Host, name string) (string, error) {
	p, err := h.LookPath(name)
	if err == nil {
		return p, nil
	}
	for _, dir := range sbinDirs {
		candidate := filepath.Join(dir, name)
		if fi, serr := h.Stat(candidate); serr == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return candidate, nil
		}
	}
	return "", err
}

// Preflight checks everything the firecracker runtime needs on this
// machine, and gives the fix for each requirement that isn't met. It only
// looks; it never changes the machine.
func Preflight(ctx context.Context, h runtime.Host) []runtime.Check {
	if h.GOOS != "linux" {
		return []runtime.Check{{
			Runtime: Name,
			Name:    "linux",
			Status:  runtime.Fail,
			Detail:  fmt.Sprintf("this machine runs %s: firecracker needs Linux with KVM", h.GOOS),
			Fix:     fixNoKVM,
		}}
	}
	checks := []runtime.Check{
		checkKVM(h),
	}
	docker := checkDocker(h)
	checks = append(checks, docker, checkBuildx(ctx, h, docker.Status == runtime.Pass))
	checks = append(checks,
		checkTools(h, "pasta, ip, iptables", []tool{
			{"pasta", "passt"}, {"ip", "iproute2"}, {"iptables", "iptables"},
		}),
		checkTools(h, "mkfs.ext4, debugfs", []tool{
			{"mkfs.ext4", "e2fsprogs"}, {"debugfs", "e2fsprogs"},
		}),
		checkUserNS(h),
		checkJailer(h),
		checkCache(h),
	)
	return checks
}

func pass(name, detail string) runtime.Check {
	return runtime.Check{Runtime: Name, Name: name, Status: runtime.Pass, Detail: detail}
}

func skip(name, detail string) runtime.Check {
	return runtime.Check{Runtime: Name, Name: name, Status: runtime.Skip, Detail: detail}
}

func fail(name, detail, fix string) runtime.Check {
	return runtime.Check{Runtime: Name, Name: name, Status: runtime.Fail, Detail: detail, Fix: fix}
}

// Fixes, exact as printed.
const (
	fixKVMGroup = "sudo usermod -aG kvm $USER\n# then log out and log in again"
	fixNoKVM    = "# this machine can't run the firecracker VM; pick another runtime, e.g.\nchalk run --runtime docker ..."
	fixDocker   = "sudo apt-get install docker.io docker-buildx\nsudo usermod -aG docker $USER\n# then log out and log in again"
	fixBuildx   = "sudo apt-get install docker-buildx\n" +
		"# Debian has no docker-buildx package; build the plugin with Go instead:\n" +
		"GOBIN=/tmp/buildx go install github.com/docker/buildx/cmd/buildx@" + runtime.BuildxVersion + "\n" +
		"sudo install -D -m 0755 /tmp/buildx/buildx /usr/local/lib/docker/cli-plugins/docker-buildx"
	fixAppArmor = "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\n" +
		"# this lasts until the next reboot. Or start the VM through Firecracker's jailer instead, as root:\n" +
		"sudo " + JailerEnv + "=1 chalk run ..."
	fixJailerRoot = "# the jailer needs root: run chalk run with sudo, setting the variable after sudo\n" +
		"sudo " + JailerEnv + "=1 chalk run ..."
)

func checkKVM(h runtime.Host) runtime.Check {
	const name = KVMDevice
	if _, err := h.Stat(KVMDevice); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(name, "missing: this machine can't run the VM (KVM is unavailable or virtualization is off)", fixNoKVM)
		}
		return fail(name, err.Error(), fixKVMGroup)
	}
	if err := h.Access(KVMDevice, runtime.AccessRead|runtime.AccessWrite); err != nil {
		return fail(name, "no read and write access: "+runtime.ErrText(err), fixKVMGroup)
	}
	return pass(name, "read and write access")
}

func checkDocker(h runtime.Host) runtime.Check {
	p, err := h.LookPath("docker")
	if err != nil {
		return fail("docker", "docker is not on PATH; it builds the image", fixDocker)
	}
	return pass("docker", p)
}

func checkBuildx(ctx context.Context, h runtime.Host, haveDocker bool) runtime.Check {
	const name = "docker buildx"
	if !haveDocker {
		return skip(name, "needs docker")
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	out, err := h.Run(ctx, "docker", "buildx", "version")
	if err != nil {
		return fail(name, "docker buildx version failed: "+runtime.FirstLine(err.Error()), fixBuildx)
	}
	return pass(name, runtime.FirstLine(string(out)))
}

type tool struct {
	name string // executable
	pkg  string // Debian and Ubuntu package that has it
}

func checkTools(h runtime.Host, name string, tools []tool) runtime.Check {
	var found, missing, pkgs []string
	for _, t := range tools {
		p, err := LookTool(h, t.name)
		if err == nil {
			found = append(found, p)
			continue
		}
		missing = append(missing, t.name)
		if !slices.Contains(pkgs, t.pkg) {
			pkgs = append(pkgs, t.pkg)
		}
	}
	if len(missing) > 0 {
		return fail(name, "not found: "+strings.Join(missing, ", "), "sudo apt-get install "+strings.Join(pkgs, " "))
	}
	return pass(name, strings.Join(found, ", "))
}

func checkUserNS(h runtime.Host) runtime.Check {
	const name = "user namespaces for pasta"
	if UseJailer(h) {
		return skip(name, JailerEnv+"=1: the jailer doesn't need them")
	}
	b, err := h.ReadFile(AppArmorUserNS)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return pass(name, "AppArmor doesn't restrict them")
	case err != nil:
		return skip(name, "can't read "+AppArmorUserNS+": "+runtime.ErrText(err))
	}
	if strings.TrimSpace(string(b)) == "1" {
		return fail(name, "AppArmor stops pasta from creating its user namespace (kernel.apparmor_restrict_unprivileged_userns=1)", fixAppArmor)
	}
	return pass(name, "AppArmor allows them")
}

func checkJailer(h runtime.Host) runtime.Check {
	const name = "jailer"
	if !UseJailer(h) {
		return skip(name, JailerEnv+" is not 1")
	}
	if h.Geteuid() != 0 {
		return fail(name, JailerEnv+"=1 but chalk isn't running as root", fixJailerRoot)
	}
	return pass(name, "running as root")
}

func checkCache(h runtime.Host) runtime.Check {
	const name = "firecracker and guest kernel"
	dir := CacheDir(h)
	if dir == "" {
		return fail(name, "can't find the cache directory: neither XDG_CACHE_HOME nor HOME is set",
			"export XDG_CACHE_HOME=~/.cache")
	}
	fixOwn := "sudo chown -R \"$USER\" " + runtime.ShellQuote(dir)
	fi, err := h.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return fail(name, dir+" is not a directory", "rm "+runtime.ShellQuote(dir))
	case err == nil:
		if aerr := h.Access(dir, runtime.AccessRead|runtime.AccessWrite|runtime.AccessExec); aerr != nil {
			return fail(name, dir+" is not writable: "+runtime.ErrText(aerr), fixOwn)
		}
		return pass(name, "cached in "+dir)
	case !errors.Is(err, fs.ErrNotExist):
		return fail(name, runtime.ErrText(err), fixOwn)
	}
	// Absent: Chalk creates it on the first run, so the nearest directory
	// that exists must let us create it.
	parent := filepath.Dir(dir)
	for {
		if _, err := h.Stat(parent); err == nil {
			break
		}
		next := filepath.Dir(parent)
		if next == parent {
			break
		}
		parent = next
	}
	if aerr := h.Access(parent, runtime.AccessWrite|runtime.AccessExec); aerr != nil {
		return fail(name, fmt.Sprintf("can't create %s: %s", dir, runtime.ErrText(aerr)),
			"sudo mkdir -p "+runtime.ShellQuote(dir)+" && sudo chown \"$USER\" "+runtime.ShellQuote(dir))
	}
	return pass(name, "downloaded on first run into "+dir)
}
