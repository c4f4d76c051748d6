package confine

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillUID kills every process of uid this process can see. It is the
// fallback when there is no cgroup to kill: inside a sandbox the PID
// namespace holds only the sandbox, and the uid is the student's alone.
func KillUID(uid int) {
	for range 50 {
		procs := procsOf(uid)
		live := 0
		for _, p := range procs {
			if p.zombie {
				continue
			}
			live++
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		if live == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// PidsOf lists the live processes of uid.
func PidsOf(uid int) []int {
	var out []int
	for _, p := range procsOf(uid) {
		if !p.zombie {
			out = append(out, p.pid)
		}
	}
	return out
}

type proc struct {
	pid    int
	zombie bool
	rss    int64 // bytes
}

// procsOf reads /proc for the processes whose real or effective uid is uid.
func procsOf(uid int) []proc {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []proc
	want := strconv.Itoa(uid)
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		f, err := os.Open(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		p := proc{pid: pid}
		mine := false
		s := bufio.NewScanner(f)
		for s.Scan() {
			k, v, _ := strings.Cut(s.Text(), ":")
			fs := strings.Fields(v)
			switch k {
			case "State":
				p.zombie = len(fs) > 0 && (fs[0] == "Z" || fs[0] == "X")
			case "Uid":
				mine = len(fs) >= 2 && (fs[0] == want || fs[1] == want)
			case "VmRSS":
				if len(fs) >= 1 {
					kb, _ := strconv.ParseInt(fs[0], 10, 64)
					p.rss = kb << 10
				}
			}
		}
		f.Close()
		if mine {
			out = append(out, p)
		}
	}
	return out
}

// diskUsage adds up the space the files under dirs take.
func diskUsage(dirs []string) int64 {
	var total int64
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := e.Info()
			if err != nil {
				return nil
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
			return nil
		})
	}
	return total
}
