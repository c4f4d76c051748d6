package confine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"time"
)

// Options say what box to build.
type Options struct {
	UID    int
	Limits Limits
	// CgroupName names the student's cgroup (StudentCgroup in a run).
	CgroupName string
	// DiskImage and DiskMount place the student's disk; Give are the
	// directories moved onto it (or watched, without a disk).
	DiskImage, DiskMount string
	Give                 []string
	// Network is the firewall's policy; "" means no firewall at all
	// (tests of the other limits only).
	Network    string
	Table      string
	Allow      []netip.AddrPort
	BlockPorts []uint16
	Log        *slog.Logger
}

// Box is the student's confinement, set up.
type Box struct {
	opts     Options
	Cgroup   *Cgroup
	Disk     *Disk
	Firewall *Firewall
	// Enforced says how each limit is held, and why not by the kernel.
	Enforced Enforcement
	// Setup is how long building the box took.
	Setup time.Duration

	mu   sync.Mutex
	hits []LimitHit
	// oomSeen is how many of the cgroup's OOM kills the watch has acted
	// on; only Watch's goroutine touches it.
	oomSeen int
}

// Build sets up the box. Memory, processes and disk fall back to the
// watchdog when the kernel cannot hold them; the firewall has no
// fallback, so a firewall that cannot be installed is an error, and the
// student must not start.
func Build(o Options) (*Box, error) {
	start := time.Now()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	b := &Box{opts: o}
	if cg, err := NewCgroup(o.CgroupName, o.Limits); err == nil {
		b.Cgroup = cg
		// A cgroup made before (by an earlier session in this
		// sandbox) may count OOM kills already: only new ones count.
		b.oomSeen, _ = cg.OOM()
		b.Enforced.because("memory", Kernel, "")
		b.Enforced.because("processes", Kernel, "")
	} else {
		o.Log.Warn("no cgroup for the student; the watchdog holds memory and processes", "why", err)
		b.Enforced.because("memory", Watchdog, err.Error())
		b.Enforced.because("processes", Watchdog, err.Error())
	}
	switch {
	case o.Limits.DiskBytes <= 0:
		b.Enforced.because("disk", None, "no disk budget was set")
	default:
		d, err := NewDisk(o.DiskImage, o.DiskMount, o.Limits.DiskBytes, o.UID, o.UID)
		if err == nil {
			for _, dir := range o.Give {
				if err = d.Give(dir, o.UID, o.UID); err != nil {
					break
				}
			}
			if err != nil {
				d.Remove()
			}
		}
		if err == nil {
			b.Disk = d
			b.Enforced.because("disk", Kernel, "")
		} else {
			for _, dir := range o.Give {
				if _, serr := os.Lstat(dir); errors.Is(serr, os.ErrNotExist) {
					_ = os.MkdirAll(dir, 0o755)
					_ = os.Lchown(dir, o.UID, o.UID)
				}
			}
			o.Log.Warn("no disk of its own for the student; the watchdog holds the disk budget", "why", err)
			b.Enforced.because("disk", Watchdog, err.Error())
		}
	}
	if o.Network == "" {
		b.Enforced.because("network", None, "no network policy was asked for")
	} else {
		fw := &Firewall{Table: o.Table, UID: o.UID, Policy: o.Network, Allow: o.Allow, BlockPorts: o.BlockPorts}
		if err := fw.Install(); err != nil {
			b.Teardown()
			return nil, fmt.Errorf("%w; the sandbox needs CAP_NET_ADMIN and nf_tables for the student's firewall", err)
		}
		b.Firewall = fw
		b.Enforced.because("network", Kernel, "")
	}
	b.Setup = time.Since(start)
	return b, nil
}

// Bare is a box with nothing in it but the uid: the student still drops
// every privilege, but no limit or firewall is set up. It exists to
// measure what confinement costs.
func Bare(uid int) *Box {
	b := &Box{opts: Options{UID: uid}}
	for _, l := range []string{"memory", "processes", "disk", "network"} {
		b.Enforced.because(l, None, "confinement was turned off for a measurement")
	}
	return b
}

// Spec is the ExecSpec that starts argv as the student in the box.
func (b *Box) Spec(argv, env []string, dir string) ExecSpec {
	s := ExecSpec{UID: b.opts.UID, GID: b.opts.UID, Argv: argv, Env: env, Dir: dir}
	if b.Cgroup != nil {
		s.Cgroups = b.Cgroup.ProcsFiles()
	}
	return s
}

