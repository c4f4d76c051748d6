package confine

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The student's seccomp filter. The sandbox grants the harness
// CAP_SYS_ADMIN, and with it docker's default seccomp profile lets
// everyone in the sandbox make the namespace and mount system calls. The
// student holds no capability, but a user namespace would hand it a full
// set inside, with a mount table of its own and a much larger kernel
// surface. So the student's first process refuses, for itself and all it
// starts: new namespaces (unshare, setns, clone with a namespace flag),
// every form of mount, pivot_root, chroot, bpf, and keyrings. clone3 is
// answered ENOSYS, so C libraries fall back to clone, whose flags the
// filter can read. System calls of another architecture (32-bit ones on
// a 64-bit kernel) are refused too: the numbers above mean something else
// there.

const (
	bpfLD   = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJEQ  = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJGE  = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfJSET = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	bpfRET  = 0x06 // BPF_RET | BPF_K

	retAllow = 0x7fff0000
	retErrno = 0x00050000

	offNR   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits, little-endian

	namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWPID |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP
)

// deniedSyscalls fail with EPERM for the student.
var deniedSyscalls = []uintptr{
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_BPF, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
}

func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	}
	return 0, false
}

// seccompProgram assembles the filter.
func seccompProgram() []unix.SockFilter {
	arch, _ := auditArch()
	eperm := uint32(retErrno | uint32(unix.EPERM))
	var p []unix.SockFilter
	add := func(code uint16, jt, jf uint8, k uint32) {
		p = append(p, unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k})
	}
	add(bpfLD, 0, 0, offArch)
	add(bpfJEQ, 1, 0, arch)
	add(bpfRET, 0, 0, eperm)
	add(bpfLD, 0, 0, offNR)
	if runtime.GOARCH == "amd64" {
		add(bpfJGE, 0, 1, 0x40000000) // the x32 ABI
		add(bpfRET, 0, 0, eperm)
	}
	for _, nr := range deniedSyscalls {
		add(bpfJEQ, 0, 1, uint32(nr))
		add(bpfRET, 0, 0, eperm)
	}
	add(bpfJEQ, 0, 1, uint32(unix.SYS_CLONE3))
	add(bpfRET, 0, 0, uint32(retErrno|uint32(unix.ENOSYS)))
	add(bpfJEQ, 0, 3, uint32(unix.SYS_CLONE))
	add(bpfLD, 0, 0, offArg0)
	add(bpfJSET, 0, 1, namespaceFlags)
	add(bpfRET, 0, 0, eperm)
	add(bpfRET, 0, 0, retAllow)
	return p
}

// installSeccomp installs the filter on this thread; what it execs keeps
// it. no_new_privs must already be set.
func installSeccomp() error {
	if _, ok := auditArch(); !ok {
		return nil // no filter where the numbers are not known; documented
	}
	prog := seccompProgram()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return errno
	}
	return nil
}
