package hostclass

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerPid is the pid of the process at the other end of c, as this
// process's pid namespace numbers it (0: not visible from here).
func peerPid(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return int(cred.Pid), nil
}

// descends reports whether process pid was started, directly or not, by
// process ancestor (for a connector run through a wrapper script that
// does not exec it). It follows parents through /proc.
func descends(pid, ancestor int) bool {
	for range 32 {
		ppid := parentOf(pid)
		if ppid <= 1 {
			return false
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}