// KillAll kills every process of the student's.
func (b *Box) KillAll() {
	if b.Cgroup != nil {
		b.Cgroup.Kill()
	}
	KillUID(b.opts.UID)
}

// Watch follows the student until ctx ends: it notices the kernel
// holding a limit, and in the watchdog's place kills the student for
// going over one. hit is called once per limit.
func (b *Box) Watch(ctx context.Context, hit func(LimitHit)) {
	seen := map[string]bool{}
	report := func(h LimitHit) {
		if seen[h.Name+h.Action] {
			return
		}
		seen[h.Name+h.Action] = true
		b.mu.Lock()
		b.hits = append(b.hits, h)
		b.mu.Unlock()
		if hit != nil {
			hit(h)
		}
	}
	lim := b.opts.Limits
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			// One last look: a student that hit a limit and exited
			// at once has not been seen yet.
			b.check(lim, 0, report)
			return
		case <-tick.C:
		}
		b.check(lim, n, report)
	}
}

// check looks at the student once; n counts the looks, and the costly
// disk walk is made every fifth one (and when n is 0, the last).
func (b *Box) check(lim Limits, n int, report func(LimitHit)) {
	if b.Cgroup != nil {
		// One process over the limit ends them all, once: the kill ends
		// the student, and a process the box runs afterwards is not
		// killed for an OOM it did not cause. While the kernel holds
		// them at the limit (cgroup v1), each look kills again.
		if kills, held := b.Cgroup.OOM(); held || kills > b.oomSeen {
			b.oomSeen = kills
			b.KillAll()
			report(LimitHit{Name: "memory", Enforcement: Kernel, Action: "killed",
				Detail: fmt.Sprintf("the student went over its memory limit of %s", bytesText(lim.MemoryBytes))})
		}
		if b.Cgroup.ForkRefusals() > 0 {
			report(LimitHit{Name: "processes", Enforcement: Kernel, Action: "denied",
				Detail: fmt.Sprintf("the kernel refused the student more than %d processes", lim.Processes)})
		}
	} else {
		procs := procsOf(b.opts.UID)
		var rss int64
		live := 0
		for _, p := range procs {
			rss += p.rss
			if !p.zombie {
				live++
			}
		}
		if lim.MemoryBytes > 0 && rss > lim.MemoryBytes {
			b.KillAll()
			report(LimitHit{Name: "memory", Enforcement: Watchdog, Action: "killed",
				Detail: fmt.Sprintf("the student used %s, over its memory limit of %s", bytesText(rss), bytesText(lim.MemoryBytes))})
		}
		if lim.Processes > 0 && live > lim.Processes {
			b.KillAll()
			report(LimitHit{Name: "processes", Enforcement: Watchdog, Action: "killed",
				Detail: fmt.Sprintf("the student ran %d processes, over its limit of %d", live, lim.Processes)})
		}
	}
	switch {
	case b.Disk != nil:
		if b.Disk.Full() {
			report(LimitHit{Name: "disk", Enforcement: Kernel, Action: "denied",
				Detail: fmt.Sprintf("the student filled its disk budget of %s", bytesText(lim.DiskBytes))})
		}
	case lim.DiskBytes > 0 && n%5 == 0: // walking the tree is dear: twice a second
		if used := diskUsage(b.opts.Give); used > lim.DiskBytes {
			b.KillAll()
			report(LimitHit{Name: "disk", Enforcement: Watchdog, Action: "killed",
				Detail: fmt.Sprintf("the student wrote %s, over its disk budget of %s", bytesText(used), bytesText(lim.DiskBytes))})
		}
	}
}

// Hits lists the limits the student ran into so far.
func (b *Box) Hits() []LimitHit {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]LimitHit(nil), b.hits...)
}

// Teardown undoes the box: kills what the student left, removes the
// firewall, the disk and the cgroup. The error lists what is left behind.
func (b *Box) Teardown() error {
	b.KillAll()
	var errs []error
	if b.Firewall != nil {
		if err := b.Firewall.Remove(); err != nil {
			errs = append(errs, fmt.Errorf("firewall table %s: %w", b.Firewall.Table, err))
		}
	}
	if b.Disk != nil {
		if err := b.Disk.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.Cgroup != nil {
		if err := b.Cgroup.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
