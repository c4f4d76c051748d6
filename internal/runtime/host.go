package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
)

// Access modes for Host.Access, as in access(2).
const (
	AccessRead  uint32 = 4 // R_OK
	AccessWrite uint32 = 2 // W_OK
	AccessExec  uint32 = 1 // X_OK
)

// Host is what preflight checks may look at on the machine. Checks only read
// through it; none of its functions change anything. Tests replace it with a
// fake; RealHost returns the machine's own.
type Host struct {
	// GOOS is the operating system, as runtime.GOOS.
	GOOS string
	// LookPath finds an executable on PATH, as exec.LookPath.
	LookPath func(file string) (string, error)
	// ReadFile reads a whole file, as os.ReadFile.
	ReadFile func(name string) ([]byte, error)
	// Stat describes a file, following symlinks, as os.Stat.
	Stat func(name string) (fs.FileInfo, error)
	// Access reports whether the real user may access path in mode, a
	// combination of AccessRead, AccessWrite and AccessExec, as access(2).
	Access func(path string, mode uint32) error
	// Run runs a command and returns its standard output. When it fails,
	// the error's text is what the command printed on standard error, or
	// how it failed when it printed nothing.
	Run func(ctx context.Context, name string, args ...string) (stdout []byte, err error)
	// Getenv reads an environment variable, as os.Getenv.
	Getenv func(key string) string
	// Geteuid returns the effective user ID, as os.Geteuid.
	Geteuid func() int
	// CacheDir is the user's cache directory: $XDG_CACHE_HOME when it is
	// set to an absolute path, else ~/.cache, or "" when neither is known.
	// Runtimes keep their downloads under CacheDir/chalk.
	CacheDir string
}

// RealHost returns the Host of the machine Chalk runs on.
func RealHost() Host {
	home, _ := os.UserHomeDir()
	return Host{
		GOOS:     goruntime.GOOS,
		LookPath: exec.LookPath,
		ReadFile: os.ReadFile,
		Stat:     os.Stat,
		Access:   access,
		Run:      run,
		Getenv:   os.Getenv,
		Geteuid:  os.Geteuid,
		CacheDir: UserCacheDir(os.Getenv, home),
	}
}

// UserCacheDir returns $XDG_CACHE_HOME when it is an absolute path, else
// home/.cache, or "" when home is "" too. Unlike os.UserCacheDir it is the
// same on every system.
func UserCacheDir(getenv func(string) string, home string) string {
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return d
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".cache")
}

func access(path string, mode uint32) error {
	if err := syscall.Access(path, mode); err != nil {
		return &fs.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}

// RunError is the error of a command run by RealHost's Run.
type RunError struct {
	Cmd    string // the command line, for logs
	Stderr string // what it printed on standard error, trimmed
	Err    error  // how it failed
}

func (e *RunError) Error() string {
	if e.Stderr != "" {
		return e.Stderr
	}
	return e.Cmd + ": " + e.Err.Error()
}

func (e *RunError) Unwrap() error { return e.Err }

func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%v)", ctxErr, err)
	}
	return stdout.Bytes(), &RunError{
		Cmd:    strings.Join(append([]string{name}, args...), " "),
		Stderr: strings.TrimSpace(stderr.String()),
		Err:    err,
	}
}
