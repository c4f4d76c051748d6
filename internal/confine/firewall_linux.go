package confine

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The address ranges the policies speak of.
var (
	linkLocal = []netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("fe80::/10"),
	}
	privateRanges = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("fc00::/7"),
	}
	// otherSpecial are never the internet: loopback of other hosts,
	// "this network", multicast and the reserved block.
	otherSpecial = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("224.0.0.0/3"),
		netip.MustParsePrefix("::/127"),
		netip.MustParsePrefix("ff00::/8"),
	}
)

// Firewall is the student's nftables table: a hook on locally generated
// packets that sends every packet of the student's uid through the
// policy. Root (the harness, the grader) is not filtered.
type Firewall struct {
	// Table names the nftables table; one per uid.
	Table  string
	UID    int
	Policy string
	// Allow are the addresses the student may always reach (the model
	// proxy), by TCP.
	Allow []netip.AddrPort
	// BlockPorts are the harness's own ports on loopback.
	BlockPorts []uint16
	// Gateways are the sandbox's routers, which are the host: blocked
	// under every policy except where Allow names them. Filled from the
	// routing table when nil.
	Gateways []netip.Addr
}

const (
	nfprotoIPv4 = unix.NFPROTO_IPV4
	nfprotoIPv6 = unix.NFPROTO_IPV6
)

// Install adds the table, replacing one of the same name.
func (f *Firewall) Install() error {
	if err := CheckPolicy(f.Policy); err != nil {
		return err
	}
	if f.UID <= 0 {
		return fmt.Errorf("refusing a firewall for uid %d", f.UID)
	}
	if f.Gateways == nil {
		f.Gateways = DefaultGateways()
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return fmt.Errorf("find the loopback interface: %w", err)
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("open netlink to nftables: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: f.Table}
	// Adding then deleting makes the delete safe when there is none; the
	// new table follows in the same batch, so the swap is atomic.
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	policy := nftables.ChainPolicyAccept
	out := c.AddChain(&nftables.Chain{
		Name: "output", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &policy,
	})
	st := c.AddChain(&nftables.Chain{Name: "student", Table: t})
	rule := func(exprs ...expr.Any) { c.AddRule(&nftables.Rule{Table: t, Chain: st, Exprs: exprs}) }

	c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeySKUID, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: u32(uint32(f.UID))},
		&expr.Verdict{Kind: expr.VerdictJump, Chain: st.Name},
	}})
	// Loopback: everything but the harness's ports.
	oifLo := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIF, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: u32(uint32(lo.Index))},
	}
	for _, p := range f.BlockPorts {
		for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
			rule(append(append(append([]expr.Any{}, oifLo...), dport(proto, p)...), refuse()...)...)
		}
	}
	rule(append(append([]expr.Any{}, oifLo...), accept())...)
	// The model proxy.
	for _, ap := range f.Allow {
		rule(append(append(daddr(netip.PrefixFrom(ap.Addr(), ap.Addr().BitLen())), dport(unix.IPPROTO_TCP, ap.Port())...), accept())...)
	}
	// Never: link-local, the host, the special ranges.
	never := append(append([]netip.Prefix{}, linkLocal...), otherSpecial...)
	for _, g := range f.Gateways {
		never = append(never, netip.PrefixFrom(g, g.BitLen()))
	}
	for _, p := range never {
		rule(append(daddr(p), refuse()...)...)
	}
	switch f.Policy {
	case NetworkInternal:
		for _, p := range privateRanges {
			rule(append(daddr(p), accept())...)
		}
	case NetworkPublic:
		for _, p := range privateRanges {
			rule(append(daddr(p), refuse()...)...)
		}
		rule(accept())
	}
	rule(refuse()...)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install the student's firewall: %w", err)
	}
	return nil
}

// Rules reads back how many rules the table's student chain holds and
// whether the output hook sends the uid to it; an error when the table
// is missing.
func (f *Firewall) Rules() (int, error) {
	c, err := nftables.New()
	if err != nil {
		return 0, err
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: f.Table}
	hook, err := c.GetRules(t, &nftables.Chain{Name: "output", Table: t})
	if err != nil {
		return 0, fmt.Errorf("read the firewall's output chain: %w", err)
	}
	matched := false
	for _, r := range hook {
		for _, e := range r.Exprs {
			if cmp, ok := e.(*expr.Cmp); ok && len(cmp.Data) == 4 && binary.NativeEndian.Uint32(cmp.Data) == uint32(f.UID) {
				matched = true
			}
		}
	}
	if !matched {
		return 0, fmt.Errorf("the firewall's output chain does not match uid %d", f.UID)
	}
	rules, err := c.GetRules(t, &nftables.Chain{Name: "student", Table: t})
	if err != nil {
		return 0, fmt.Errorf("read the firewall's student chain: %w", err)
	}
	return len(rules), nil
}

// Refused is how many of the student's packets the firewall refused.
func (f *Firewall) Refused() (uint64, error) {
	c, err := nftables.New()
	if err != nil {
		return 0, err
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: f.Table}
	rules, err := c.GetRules(t, &nftables.Chain{Name: "student", Table: t})
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, r := range rules {
		for _, e := range r.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				n += ctr.Packets
			}
		}
	}
	return n, nil
}

// Remove deletes the table.
func (f *Firewall) Remove() error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: f.Table}
	c.AddTable(t)
	c.DelTable(t)
	return c.Flush()
}

func u32(v uint32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, v)
	return b
}

func accept() expr.Any { return &expr.Verdict{Kind: expr.VerdictAccept} }

// refuse counts the packet and rejects it with an ICMP "administratively
// prohibited", so that the student's connect fails at once ("no route
// to host") instead of timing out, and the count proves who refused it.
func refuse() []expr.Any {
	return []expr.Any{
		&expr.Counter{},
		&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED},
	}
}

// dport matches the transport protocol and destination port.
func dport(proto byte, port uint16) []expr.Any {
	b := make([]byte, 2)
	binary.BigEndian.PutUint16(b, port)
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b},
	}
}

// daddr matches the destination address against prefix p.
func daddr(p netip.Prefix) []expr.Any {
	p = p.Masked()
	proto, offset, size := byte(nfprotoIPv4), uint32(16), 4
	if p.Addr().Is6() && !p.Addr().Is4In6() {
		proto, offset, size = nfprotoIPv6, 24, 16
	}
	addr := p.Addr().Unmap().AsSlice()
	mask := net.CIDRMask(p.Bits(), size*8)
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: uint32(size)},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(size), Mask: mask, Xor: make([]byte, size)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr},
	}
}

// DefaultGateways reads the sandbox's IPv4 and IPv6 default routers from
// /proc/net/route and /proc/net/ipv6_route.
func DefaultGateways() []netip.Addr {
	out := []netip.Addr{}
	if f, err := os.Open("/proc/net/route"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 3 || fs[2] == "Gateway" || fs[2] == "00000000" {
				continue
			}
			b, err := hex.DecodeString(fs[2])
			if err != nil || len(b) != 4 {
				continue
			}
			out = append(out, netip.AddrFrom4([4]byte{b[3], b[2], b[1], b[0]}))
		}
		f.Close()
	}
	if f, err := os.Open("/proc/net/ipv6_route"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 5 || fs[4] == strings.Repeat("0", 32) {
				continue
			}
			b, err := hex.DecodeString(fs[4])
			if err != nil || len(b) != 16 {
				continue
			}
			out = append(out, netip.AddrFrom16([16]byte(b)))
		}
		f.Close()
	}
	return out
}
