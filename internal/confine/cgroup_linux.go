package confine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup is the student's cgroup, below the sandbox's own: on cgroup v1
// one directory in each of the memory and pids hierarchies, on v2 one
// directory. The kernel holds the student to its limits.
type Cgroup struct {
	Version int
	// Dirs are the cgroup's directories: memory then pids on v1, one on v2.
	Dirs []string
	// remounted are cgroup mounts made writable for this cgroup.
	remounted []string
}

// HarnessCgroup is where the harness moves itself on cgroup v2, so that
// the sandbox's cgroup can hand controllers to the student's: a v2
// cgroup with processes of its own cannot.
const HarnessCgroup = "chalk_harness"

// StudentCgroup is the student's cgroup's name in a run.
const StudentCgroup = "chalk_student"

// cgroupMount is one cgroup filesystem this process sees.
type cgroupMount struct {
	point, root string
	v2          bool
	controllers []string // v1 only
	readOnly    bool
}

// NewCgroup makes the cgroup name below this process's own with lim's
// memory and process limits. It makes a read-only cgroup mount writable
// when it can (that takes CAP_SYS_ADMIN). The error says why there is
// no cgroup; the caller falls back to a watchdog.
func NewCgroup(name string, lim Limits) (*Cgroup, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	if v2 := findV2(mounts); v2 != nil && len(mountsWith(mounts, "memory")) == 0 {
		return newCgroupV2(name, lim, *v2, own[""])
	}
	return newCgroupV1(name, lim, mounts, own)
}

// findV2 finds the unified hierarchy at /sys/fs/cgroup; a hybrid host's
// /sys/fs/cgroup/unified holds no controllers and does not count.
func findV2(mounts []cgroupMount) *cgroupMount {
	for i := range mounts {
		if mounts[i].v2 && mounts[i].point == "/sys/fs/cgroup" {
			return &mounts[i]
		}
	}
	return nil
}

// ownPath is this process's cgroup in the v1 hierarchy of controller.
func ownPath(own map[string]string, controller string) string {
	for k, v := range own {
		if slices.Contains(strings.Split(k, ","), controller) {
			return v
		}
	}
	return "/"
}

func mountsWith(mounts []cgroupMount, controller string) []cgroupMount {
	var out []cgroupMount
	for _, m := range mounts {
		if !m.v2 && slices.Contains(m.controllers, controller) {
			out = append(out, m)
		}
	}
	return out
}

// dirOf is the directory of this process's cgroup path in mount m.
func dirOf(m cgroupMount, path string) (string, error) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("this process's cgroup %s is outside the cgroup mount at %s", path, m.point)
	}
	return filepath.Join(m.point, rel), nil
}

func newCgroupV1(name string, lim Limits, mounts []cgroupMount, own map[string]string) (*Cgroup, error) {
	cg := &Cgroup{Version: 1}
	for _, ctl := range []string{"memory", "pids"} {
		ms := mountsWith(mounts, ctl)
		if len(ms) == 0 {
			cg.undo()
			return nil, fmt.Errorf("no cgroup v1 %s hierarchy is mounted", ctl)
		}
		m := ms[0]
		parent, err := dirOf(m, ownPath(own, ctl))
		if err != nil {
			cg.undo()
			return nil, err
		}
		if err := cg.writable(m, parent); err != nil {
			cg.undo()
			return nil, err
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			cg.undo()
			return nil, fmt.Errorf("make cgroup %s: %w", dir, err)
		}
		cg.Dirs = append(cg.Dirs, dir)
	}
	mem, pids := cg.Dirs[0], cg.Dirs[1]
	var err error
	if lim.MemoryBytes > 0 {
		err = writeFile(mem, "memory.limit_in_bytes", strconv.FormatInt(lim.MemoryBytes, 10))
		if err == nil && exists(filepath.Join(mem, "memory.memsw.limit_in_bytes")) {
			// No swap beyond the limit either.
			err = writeFile(mem, "memory.memsw.limit_in_bytes", strconv.FormatInt(lim.MemoryBytes, 10))
		}
		if err == nil && exists(filepath.Join(mem, "memory.swappiness")) {
			_ = writeFile(mem, "memory.swappiness", "0")
		}
		if err == nil {
			// v1 has no memory.oom.group: the kernel would kill only the
			// process over the limit, and the others could run on (a
			// shell could say its child lived) before the watchdog ended
			// them. Instead the kernel holds them all at the limit, and
			// the watchdog, seeing the cgroup under OOM, ends them all.
			_ = writeFile(mem, "memory.oom_control", "1")
		}
	}
	if err == nil && lim.Processes > 0 {
		err = writeFile(pids, "pids.max", strconv.Itoa(lim.Processes))
	}
	if err != nil {
		cg.Remove()
		return nil, err
	}
	return cg, nil
}

