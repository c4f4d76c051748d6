package confine

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The filter checks the architecture first, refuses each denied system
// call, reads clone's flags, and allows the rest.
func TestSeccompProgram(t *testing.T) {
	if _, ok := auditArch(); !ok {
		t.Skip("no seccomp filter on this architecture")
	}
	p := seccompProgram()
	arch, _ := auditArch()
	if p[0].Code != bpfLD || p[0].K != offArch || p[1].K != arch {
		t.Fatalf("the filter does not start with the architecture: %+v", p[:2])
	}
	if last := p[len(p)-1]; last.Code != bpfRET || last.K != retAllow {
		t.Fatalf("the filter does not end allowing: %+v", last)
	}
	var compared []uint32
	for _, ins := range p {
		if ins.Code == bpfJEQ {
			compared = append(compared, ins.K)
		}
	}
	for _, nr := range append(deniedSyscalls, unix.SYS_CLONE, unix.SYS_CLONE3) {
		if !slices.Contains(compared, uint32(nr)) {
			t.Errorf("system call %d is not in the filter", nr)
		}
	}
	if !slices.ContainsFunc(p, func(ins unix.SockFilter) bool { return ins.Code == bpfJSET && ins.K&unix.CLONE_NEWUSER != 0 }) {
		t.Error("clone's namespace flags are not checked")
	}
}

func TestDaddrMatchesThePrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		proto  byte
		mask   []byte
		addr   []byte
	}{
		{"10.0.0.0/8", unix.NFPROTO_IPV4, []byte{255, 0, 0, 0}, []byte{10, 0, 0, 0}},
		{"169.254.169.254/32", unix.NFPROTO_IPV4, []byte{255, 255, 255, 255}, []byte{169, 254, 169, 254}},
		{"fc00::/7", unix.NFPROTO_IPV6, append([]byte{0xfe}, make([]byte, 15)...), append([]byte{0xfc}, make([]byte, 15)...)},
	} {
		e := daddr(netip.MustParsePrefix(tc.prefix))
		proto := e[1].(*expr.Cmp).Data
		mask := e[3].(*expr.Bitwise).Mask
		addr := e[4].(*expr.Cmp).Data
		if proto[0] != tc.proto || string(mask) != string(tc.mask) || string(addr) != string(tc.addr) {
			t.Errorf("%s: proto %v mask %v addr %v", tc.prefix, proto, mask, addr)
		}
	}
}

func TestEnforcementReasons(t *testing.T) {
	var e Enforcement
	e.because("memory", Watchdog, "the cgroup is read-only")
	e.because("network", Kernel, "")
	if e.Memory != Watchdog || e.Network != Kernel || e.Why["memory"] == "" || e.Why["network"] != "" {
		t.Fatalf("%+v", e)
	}
	b := Bare(62001)
	if b.Enforced.Memory != None || b.Enforced.Disk != None || b.Enforced.Why["disk"] == "" {
		t.Fatalf("a bare box claims enforcement: %+v", b.Enforced)
	}
}

func TestBytesText(t *testing.T) {
	for n, want := range map[int64]string{3 << 30: "3 GiB", 64 << 20: "64 MiB", 1536 << 20: "1536 MiB", 100: "100 bytes"} {
		if got := bytesText(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
