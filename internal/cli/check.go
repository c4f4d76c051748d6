package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/harness"
	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/run"
)

func (a *app) checkCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check what a sandbox enforces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &usageError{err: fmt.Errorf("chalk check needs a subcommand"), help: "see 'chalk check --help'"}
		},
	}
	cmd.AddCommand(a.checkConfinementCommand(), a.checkProbeCommand())
	return cmd
}

func (a *app) checkConfinementCommand() *cobra.Command {
	var asJSON bool
	var hardware string
	cmd := &cobra.Command{
		Use:   "confinement",
		Short: "Prove the student's limits and firewall hold in this sandbox (run as root inside it)",
		Long: `Run as root inside a sandbox, chalk check confinement sets up each part of
the student's box on an unused uid and attacks it: it allocates past a
memory limit, forks past a process limit, writes past a small file quota
it mounts, and connects to addresses the firewall must block. It reads each
configured value back, starts one student session under the default limits
(those of --hardware), undoes everything, and lists anything left behind.
It exits 1 when the student gets less protection than it should. The JSON
report's fields are described in docs/confinement.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := inSandbox("chalk check confinement", "'chalk doctor --confinement' runs it in a sandbox of each ready runtime (on macOS, with "+run.HarnessEnv+" set to a static Linux chalk)"); err != nil {
				return err
			}
			mem, err := hardwareMemory(hardware)
			if err != nil {
				return err
			}
			self, err := harness.Self()
			if err != nil {
				return err
			}
			rep := confine.CheckConfinement(cmd.Context(), confine.CheckOptions{
				Self: self, Hardware: hardware, StudentMemoryBytes: mem,
			})
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				writeReport(a, rep)
			}
			if !rep.OK {
				return &silentError{code: ExitFailed}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&hardware, "hardware", "default", "the hardware whose default memory limit the student session gets")
	return cmd
}

// hardwareMemory is the student's default memory limit on hardware.
func hardwareMemory(name string) (int64, error) {
	if name == "" || name == "default" {
		return env.DefaultMemoryBytes - env.HarnessMemoryBytes, nil
	}
	return 0, hint.Newf("leave --hardware out for the default hardware (2 CPUs, 4 GiB)",
		"unknown hardware %q: without a hardware_limits plugin the only hardware is \"default\"", name)
}

func writeReport(a *app, rep *confine.Report) {
	fmt.Fprintf(a.stdout, "confinement check as uid %d, hardware %s (student memory %s)\n\n", rep.UID, rep.Hardware, sizeString(rep.StudentMemoryBytes))
	for _, c := range rep.Checks {
		name := c.Name
		if c.Enforcement != "" {
			name += " [" + c.Enforcement + "]"
		}
		fmt.Fprintf(a.stdout, "%-4s  %s", strings.ToUpper(c.Status), name)
		if c.Configured != "" {
			fmt.Fprintf(a.stdout, "; configured: %s", c.Configured)
		}
		fmt.Fprintln(a.stdout)
		if c.Observed != "" {
			fmt.Fprintf(a.stdout, "      saw: %s\n", c.Observed)
		}
		if c.Reason != "" {
			fmt.Fprintf(a.stdout, "      why: %s\n", c.Reason)
		}
	}
	fmt.Fprintln(a.stdout)
	if len(rep.LeftBehind) == 0 {
		fmt.Fprintln(a.stdout, "left behind: nothing")
	} else {
		fmt.Fprintf(a.stdout, "left behind:\n  %s\n", strings.Join(rep.LeftBehind, "\n  "))
	}
	if rep.OK {
		fmt.Fprintln(a.stdout, "the student is confined")
	} else {
		fmt.Fprintln(a.stdout, "the student gets less protection than it should")
	}
}

func (a *app) checkProbeCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "probe KIND [ARG]",
		Short:  "One attack, made as the student by chalk check confinement",
		Hidden: true,
		Args:   cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 2 {
				arg = args[1]
			}
			if code := confine.Probe(args[0], arg, a.stdout); code != 0 {
				return &silentError{code: code}
			}
			return nil
		},
	}
}
