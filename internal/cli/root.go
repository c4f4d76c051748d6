// Package cli is chalk's command line: one file per command, each parsing
// its flags, calling the domain packages and printing. Errors are rendered
// once, here, with their hint.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/hint"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitFailed    = 1 // a run failed, a check failed, or an operation failed
	ExitUsage     = 2 // bad flags or arguments
	ExitInterrupt = 130
)

// app holds what every command shares.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
	verbose        bool
}

// Main runs chalk with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	return a.report(err)
}

func (a *app) report(err error) int {
	var usage *usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(a.stderr, "chalk: %v\n", err)
		if usage.help != "" {
			fmt.Fprintf(a.stderr, "hint: %s\n", usage.help)
		}
		return ExitUsage
	}
	var quiet *silentError
	if errors.As(err, &quiet) {
		return quiet.code
	}
	fmt.Fprintf(a.stderr, "chalk: %v\n", err)
	if h := hint.Of(err); h != "" {
		fmt.Fprintf(a.stderr, "hint: %s\n", h)
	}
	return hint.ExitCode(err)
}

// level is the log level -v asks for.
func (a *app) level() slog.Level {
	if a.verbose {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// usageError is a mistake in the command line.
type usageError struct {
	err  error
	help string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// silentError ends the command with code after it printed its own report.
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "chalk",
		Short: "Build and run agent environments in sandboxes you can trust",
		Long: `Chalk builds an environment's image (chalk build) and runs it (chalk run) on a
runtime: a VM (firecracker, apple-container, modal) or a container engine
(docker, podman, nerdctl, docker:gvisor). Inside the sandbox a trusted
harness runs the untrusted student under confinement. Every run leaves a
transcript and /out on the host.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: a.level()}))
			a.sweepBefore(cmd)
		},
	}
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log more detail to stderr")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{err: err, help: fmt.Sprintf("see '%s --help'", cmd.CommandPath())}
	})
	root.AddCommand(
		a.buildCommand(),
		a.runCommand(),
		a.doctorCommand(),
		a.harnessCommand(),
		a.versionCommand(),
		a.sandboxCommand(),
		a.checkCommand(),
		a.modelProxyCommand(),
		a.viewCommand(),
		a.gcCommand(),
		a.serverCommand(),
		a.tokenCommand(),
		a.loginCommand(),
		a.containerCommand(),
		a.imageCommand(),
		a.volumeCommand(),
		a.sessionCommand(),
	)
	return root
}

// exactArgs and maxArgs are cobra's validators, returning usage errors.
func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return &usageError{err: fmt.Errorf("%s takes at most %d argument(s), got %d", cmd.CommandPath(), n, len(args)),
				help: fmt.Sprintf("see '%s --help'", cmd.CommandPath())}
		}
		return nil
	}
}
