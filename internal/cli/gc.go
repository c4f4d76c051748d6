package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/registry"
)

func (a *app) gcCommand() *cobra.Command {
	var runtimeName string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove the sandboxes of runs whose chalk died",
		Long: `Remove the sandboxes left behind when chalk itself was killed (SIGKILL, a
crash, a lost machine) in the middle of a run. Chalk finds them by their
labels: a sandbox goes when its owner label names this host and a chalk
process that is no longer running. It leaves alone sandboxes whose chalk
still runs, those made on another host (a shared docker daemon, a remote
DOCKER_HOST: chalk there collects them), those kept with --keep-containers
or --prepare-only, and anything without Chalk's labels.

Without --runtime it looks at every container engine whose client is on
PATH. chalk run and chalk build do the same clean-up on their own, at most
once every 10 minutes.

Exit status: 1 when a runtime could not be listed or a sandbox could not be
removed (the other runtimes are still cleaned up).`,
		Args: maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rts := registry.Installed()
			if runtimeName != "" {
				rt, err := registry.Lookup(runtimeName)
				if err != nil {
					return &usageError{err: err, help: hint.Of(err)}
				}
				rts = []runtime.Runtime{rt}
			}
			var all []run.Leftover
			var errs []error
			for _, rt := range rts {
				found, err := run.Collect(cmd.Context(), rt, run.GCOptions{DryRun: dryRun, Log: a.log})
				all = append(all, found...)
				if err != nil {
					errs = append(errs, err)
				}
			}
			if asJSON {
				msgs := []string{}
				for _, err := range errs {
					msgs = append(msgs, err.Error())
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if all == nil {
					all = []run.Leftover{}
				}
				if err := enc.Encode(map[string]any{"sandboxes": all, "errors": msgs}); err != nil {
					return err
				}
			} else {
				a.writeLeftovers(rts, all, len(errs) > 0)
			}
			if len(errs) > 0 {
				for _, err := range errs {
					a.report(err)
				}
				return &silentError{code: ExitFailed}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&runtimeName, "runtime", "", "look only at this runtime's sandboxes")
	f.BoolVar(&dryRun, "dry-run", false, "say what would be removed, and remove nothing")
	f.BoolVar(&asJSON, "json", false, "print every sandbox looked at, and what was done with it, as JSON")
	return cmd
}

// writeLeftovers prints one line per sandbox and a total; failed means
// some runtime could not be looked at, so "nothing" would not be true.
func (a *app) writeLeftovers(rts []runtime.Runtime, all []run.Leftover, failed bool) {
	if len(rts) == 0 {
		fmt.Fprintln(a.stdout, "no container engine's client (docker, podman, nerdctl) is on PATH: nothing to look at")
		return
	}
	n := 0
	verb := run.Removed
	for _, l := range all {
		id := l.Run
		if id == "" {
			id = "none"
		}
		fmt.Fprintf(a.stdout, "%-12s %-8s %s (run %s, owner %s): %s\n", l.Action, l.Runtime, l.Name, id, l.Owner, l.Why)
		if l.Action == run.Removed || l.Action == run.WouldRemove {
			n++
			verb = l.Action
		}
	}
	if n == 0 && !failed {
		fmt.Fprintln(a.stdout, "no sandbox of a dead chalk: nothing to remove")
		return
	}
	fmt.Fprintf(a.stdout, "%s %d %s\n", verb, n, plural(n, "sandbox", "sandboxes"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// The automatic clean-up: how often, and for how long at most.
const (
	sweepEvery   = 10 * time.Minute
	sweepTimeout = 5 * time.Second
)

// sweepBefore removes the sandboxes of dead chalk processes before a
// command that makes sandboxes (chalk run, chalk build), at most once
// every sweepEvery and for at most sweepTimeout. It never fails the
// command: what goes wrong is logged at debug level.
func (a *app) sweepBefore(cmd *cobra.Command) {
	if !cmd.HasParent() || cmd.Parent().HasParent() || (cmd.Name() != "run" && cmd.Name() != "build") {
		return
	}
	home, _ := os.UserHomeDir()
	cache := runtime.UserCacheDir(os.Getenv, home)
	if cache == "" || !run.SweepDue(filepath.Join(cache, "chalk", "gc-swept"), sweepEvery, time.Now()) {
		return
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), sweepTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	removed := 0
	for _, rt := range registry.Installed() {
		wg.Go(func() {
			found, err := run.Collect(ctx, rt, run.GCOptions{Log: a.log})
			if err != nil {
				a.log.Debug("clean up sandboxes of dead runs", "runtime", rt.Name(), "err", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, l := range found {
				if l.Action == run.Removed {
					removed++
				}
			}
		})
	}
	wg.Wait()
	if removed > 0 {
		a.log.Info(fmt.Sprintf("removed %d %s left by chalk processes that died; 'chalk gc' lists what it finds", removed, plural(removed, "sandbox", "sandboxes")))
	}
}
