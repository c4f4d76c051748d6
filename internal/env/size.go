package env

import (
	"fmt"
	"math/big"
	"strings"
)

// Binary size units.
const (
	KiB int64 = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
	PiB
)

// sizeUnits maps a lowercased unit to its number of bytes. A bare letter
// is binary, as in docker's --memory; "KB", "MB"... are decimal; "KiB",
// "MiB"... are binary.
var sizeUnits = map[string]int64{
	"":  1,
	"b": 1,

	"k": KiB, "kib": KiB, "kb": 1e3,
	"m": MiB, "mib": MiB, "mb": 1e6,
	"g": GiB, "gib": GiB, "gb": 1e9,
	"t": TiB, "tib": TiB, "tb": 1e12,
	"p": PiB, "pib": PiB, "pb": 1e15,
}

// ParseSize parses a size in bytes: a number, optionally with a fraction,
// followed by an optional unit. "4GiB" and "4G" are 4×2^30 bytes, "4GB"
// is 4×10^9 bytes, a bare number counts bytes. Units ignore case and may
// be separated from the number by spaces. A fractional result is rounded
// to the nearest byte.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	end := 0
	dots := 0
	for end < len(t) && (t[end] >= '0' && t[end] <= '9' || t[end] == '.') {
		if t[end] == '.' {
			dots++
		}
		end++
	}
	num, unit := t[:end], strings.ToLower(strings.TrimSpace(t[end:]))
	if num == "" || num == "." || dots > 1 {
		return 0, fmt.Errorf("size %q: want a number followed by a unit, such as 4GiB or 512MiB", s)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q; use B, KiB, MiB, GiB, TiB (binary), K, M, G, T (binary) or KB, MB, GB, TB (decimal)", s, strings.TrimSpace(t[end:]))
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("size %q: %q is not a number", s, num)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	// Round half up: floor(r + 1/2).
	r.Add(r, big.NewRat(1, 2))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n.Int64(), nil
}

// FormatSize writes n with the largest binary unit that divides it
// exactly, so that ParseSize(FormatSize(n)) == n: 4GiB, 1536MiB, 100B.
func FormatSize(n int64) string {
	if n == 0 {
		return "0B"
	}
	sign := ""
	u := uint64(n)
	if n < 0 {
		sign = "-"
		u = -u // two's complement: |n|, also for math.MinInt64
	}
	units := []struct {
		name string
		size uint64
	}{{"PiB", uint64(PiB)}, {"TiB", uint64(TiB)}, {"GiB", uint64(GiB)}, {"MiB", uint64(MiB)}, {"KiB", uint64(KiB)}}
	for _, unit := range units {
		if u%unit.size == 0 {
			return fmt.Sprintf("%s%d%s", sign, u/unit.size, unit.name)
		}
	}
	return fmt.Sprintf("%s%dB", sign, u)
}
