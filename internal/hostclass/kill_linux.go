package hostclass

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// killTree sends SIGKILL to pid and all its descendants, found through
// the host's /proc: the daemon reports an exec's pid in the host's
// namespace, and the server runs on that host.
func killTree(pid int) error {
	children := map[int][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := parentOf(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var victims []int
	var walk func(int)
	walk = func(p int) {
		victims = append(victims, p)
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	var first error
	for _, p := range victims {
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) && first == nil {
			first = fmt.Errorf("kill process %d of the session: %w", p, err)
		}
	}
	return first
}

// parentOf reads the parent pid from /proc/PID/stat (after the command
// name, which may contain spaces and parentheses).
func parentOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// hasEnv reports whether process pid's environment holds kv ("KEY=value").
func hasEnv(pid int, kv string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range strings.Split(string(data), "\x00") {
		if e == kv {
			return true
		}
	}
	return false
}