func newCgroupV2(name string, lim Limits, m cgroupMount, path string) (*Cgroup, error) {
	cg := &Cgroup{Version: 2}
	parent, err := dirOf(m, path)
	if err != nil {
		return nil, err
	}
	if err := cg.writable(m, parent); err != nil {
		return nil, err
	}
	// A v2 cgroup that hands controllers down may hold no process
	// itself: everything in the sandbox's cgroup moves to chalk_harness.
	if filepath.Base(parent) == HarnessCgroup {
		parent = filepath.Dir(parent)
	}
	enabled, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if !strings.Contains(string(enabled), "memory") || !strings.Contains(string(enabled), "pids") {
		hdir := filepath.Join(parent, HarnessCgroup)
		if err := os.Mkdir(hdir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("make cgroup %s: %w", hdir, err)
		}
		for _, pid := range readPids(filepath.Join(parent, "cgroup.procs")) {
			// A process that exits meanwhile is no matter.
			_ = writeFile(hdir, "cgroup.procs", strconv.Itoa(pid))
		}
		if err := writeFile(parent, "cgroup.subtree_control", "+memory +pids"); err != nil {
			cg.undo()
			return nil, fmt.Errorf("hand the memory and pids controllers to the student's cgroup: %w", err)
		}
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		cg.undo()
		return nil, fmt.Errorf("make cgroup %s: %w", dir, err)
	}
	cg.Dirs = []string{dir}
	if lim.MemoryBytes > 0 {
		err = writeFile(dir, "memory.max", strconv.FormatInt(lim.MemoryBytes, 10))
		if err == nil && exists(filepath.Join(dir, "memory.swap.max")) {
			err = writeFile(dir, "memory.swap.max", "0")
		}
		if err == nil {
			// One process over the limit ends them all, as the
			// watchdog does.
			_ = writeFile(dir, "memory.oom.group", "1")
		}
	}
	if err == nil && lim.Processes > 0 {
		err = writeFile(dir, "pids.max", strconv.Itoa(lim.Processes))
	}
	if err != nil {
		cg.Remove()
		return nil, err
	}
	return cg, nil
}

// writable makes sure m can be written under dir, remounting it
// read-write if it is mounted read-only.
func (cg *Cgroup) writable(m cgroupMount, dir string) error {
	if !m.readOnly {
		if unix.Access(dir, unix.W_OK) != nil {
			return fmt.Errorf("the cgroup %s is not writable", dir)
		}
		return nil
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RELATIME)
	if err := unix.Mount("", m.point, "", flags, ""); err != nil {
		return fmt.Errorf("the cgroup mount %s is read-only and cannot be made writable (%v): the sandbox needs CAP_SYS_ADMIN", m.point, err)
	}
	cg.remounted = append(cg.remounted, m.point)
	return nil
}

// undo puts back read-only the mounts this cgroup made writable.
func (cg *Cgroup) undo() {
	for _, p := range cg.remounted {
		flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RELATIME)
		_ = unix.Mount("", p, "", flags, "")
	}
	cg.remounted = nil
}

