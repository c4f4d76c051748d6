package env

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClosest(t *testing.T) {
	plugins := []string{"hardware_limits", "container_run_args", "timeout"}
	tests := []struct {
		word  string
		known []string
		want  string
	}{
		{"studnet", knownKeys[""], "student"},
		{"timout", knownKeys["student"], "timeout"},
		{"hardware_limit", plugins, "hardware_limits"},
		{"timeout", plugins, "timeout"},
		// A swap of adjacent letters is one edit, so a swap and a missing
		// letter are still close.
		{"hardwrae_limit", plugins, "hardware_limits"},
		// Letters, not bytes: ä for a is one edit.
		{"härdwäre_limits", plugins, "hardware_limits"},
		// Under four letters, one edit at most.
		{"cpu", knownKeys["hardware"], "cpus"},
		{"nme", knownKeys["hardware"], "name"},
		{"cp", knownKeys["hardware"], ""},
		{"nm", knownKeys["hardware"], ""},
		{"emv", knownKeys["student"], "env"},
		{"dsk", knownKeys["hardware"], "disk"},
		{"memroy", knownKeys["hardware"], "memory"},
		{"mmry", knownKeys["hardware"], "memory"},
		{"mry", knownKeys["hardware"], ""},
		{"foo", knownKeys["student"], ""},
		{"", plugins, ""},
		{"anything", nil, ""},
		// Equally close: the first known word wins.
		{"ab", []string{"xb", "ax"}, "xb"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Closest(tt.word, tt.known), "%q in %q", tt.word, tt.known)
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"student", "student", 0},
		{"studnet", "student", 1},
		{"cpu", "cpus", 1},
		{"memroy", "memory", 1},
		{"abc", "xyz", 3},
		{"", "abc", 3},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, editDistance(tt.a, tt.b), "%q %q", tt.a, tt.b)
	}
}
