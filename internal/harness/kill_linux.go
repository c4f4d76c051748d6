package harness

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// killUID kills every process whose real or effective uid is uid, until
// none is left: the student may have left its process group, but it cannot
// leave its uid.
func killUID(uid int) {
	for range 50 {
		pids := pidsOf(uid)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func pidsOf(uid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	want := strconv.Itoa(uid)
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			line := s.Text()
			if !strings.HasPrefix(line, "Uid:") {
				continue
			}
			f := strings.Fields(line)
			if len(f) >= 3 && (f[1] == want || f[2] == want) {
				if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && pid != os.Getpid() {
					pids = append(pids, pid)
				}
			}
			break
		}
		f.Close()
	}
	return pids
}

func unixSignalName(s syscall.Signal) string { return unix.SignalName(s) }
