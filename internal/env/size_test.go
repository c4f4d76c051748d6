package env

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1024", 1024},
		{"100B", 100},
		{"4GiB", 4 << 30},
		{"4gib", 4 << 30},
		{"4G", 4 << 30},
		{"4g", 4 << 30},
		{"4GB", 4e9},
		{"4 GiB", 4 << 30},
		{" 512MiB ", 512 << 20},
		{"512M", 512 << 20},
		{"512MB", 512e6},
		{"1.5GiB", 3 << 29},
		{"0.5K", 512},
		{"1KB", 1000},
		{"1KiB", 1024},
		{"2TiB", 2 << 40},
		{"1TB", 1e12},
		{"1PiB", 1 << 50},
		{"1.", 1},
		{".5KiB", 512},
		{"0.3B", 0},
		{"0.5B", 1},
		{"1.1GiB", 1181116006},
		{"9223372036854775807", math.MaxInt64},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct {
		in  string
		err string
	}{
		{"", `size "": want a number followed by a unit`},
		{"GiB", `size "GiB": want a number followed by a unit`},
		{"-1GiB", `size "-1GiB": want a number followed by a unit`},
		{"1.2.3G", `size "1.2.3G": want a number followed by a unit`},
		{".", `size ".": want a number`},
		{"4 gigs", `size "4 gigs": unknown unit "gigs"`},
		{"4Gi", `unknown unit "Gi"`},
		{"1e9", `unknown unit "e9"`},
		{"0x10", `unknown unit "x10"`},
		{"4GiB 2", `unknown unit`},
		{"9223372036854775808", `size "9223372036854775808" is too large`},
		{"8EiB", `unknown unit "EiB"`},
		{"8192PiB", `is too large`},
	}
	for _, tt := range tests {
		_, err := ParseSize(tt.in)
		require.Error(t, err, tt.in)
		require.Contains(t, err.Error(), tt.err, tt.in)
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1023, "1023B"},
		{1024, "1KiB"},
		{1536, "1536B"},
		{512 << 20, "512MiB"},
		{3 << 29, "1536MiB"},
		{3 << 30, "3GiB"},
		{4 << 30, "4GiB"},
		{4e9, "3906250KiB"},
		{1 << 40, "1TiB"},
		{1 << 50, "1PiB"},
		{1 << 60, "1024PiB"},
		{-(2 << 30), "-2GiB"},
		{math.MinInt64, "-8192PiB"},
		{math.MaxInt64, "9223372036854775807B"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, FormatSize(tt.in), "%d", tt.in)
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, n := range []int64{0, 1, 1000, 1024, 1536, 4e9, 3 << 29, 5 << 30, 7 << 40, math.MaxInt64} {
		got, err := ParseSize(FormatSize(n))
		require.NoError(t, err)
		require.Equal(t, n, got)
	}
}
