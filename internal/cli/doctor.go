package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/registry"
)

func (a *app) doctorCommand() *cobra.Command {
	var runtimeName, image string
	var asJSON, confinement bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check which runtimes are set up, and how to fix the rest",
		Long: `Check every runtime's requirements (or one runtime's, with --runtime) and
print each check as pass, fail or skip, with the exact fix for each failure.
chalk build and chalk run run the same checks for their runtime and stop
with the same text.

Exit status: with --runtime, 1 when any of its checks fails; without, 1 when
no runtime at all is ready.`,
		Args: maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := registry.Names
			if runtimeName != "" {
				if _, err := registry.Lookup(runtimeName); err != nil {
					return &usageError{err: err, help: hint.Of(err)}
				}
				names = []string{runtimeName}
			}
			def, why := registry.Default(runtime.RealHost())
			var all []runtime.Check
			var ready, notReady []string
			for _, n := range names {
				rt, _ := registry.Lookup(n)
				checks := rt.Preflight(cmd.Context())
				all = append(all, checks...)
				if len(runtime.Failed(checks)) == 0 {
					ready = append(ready, n)
				} else {
					notReady = append(notReady, n)
				}
			}
			var table []confinementRow
			if confinement {
				table = a.measureConfinement(cmd.Context(), names, ready, image)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				out := map[string]any{"default": def, "checks": all, "ready": ready, "not_ready": notReady}
				if confinement {
					out["confinement"] = table
				}
				if err := enc.Encode(out); err != nil {
					return err
				}
			} else {
				runtime.WriteChecks(a.stdout, all)
				fmt.Fprintf(a.stdout, "\ndefault runtime: %s (%s)\n", def, why)
				fmt.Fprintf(a.stdout, "ready: %s\n", orNone(ready))
				fmt.Fprintf(a.stdout, "not ready: %s\n", orNone(notReady))
				if confinement {
					writeConfinementTable(a.stdout, table)
				}
			}
			if len(ready) == 0 || (runtimeName != "" && len(notReady) > 0) {
				return &silentError{code: ExitFailed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runtimeName, "runtime", "", "check only this runtime")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	cmd.Flags().BoolVar(&confinement, "confinement", false, "also measure what each ready runtime gives the student, by running chalk check confinement in a sandbox")
	cmd.Flags().StringVar(&image, "image", "debian:bookworm-slim", "the image the --confinement sandboxes run")
	return cmd
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// confinementRow is one runtime's line in the confinement table.
type confinementRow struct {
	Runtime string            `json:"runtime"`
	Limits  map[string]string `json:"limits,omitempty"` // memory, processes, disk, network → kernel, watchdog, none
	OK      bool              `json:"ok"`
	Note    string            `json:"note,omitempty"`
}

// measureConfinement runs the confinement check in a sandbox on each
// ready runtime: the table says what was measured, never what is
// assumed.
func (a *app) measureConfinement(ctx context.Context, names, ready []string, image string) []confinementRow {
	var rows []confinementRow
	for _, n := range names {
		row := confinementRow{Runtime: n}
		if !slices.Contains(ready, n) {
			row.Note = "not measured: the runtime is not ready"
			rows = append(rows, row)
			continue
		}
		rt, _ := registry.Lookup(n)
		rep, err := run.MeasureConfinement(ctx, rt, image)
		if err != nil {
			row.Note = "not measured: " + runtime.FirstLine(err.Error())
		} else {
			row.Limits, row.OK = run.Enforcement(rep), rep.OK
			if !rep.OK {
				row.Note = "the student gets less protection than it should; run chalk check confinement in a sandbox for the reasons"
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func writeConfinementTable(w io.Writer, rows []confinementRow) {
	fmt.Fprintf(w, "\nwhat each runtime gives the student (measured):\n")
	fmt.Fprintf(w, "  %-16s %-9s %-9s %-9s %-9s\n", "runtime", "memory", "processes", "disk", "network")
	for _, r := range rows {
		if r.Limits == nil {
			fmt.Fprintf(w, "  %-16s %s\n", r.Runtime, r.Note)
			continue
		}
		fmt.Fprintf(w, "  %-16s %-9s %-9s %-9s %-9s", r.Runtime, r.Limits["memory"], r.Limits["processes"], r.Limits["disk"], r.Limits["network"])
		if r.Note != "" {
			fmt.Fprintf(w, "  %s", r.Note)
		}
		fmt.Fprintln(w)
	}
}
