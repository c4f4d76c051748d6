package cli

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/harness"
	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/transcript"
)

func (a *app) harnessCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "harness CONFIG",
		Short:  "Run inside a sandbox: start the student and the grader (started by chalk run)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := inSandbox("chalk harness", harnessHint); err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(a.stderr, nil))
			cfg, err := harness.ReadConfig(args[0])
			if err != nil {
				return err
			}
			// The config may hold the model proxy's key: once read, it
			// need not stay on any disk, not even if chalk on the host is
			// killed and never cleans the run's directory.
			if err := os.Remove(args[0]); err != nil {
				log.Warn("remove the run's config after reading it", "err", err)
			}
			stream, err := harness.NewStream(harness.EventLog)
			if err != nil {
				return err
			}
			defer stream.Close()
			h := &harness.Harness{Config: cfg, Events: transcript.NewWriter(stream), Stream: stream, Log: log}
			status := h.Run(cmd.Context())
			stream.Drained(10 * time.Second)
			if status != transcript.StatusOK {
				return &silentError{code: 1}
			}
			return nil
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:    "exec-student",
		Short:  "Become the student and exec its command (started by the harness)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := inSandbox("chalk harness exec-student", harnessHint); err != nil {
				return err
			}
			// Exec returns only when it failed; it told the harness why.
			err := confine.Exec()
			_ = err
			return &silentError{code: 127}
		},
	})
	return cmd
}

// harnessHint says where the harness runs instead.
var harnessHint = "chalk run starts it in the sandbox; on macOS, run with --runtime docker and " + run.HarnessEnv + " set to a static Linux chalk (docs/runtimes.md)"

// inSandbox refuses command, which runs only inside a Linux sandbox,
// anywhere the student's box cannot be built; fix says where it runs.
func inSandbox(command, fix string) error {
	if err := confine.Supported(); err != nil {
		return hint.Wrap(fmt.Errorf("%s runs only inside a Linux sandbox: %w", command, err), fix)
	}
	return nil
}
