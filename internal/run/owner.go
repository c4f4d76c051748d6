package run

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// OwnerID is a parsed owner label: the chalk process that made a sandbox.
// The label reads HOST/PID/START, START being the process's start time in
// clock ticks after boot (field 22 of /proc/PID/stat), so that a pid the
// kernel has since given to another process is told apart from the owner.
// Labels written before the start time was recorded read HOST/PID; Start
// is then 0.
type OwnerID struct {
	Host  string
	PID   int
	Start uint64
}

func (o OwnerID) String() string {
	if o.Start == 0 {
		return fmt.Sprintf("%s/%d", o.Host, o.PID)
	}
	return fmt.Sprintf("%s/%d/%d", o.Host, o.PID, o.Start)
}

// FormatOwner is the owner label of process pid on host: HOST/PID/START,
// or HOST/PID where the start time cannot be read (no /proc).
func FormatOwner(host string, pid int) string {
	o := OwnerID{Host: host, PID: pid}
	o.Start, _ = processStart(pid)
	return o.String()
}

// ParseOwner reads an owner label, HOST/PID/START or HOST/PID.
func ParseOwner(s string) (OwnerID, error) {
	f := strings.Split(s, "/")
	bad := func(why string) (OwnerID, error) {
		return OwnerID{}, fmt.Errorf("owner label %q: %s; want HOST/PID/START or HOST/PID", s, why)
	}
	if len(f) != 2 && len(f) != 3 {
		return bad("wrong number of parts")
	}
	o := OwnerID{Host: f[0]}
	if o.Host == "" {
		return bad("no host name")
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return bad("the pid is not a positive number")
	}
	o.PID = pid
	if len(f) == 3 {
		start, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil || start == 0 {
			return bad("the start time is not a positive number")
		}
		o.Start = start
	}
	return o, nil
}

// proc is what this host says about a pid now.
type proc struct {
	Alive bool
	// Start is the process's start time in clock ticks after boot; 0 when
	// it cannot be read.
	Start uint64
}

// lookupProc asks the kernel about pid. A process of another user is
// alive too (kill answers EPERM).
func lookupProc(pid int) proc {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return proc{}
	}
	p := proc{Alive: true}
	p.Start, _ = processStart(pid)
	return p
}

// ownerDead decides whether the owner o of a sandbox is gone, given this
// host's name and what the kernel says about o's pid now. It answers
// false whenever it cannot be sure, and why says which way it went and
// for what reason.
func ownerDead(o OwnerID, host string, p proc) (dead bool, why string) {
	switch {
	case o.Host != host:
		return false, fmt.Sprintf("made on another host (%s); only chalk there can tell whether its owner lives", o.Host)
	case !p.Alive:
		return true, fmt.Sprintf("its chalk (pid %d) is no longer running", o.PID)
	case o.Start == 0:
		return false, fmt.Sprintf("pid %d is running, and the label (from an older chalk) has no start time to tell a reused pid from its chalk", o.PID)
	case p.Start == 0:
		return false, fmt.Sprintf("pid %d is running and its start time cannot be read", o.PID)
	case p.Start != o.Start:
		return true, fmt.Sprintf("its chalk (pid %d) is no longer running; pid %d is now another process", o.PID, o.PID)
	}
	return false, fmt.Sprintf("its chalk (pid %d) is still running", o.PID)
}

// OwnerGone says whether the chalk process an owner label names (a run's
// run.started records it) has ended without the run's end being written:
// true only when that is certain (the label is of this host and its
// process is gone), with the reason.
func OwnerGone(label string) (bool, string) {
	o, err := ParseOwner(label)
	if err != nil {
		return false, ""
	}
	host, _ := os.Hostname()
	return ownerDead(o, host, lookupProc(o.PID))
}
