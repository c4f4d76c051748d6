package registry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Installed finds the engines by their client on PATH, once per client:
// docker:gvisor's sandboxes are docker's.
func TestInstalled(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	require.Empty(t, Installed())

	for _, name := range []string{"docker", "nerdctl"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755))
	}
	var names []string
	for _, rt := range Installed() {
		names = append(names, rt.Name())
	}
	require.Equal(t, []string{"docker", "nerdctl"}, names)
}
