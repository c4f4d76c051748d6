package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/registry"
)

func (a *app) doctorCommand() *cobra.Command {
	var runtimeName string
	var asJSON bool
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
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"default": def, "checks": all, "ready": ready, "not_ready": notReady}); err != nil {
					return err
				}
			} else {
				runtime.WriteChecks(a.stdout, all)
				fmt.Fprintf(a.stdout, "\ndefault runtime: %s (%s)\n", def, why)
				fmt.Fprintf(a.stdout, "ready: %s\n", orNone(ready))
				fmt.Fprintf(a.stdout, "not ready: %s\n", orNone(notReady))
			}
			if len(ready) == 0 || (runtimeName != "" && len(notReady) > 0) {
				return &silentError{code: ExitFailed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runtimeName, "runtime", "", "check only this runtime")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	return cmd
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
