package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExecSpec is what the student's first process is told before it becomes
// the student: who to be, which cgroups to join and what to run.
type ExecSpec struct {
	UID  int      `json:"uid"`
	GID  int      `json:"gid"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// Cgroups are cgroup.procs files to write the process's pid into
	// before it drops root.
	Cgroups []string `json:"cgroups,omitempty"`
	// NoSeccomp leaves out the filter that refuses namespace and mount
	// system calls (for tests of the filter itself).
	NoSeccomp bool `json:"no_seccomp,omitempty"`
}

// ExecArgs are the argument after the chalk binary that starts the exec
// helper: `chalk harness exec-student`.
var ExecArgs = []string{"harness", "exec-student"}

// Command returns a command that starts spec as the student through self
// (the chalk binary): the helper joins the cgroups, drops every
// capability, sets no_new_privs, installs the seccomp filter, becomes
// spec.UID and execs spec.Argv. Start it with Start below, which reports
// a failure to reach the exec as an error.
func Command(self string, spec ExecSpec) *exec.Cmd {
	cmd := exec.Command(self, ExecArgs...)
	cmd.Env = []string{} // the student's environment travels in spec
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Args = append([]string{"chalk-student"}, ExecArgs...)
	return cmd
}

// Start starts cmd (from Command) with spec and waits until the helper
// has exec'd the student, or failed to: the error then says why (for
// example, the student's command does not exist).
func Start(cmd *exec.Cmd, spec ExecSpec) error {
	specR, specW, err := os.Pipe()
	if err != nil {
		return err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return err
	}
	cmd.ExtraFiles = []*os.File{specR, statusW}
	err = cmd.Start()
	specR.Close()
	statusW.Close()
	if err != nil {
		specW.Close()
		statusR.Close()
		return err
	}
	go func() {
		_ = json.NewEncoder(specW).Encode(spec)
		specW.Close()
	}()
	msg, _ := io.ReadAll(io.LimitReader(statusR, 4096))
	statusR.Close()
	if len(msg) > 0 {
		_ = cmd.Wait()
		return errors.New(strings.TrimSpace(string(msg)))
	}
	return nil
}

// Exec is the helper's body, in the process Command started, as root. It
// returns only on failure, after reporting it to the harness.
func Exec() error {
	runtime.LockOSThread() // prctl and exec act on this thread
	specF := os.NewFile(3, "spec")
	statusF := os.NewFile(4, "status")
	if specF == nil || statusF == nil {
		return errors.New("chalk harness exec-student is started by the harness, not by hand")
	}
	unix.CloseOnExec(4)
	fail := func(err error) error {
		fmt.Fprintf(statusF, "%v", err)
		statusF.Close()
		return err
	}
	var spec ExecSpec
	err := json.NewDecoder(specF).Decode(&spec)
	specF.Close()
	if err != nil {
		return fail(fmt.Errorf("read the student's spec: %w", err))
	}
	if spec.UID <= 0 || spec.GID <= 0 {
		return fail(fmt.Errorf("refusing to run the student as uid %d gid %d", spec.UID, spec.GID))
	}
	if len(spec.Argv) == 0 {
		return fail(errors.New("the student's command is empty"))
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return fail(fmt.Errorf("start %s: %w", strings.Join(spec.Argv, " "), err))
	}
	pid := strconv.Itoa(os.Getpid())
	for _, f := range spec.Cgroups {
		if err := os.WriteFile(f, []byte(pid), 0); err != nil {
			return fail(fmt.Errorf("join the student's cgroup: %w", err))
		}
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fail(fmt.Errorf("set the core dump limit: %w", err))
	}
	if err := dropPrivileges(spec); err != nil {
		return fail(err)
	}
	if !spec.NoSeccomp {
		if err := installSeccomp(); err != nil {
			return fail(fmt.Errorf("install the student's seccomp filter: %w", err))
		}
	}
	// The parent-death signal is cleared when the uid changes, so it is
	// set again now: if the harness dies, so does the student.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fail(fmt.Errorf("set the parent-death signal: %w", err))
	}
	if err := os.Chdir(spec.Dir); err != nil {
		return fail(fmt.Errorf("enter the student's workdir: %w", err))
	}
	err = syscall.Exec(path, spec.Argv, spec.Env)
	return fail(fmt.Errorf("start %s: %w", strings.Join(spec.Argv, " "), err))
}

// dropPrivileges empties the capability bounding set, sets no_new_privs
// and becomes spec's uid and gid with no supplementary groups. Changing
// every uid from 0 clears the permitted, effective and ambient sets; the
// empty bounding set and no_new_privs keep a set-uid binary from giving
// any back.
func dropPrivileges(spec ExecSpec) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("clear the supplementary groups: %w", err)
	}
	if err := syscall.Setresgid(spec.GID, spec.GID, spec.GID); err != nil {
		return fmt.Errorf("become gid %d: %w", spec.GID, err)
	}
	if err := syscall.Setresuid(spec.UID, spec.UID, spec.UID); err != nil {
		return fmt.Errorf("become uid %d: %w", spec.UID, err)
	}
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read back the capabilities: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("the student still holds capabilities after dropping root")
		}
	}
	return nil
}

// lastCap is the highest capability number the kernel knows.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63, nil // try them all; unknown ones fail with EINVAL
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("read /proc/sys/kernel/cap_last_cap: %w", err)
	}
	return n, nil
}

// lookPath finds file on the PATH in env, as the shell would.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		if err := executable(file); err != nil {
			return "", err
		}
		return file, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: permission denied", p)
	}
	return nil
}
