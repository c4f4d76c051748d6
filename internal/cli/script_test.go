package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/chalk-rl/chalk/internal/cli"
	"github.com/chalk-rl/chalk/internal/testenv"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"chalk": func() { os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

func TestScripts(t *testing.T) {
	bin := testenv.StaticChalk(t)
	realDocker, _ := exec.LookPath("docker")
	_, dockerErr := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	root, _ := filepath.Abs("../..")
	_, kvmErr := os.Stat("/dev/kvm")
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("CHALK_HARNESS_BINARY", bin)
			e.Setenv("FAKE_REAL_DOCKER", realDocker)
			e.Setenv("ROOT", root)
			e.Setenv("ORIGPATH", e.Getenv("PATH"))
			// The directory testscript put chalk in, for scripts that
			// narrow PATH.
			e.Setenv("CHALKDIR", strings.Split(e.Getenv("PATH"), string(os.PathListSeparator))[0])
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("BASE_IMAGE", baseImage())
			e.Setenv("FAKES", filepath.Join(root, "internal", "runtime"))
			if p := os.Getenv("DOCKER_HOST"); p != "" {
				e.Setenv("DOCKER_HOST", p)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "docker":
				if dockerErr != nil && os.Getenv("CI") != "" {
					t.Fatalf("CI needs a docker daemon: %v", dockerErr)
				}
				return dockerErr == nil, nil
			case "kvm":
				return kvmErr == nil, nil
			}
			return false, &unknownCondition{cond}
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"rundir": cmdRunDir,
		},
	})
}

func baseImage() string {
	if v := os.Getenv(testenv.BaseImageEnv); v != "" {
		return v
	}
	return "debian:bookworm-slim"
}

type unknownCondition struct{ c string }

func (u *unknownCondition) Error() string { return "unknown condition " + u.c }

// rundir VAR: sets VAR to the only run directory under $WORK/runs.
func cmdRunDir(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: rundir VAR")
	}
	matches, _ := filepath.Glob(filepath.Join(ts.Getenv("WORK"), "runs", "*"))
	if neg {
		if len(matches) != 0 {
			ts.Fatalf("want no run directory, have %s", strings.Join(matches, " "))
		}
		return
	}
	if len(matches) != 1 {
		ts.Fatalf("want exactly one run directory, have %d: %s", len(matches), strings.Join(matches, " "))
	}
	ts.Setenv(args[0], matches[0])
}
