//go:build !linux

package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/cli"
)

// Off Linux the commands that run only inside a Linux sandbox, or only
// on a Linux server, refuse before touching anything, and say where
// they run.
func TestLinuxOnlyCommandsRefuse(t *testing.T) {
	box := "the student's box needs Linux (cgroups, nftables, seccomp, loop devices)"
	harnessHint := "hint: chalk run starts it in the sandbox; on macOS, run with --runtime docker and CHALK_HARNESS_BINARY set to a static Linux chalk (docs/runtimes.md)\n"
	config := filepath.Join(t.TempDir(), "config.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"harness", []string{"harness", config}, "chalk: chalk harness runs only inside a Linux sandbox: " + box + "\n" + harnessHint},
		{"exec-student", []string{"harness", "exec-student"}, "chalk: chalk harness exec-student runs only inside a Linux sandbox: " + box + "\n" + harnessHint},
		{"check confinement", []string{"check", "confinement"}, "chalk: chalk check confinement runs only inside a Linux sandbox: " + box + "\n" +
			"hint: 'chalk doctor --confinement' runs it in a sandbox of each ready runtime (on macOS, with CHALK_HARNESS_BINARY set to a static Linux chalk)\n"},
		{"server", []string{"server", "--data", t.TempDir()}, "chalk: chalk server runs only on Linux: the host compute class needs Linux\n" +
			"hint: run chalk server on a Linux machine with docker, and reach it from this one with 'chalk login'\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := cli.Main(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, 1, code)
			require.Equal(t, tc.want, stderr.String())
			require.Empty(t, stdout.String())
		})
	}
}