// ProcsFiles are the files a process writes its pid to, to join.
func (cg *Cgroup) ProcsFiles() []string {
	var out []string
	for _, d := range cg.Dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// Procs lists the processes in the cgroup.
func (cg *Cgroup) Procs() []int {
	return readPids(filepath.Join(cg.Dirs[len(cg.Dirs)-1], "cgroup.procs"))
}

// Kill kills every process in the cgroup, until none is left.
func (cg *Cgroup) Kill() {
	if cg.Version == 2 && writeFile(cg.Dirs[0], "cgroup.kill", "1") == nil {
		for i := 0; i < 100 && len(cg.Procs()) > 0; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		return
	}
	for i := 0; i < 200; i++ {
		pids := cg.Procs()
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// OOM says how the student's memory limit acted: kills is how many of
// its processes the kernel has killed for going over it (a count that
// only grows), held whether the kernel is holding them at the limit right
// now, waiting to be killed (v1 with its OOM killer off, see NewCgroup).
func (cg *Cgroup) OOM() (kills int, held bool) {
	if cg.Version == 1 {
		f := filepath.Join(cg.Dirs[0], "memory.oom_control")
		return keyedValue(f, "oom_kill"), keyedValue(f, "under_oom") > 0
	}
	return keyedValue(filepath.Join(cg.Dirs[0], "memory.events"), "oom_kill"), false
}

// ForkRefusals is how many times the kernel refused the student a new
// process for being at its process limit.
func (cg *Cgroup) ForkRefusals() int {
	return keyedValue(filepath.Join(cg.Dirs[len(cg.Dirs)-1], "pids.events"), "max")
}

// MemoryLimit reads back the memory limit; 0 when there is none.
func (cg *Cgroup) MemoryLimit() int64 {
	file := "memory.max"
	if cg.Version == 1 {
		file = "memory.limit_in_bytes"
	}
	b, err := os.ReadFile(filepath.Join(cg.Dirs[0], file))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n >= 1<<62 {
		return 0
	}
	return n
}

// ProcessLimit reads back the process limit; 0 when there is none.
func (cg *Cgroup) ProcessLimit() int {
	b, err := os.ReadFile(filepath.Join(cg.Dirs[len(cg.Dirs)-1], "pids.max"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// Remove kills what is left in the cgroup and removes it.
func (cg *Cgroup) Remove() error {
	cg.Kill()
	var errs []error
	for _, d := range cg.Dirs {
		var err error
		for i := 0; i < 50; i++ {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	cg.undo()
	return errors.Join(errs...)
}

// cgroupMounts lists the cgroup filesystems in /proc/self/mountinfo.
func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}

// parseMountinfo reads the cgroup filesystems from a mountinfo file.
func parseMountinfo(r io.Reader) ([]cgroupMount, error) {
	var out []cgroupMount
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// id parent maj:min root point options [optional...] - type source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 6 || len(b) < 3 {
			continue
		}
		m := cgroupMount{root: unescape(a[3]), point: unescape(a[4])}
		m.readOnly = slices.Contains(strings.Split(a[5], ","), "ro")
		switch b[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			for _, o := range strings.Split(b[2], ",") {
				if o == "memory" || o == "pids" || o == "cpu" || o == "cpuacct" || o == "cpuset" || o == "blkio" ||
					o == "devices" || o == "freezer" || o == "net_cls" || o == "perf_event" || o == "net_prio" ||
					o == "hugetlb" || o == "rdma" || o == "misc" || strings.HasPrefix(o, "name=") {
					m.controllers = append(m.controllers, o)
				}
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// ownCgroups maps each hierarchy's controller list ("" for v2) to this
// process's cgroup path in it.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	return parseProcCgroup(b), nil
}

// parseProcCgroup reads a /proc/PID/cgroup file.
func parseProcCgroup(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			out[parts[1]] = parts[2]
		}
	}
	return out
}

func unescape(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

func writeFile(dir, name, value string) error {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(value), 0); err != nil {
		return fmt.Errorf("write %s to %s: %w", value, p, err)
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readPids(file string) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// keyedValue reads "key N" from a flat-keyed cgroup file.
func keyedValue(file, key string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
