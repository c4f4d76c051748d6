// Package confine puts the student in its box inside the sandbox: its own
// uid with no capabilities, a cgroup (or a watchdog) for memory and
// processes, a loop-mounted filesystem (or a watchdog) for disk, and an
// nftables firewall for its uid. The harness sets these up before the
// student starts and undoes them after; `chalk check confinement` sets
// each one up on an unused uid, attacks it and reports what held.
//
// Everything here needs root inside the sandbox, and some of it needs
// capabilities the sandbox is started with (see Privileges). None of it
// is passed on to the student: the student starts through Exec, which
// drops it all before the student's first instruction runs.
//
// The box is made of Linux kernel features, and its code is in the
// _linux.go files. Elsewhere (chalk on a Mac, a client of sandboxes) the
// package holds what the host shares with the harness: Limits, the
// network policies, the check's Report; its entry points say the box
// needs Linux (see Supported).
package confine
