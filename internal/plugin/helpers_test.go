package plugin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// project makes a project directory whose .chalk/config.toml holds
// config, and points the user's config at an empty directory.
func project(t *testing.T, config string) string {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	if config != "" {
		writeFile(t, filepath.Join(dir, ".chalk", "config.toml"), config, 0o644)
	}
	return dir
}

// script writes an executable shell script with body at path.
func script(t *testing.T, path, body string) string {
	t.Helper()
	writeFile(t, path, "#!/bin/sh\n"+body+"\n", 0o755)
	return path
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), mode))
	require.NoError(t, os.Chmod(path, mode))
}
