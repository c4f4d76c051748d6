package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/harness"
	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/modelproxy"
	"github.com/chalk-rl/chalk/internal/plugin"
	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/runtime/registry"
	"github.com/chalk-rl/chalk/internal/transcript"
)

func (a *app) runCommand() *cobra.Command {
	var (
		runtimeName string
		modelProxy  string
		mounts      []string
		count       int
		parallel    int
		asJSON      bool
		plain       bool
		dev         bool
		devMount    string
		o           run.Options
	)
	cmd := &cobra.Command{
		Use:   "run [DIR]",
		Short: "Run an environment: the student, then the grader, in a sandbox",
		Long: `Run the environment in DIR (default: the current directory). Chalk builds its
image if needed, starts a sandbox on the runtime with Chalk's harness inside,
runs the student as an unprivileged user and then the grader, and leaves the
run's transcript and a copy of the sandbox's /out in RUNS_DIR/TIME-ID/.
The sandbox is removed at the end, also on failure and on Ctrl-C, unless
--keep-containers is given.

CHALK_STUDENT_NETWORK, CHALK_INFERENCE_SERVICE_TIER and LOGURU_LEVEL are
forwarded from your shell into the sandbox.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadEnv(args)
			if err != nil {
				return err
			}
			for _, m := range mounts {
				mt, err := run.ParseMount(m)
				if err != nil {
					return err
				}
				o.Mounts = append(o.Mounts, mt)
			}
			if modelProxy != "" {
				if err := run.CheckModelProxy(cmd.Context(), modelProxy); err != nil {
					return err
				}
				o.Model = &harness.ModelConfig{URL: modelProxy, APIKey: os.Getenv(run.ModelKeyEnv)}
			}
			if tier := os.Getenv(modelproxy.ServiceTierEnv); tier != "" {
				if err := modelproxy.CheckServiceTier(tier); err != nil {
					return err
				}
			}
			plugins, err := plugin.Load("") // the working directory's

			if err != nil {
				return err
			}
			rt, hw, err := a.runRuntime(cmd.Context(), runtimeName, plugins, e)
			if err != nil {
				return err
			}
			if dev {
				if !path.IsAbs(devMount) || path.Clean(devMount) == "/" {
					return &usageError{err: fmt.Errorf("--dev-mount %q: give an absolute path other than /", devMount), help: "e.g. --dev-mount /env"}
				}
				o.DevMount = path.Clean(devMount)
				if err := checkMounts(rt, []runtime.Mount{{Source: e.Dir, Target: o.DevMount, ReadOnly: true}}); err != nil {
					return hint.Wrap(fmt.Errorf("--dev: %w", err), "drop --dev on this runtime, or pick one that mounts host directories")
				}
			}
			if err := checkMounts(rt, o.Mounts); err != nil {
				return err
			}
			if err := applyPlugins(cmd.Context(), plugins, hw, e, rt, &o); err != nil {
				return err
			}
			o.Env, o.Runtime, o.Log, o.BuildLog = e, rt, a.log, a.stderr
			o.Forward = registry.ForwardedEnv()
			if v, ok := o.Forward["CHALK_STUDENT_NETWORK"]; ok && v != "" {
				if err := confine.CheckPolicy(v); err != nil {
					return hint.Wrap(err, "unset CHALK_STUDENT_NETWORK for the default, or see docs/confinement.md for what each policy allows")
				}
				o.Network = v
			}
			if count < 1 {
				return &usageError{err: fmt.Errorf("-n %d: the number of runs must be at least 1", count), help: "e.g. chalk run -n 8"}
			}
			if parallel < 1 {
				parallel = min(count, 16)
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			var show sink
			switch {
			case asJSON:
				show = &jsonSink{w: a.stdout, ids: map[int]string{}}
			case !plain && isTerminal(a.stderr):
				ui := newTUISink(a.stderr, count, e.Name, a.stdin, cancel)
				show = ui
				// Everything else that would write to the terminal
				// goes above the view.
				o.BuildLog = ui.ui
				o.Log = slog.New(slog.NewTextHandler(ui.ui, &slog.HandlerOptions{Level: a.level()}))
			case count > 1:
				show = &lineSink{w: a.stderr, n: count, ids: map[int]string{}}
			default:
				show = oneSink{p: &progress{w: a.stderr, start: time.Now()}}
			}
			summaryTo := a.stdout
			if asJSON {
				summaryTo = a.stderr
			}
			if count > 1 {
				if o.KeepContainers || o.PrepareOnly {
					return &usageError{err: errors.New("-n runs many sandboxes: --keep-containers and --prepare-only take one run"), help: "drop -n, or drop the flag"}
				}
				outs, wall, err := a.runMany(ctx, o, count, parallel, show)
				if err != nil {
					return err
				}
				return a.manySummary(summaryTo, outs, wall)
			}
			o.Event = func(e transcript.Event) { show.event(0, e) }
			res, err := run.Run(ctx, o)
			if err != nil && res == nil {
				show.event(0, transcript.Event{Type: transcript.RunFinished, Status: transcript.StatusError, Message: err.Error()})
			}
			show.close()
			if res != nil && res.Dir != "" {
				a.summary(summaryTo, rt, res)
			}
			if err != nil {
				return err
			}
			return runOutcome(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&runtimeName, "runtime", "", runtimeFlagHelp)
	f.StringArrayVar(&mounts, "mount", nil, "mount a host path into the sandbox: SOURCE:TARGET[:ro] (repeatable)")
	f.BoolVar(&o.KeepContainers, "keep-containers", false, "leave the sandbox in place when the run ends")
	f.BoolVar(&o.PrepareOnly, "prepare-only", false, "build the image and create the sandbox, then stop: run no student")
	f.BoolVar(&o.Rebuild, "rebuild", false, "build the image even if it is up to date")
	f.IntVarP(&count, "count", "n", 1, "run the environment this many times, in parallel, with the disk budget split between them")
	f.IntVar(&parallel, "parallel", 0, "with -n, at most this many runs at a time (default: all of them, up to 16)")
	f.BoolVar(&asJSON, "json", false, "print every event as a JSON line on stdout, for scripts: {\"index\":N,\"run\":ID,\"event\":{...}}")
	f.BoolVar(&dev, "dev", false, "for writing an environment: mount its directory live at --dev-mount and rebuild the image only when the Containerfile changes")
	f.StringVar(&devMount, "dev-mount", "/env", "where --dev mounts the environment directory")
	f.BoolVar(&plain, "plain", false, "print plain progress lines even when stderr is a terminal")
	f.StringVar(&modelProxy, "model-proxy", os.Getenv(run.ModelProxyEnv), "the OpenAI-compatible model proxy the student calls through the harness (env "+run.ModelProxyEnv+"; its key from "+run.ModelKeyEnv+")")
	f.StringVar(&o.RunsDir, "runs-dir", envOr("CHALK_RUNS_DIR", "runs"), "directory that gets one directory per run (env CHALK_RUNS_DIR)")
	return cmd
}

// runRuntime picks the run's runtime and runs its preflight. Without
// --runtime (flag), it asks the hardware plugin first: tasks whose
// hardware passes devices through (a GPU) run under docker, the others on
// the default. When the answer keeps the runtime it asked about, it is
// the run's hardware and is returned, so that the plugin runs once; nil
// when the plugin was not asked, or was asked about another runtime.
func (a *app) runRuntime(ctx context.Context, flag string, plugins *plugin.Plugins, e *env.Env) (runtime.Runtime, *plugin.Hardware, error) {
	name, why := chooseRuntime(flag)
	var hw *plugin.Hardware
	if flag == "" {
		h, err := plugins.Hardware(ctx, pluginRequest(e, name))
		if err != nil {
			return nil, nil, err
		}
		hw = &h
		if h.Passthrough() {
			if name != "docker" {
				// The request names the runtime, and the plugin may
				// answer differently for docker: it is asked again.
				hw = nil
			}
			name, why = "docker", fmt.Sprintf("the task's hardware %q passes devices through, and such tasks run under docker", h.Name)
		}
	}
	rt, err := a.openRuntime(ctx, name, why, false)
	return rt, hw, err
}

// applyPlugins asks the hardware_limits plugin for the sandbox's
// hardware, unless hw is its answer already, and the container_run_args
// plugin for its engine flags, so that a broken plugin stops the run
// before any sandbox starts.
func applyPlugins(ctx context.Context, plugins *plugin.Plugins, hw *plugin.Hardware, e *env.Env, rt runtime.Runtime, o *run.Options) error {
	req := pluginRequest(e, rt.Name())
	if hw == nil {
		h, err := plugins.Hardware(ctx, req)
		if err != nil {
			return err
		}
		hw = &h
	}
	if err := plugin.CheckRuntime(*hw, rt.Name()); err != nil {
		return err
	}
	args, err := plugins.RunArgs(ctx, req, *hw)
	if err != nil {
		return err
	}
	e.Hardware = hw.Env()
	o.ExtraArgs = append(o.ExtraArgs, args...)
	return nil
}

// pluginRequest tells the plugins about the environment e on the runtime
// called rt.
func pluginRequest(e *env.Env, rt string) plugin.Request {
	return plugin.Request{Environment: e.Name, EnvironmentDir: e.Dir, Hardware: e.Hardware, Runtime: rt}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// checkMounts refuses mounts the runtime cannot honour.
func checkMounts(rt runtime.Runtime, mounts []runtime.Mount) error {
	caps := rt.Capabilities()
	for _, m := range mounts {
		switch {
		case caps.Mounts == "":
			return hint.Newf("run without --mount, or pick another runtime", "the %s runtime does not support --mount", rt.Name())
		case caps.Mounts == "read-only" && !m.ReadOnly:
			return hint.Newf(fmt.Sprintf("mount it read-only: --mount %s:%s:ro", m.Source, m.Target),
				"the %s runtime only accepts read-only mounts: the VM cannot share a writable directory with the host", rt.Name())
		}
	}
	return nil
}

// summary prints where the run's results are, on stdout.
func (a *app) summary(w io.Writer, rt runtime.Runtime, res *run.Result) {
	fmt.Fprintf(w, "run %s: %s", res.ID, res.Status)
	if res.Reward != nil {
		fmt.Fprintf(w, " (reward %g)", *res.Reward)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "transcript: %s\n", res.Transcript)
	if res.Status != "prepared" {
		fmt.Fprintf(w, "out:        %s\n", res.Out)
	}
	if res.Kept && res.SandboxID != "" {
		fmt.Fprintf(w, "sandbox:    %s (kept; remove it with '%s')\n", res.Sandbox, removeHint(rt, res.Sandbox))
	}
}

// removeHint is the runtime's own command for removing the sandbox name.
func removeHint(rt runtime.Runtime, name string) string {
	if r, ok := rt.(interface{ RemoveCommand(string) string }); ok {
		return r.RemoveCommand(name)
	}
	return fmt.Sprintf("remove sandbox %s with the %s runtime's own tools", name, rt.Name())
}

// runOutcome turns a finished run's status into the command's result.
func runOutcome(res *run.Result) error {
	switch res.Status {
	case transcript.StatusOK, "prepared":
		return nil
	case transcript.StatusInterrupted:
		return hint.WithCode(errors.New("run interrupted; its transcript and /out so far are kept"), ExitInterrupt)
	}
	return hint.Wrap(fmt.Errorf("run %s %s: %s", res.ID, res.Status, res.Message),
		fmt.Sprintf("read what happened in %s", res.Transcript))
}
