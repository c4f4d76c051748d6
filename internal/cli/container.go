package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/client"
	"github.com/chalk-rl/chalk/internal/env"
)

func (a *app) containerCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "container",
		Short: "Run and manage long-lived containers on the Chalk API",
		Long: `Containers run on the Chalk API server, each with a name (unique among
yours), an ID, an image, a compute class and a lifetime, after which the
server stops it. A container has no inbound port and no route to the
internet; reach it with 'chalk session exec' and 'chalk session proxy'
(and ssh, after 'chalk sandbox configure-ssh'). Every command takes a
container's name or its ID.`,
		Args: groupArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "project directory whose .chalk/config.toml to use (default: search up from the current directory)")
	cmd.AddCommand(a.containerRunCommand(&dir), a.containerLsCommand(&dir), a.containerInspectCommand(&dir),
		a.containerLogsCommand(&dir), a.containerStopCommand(&dir), a.containerRmCommand(&dir))
	return cmd
}

func (a *app) containerRunCommand(dir *string) *cobra.Command {
	var (
		req        wire.RunRequest
		entrypoint string
		memory     string
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "run --image IMAGE [--name NAME] [flags] [-- ARG...]",
		Short: "Start a container; its ID goes to stdout",
		Long: `Start a container from IMAGE: one you built with 'chalk image build', or one
the server's engine has. The image's own entrypoint runs and keeps it
alive; --entrypoint replaces it, with ARGs after '--' as its arguments.

  chalk container run --image dev-box --name my-box --compute-class host --lifetime 8h

The server stops the container when --lifetime ends (default: the
server's, one hour unless configured). Sessions need --compute-class host.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Image == "" {
				return &usageError{err: fmt.Errorf("--image is required"), help: "chalk container run --image IMAGE --name NAME"}
			}
			if entrypoint != "" {
				req.Entrypoint = []string{entrypoint}
			}
			req.Command = args
			if len(args) > 0 && entrypoint == "" {
				return &usageError{err: fmt.Errorf("arguments %q need --entrypoint", args), help: "pass --entrypoint PROGRAM, with its arguments after '--'"}
			}
			for i, kv := range req.Env {
				if !strings.Contains(kv, "=") {
					v, ok := os.LookupEnv(kv)
					if !ok {
						return &usageError{err: fmt.Errorf("--env %s: not set in your environment", kv), help: "write --env KEY=value, or set KEY first"}
					}
					req.Env[i] = kv + "=" + v
				}
			}
			if memory != "" {
				n, err := env.ParseSize(memory)
				if err == nil && n <= 0 {
					err = fmt.Errorf("size %q is not more than zero", memory)
				}
				if err != nil {
					return &usageError{err: fmt.Errorf("--memory: %w", err), help: "write --memory as a size: 512m, 2GiB (a bare letter and KiB, MiB, GiB are binary; KB, MB, GB are decimal)"}
				}
				req.MemoryBytes = n
			}
			c, err := a.apiClient(*dir)
			if err != nil {
				return err
			}
			got, err := c.Run(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONOut(a.stdout, got)
			}
			fmt.Fprintln(a.stdout, got.ID)
			fmt.Fprintf(a.stderr, "container %s is %s; it stops at %s\n", got.Name, got.State, got.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Image, "image", "", "image to run (required)")
	f.StringVar(&req.Name, "name", "", "name, unique among your containers (default: box-<first part of the ID>)")
	f.StringVar(&req.ComputeClass, "compute-class", "host", "where it runs: host (this server's machine) or kubernetes")
	f.StringVar(&req.Lifetime, "lifetime", "", "how long it may run before the server stops it, e.g. 30m, 8h (default: the server's)")
	f.StringVar(&entrypoint, "entrypoint", "", "program to run instead of the image's entrypoint")
	f.StringArrayVarP(&req.Env, "env", "e", nil, "environment variable KEY=value, or KEY to pass yours (repeatable)")
	f.Float64Var(&req.CPUs, "cpus", 0, "CPUs it may use, e.g. 1.5")
	f.StringVar(&memory, "memory", "", "memory it may use, e.g. 512m, 4g")
	f.StringArrayVar(&req.Volumes, "volume", nil, "mount a volume: NAME:/path (repeatable; create it with 'chalk volume create')")
	f.BoolVar(&asJSON, "json", false, "print the container as JSON")
	return cmd
}

func writeJSONOut(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (a *app) containerLsCommand(dir *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List your containers",
		Args:  maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.apiClient(*dir)
			if err != nil {
				return err
			}
			cs, err := c.Containers(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONOut(a.stdout, cs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tSTATE\tCLASS\tIMAGE\tSTOPS")
			for _, x := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.Name, x.ID, x.State, x.ComputeClass, x.Image, until(x))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func until(c wire.Container) string {
	if c.State != "running" {
		return "-"
	}
	d := time.Until(c.ExpiresAt).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return "in " + d.String()
}

func (a *app) containerInspectCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect NAME|ID",
		Short: "Print a container's details as JSON",
		Args:  nArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(*dir)
			if err != nil {
				return err
			}
			got, err := c.Container(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return writeJSONOut(a.stdout, got)
		},
	}
}

func (a *app) containerLogsCommand(dir *string) *cobra.Command {
	var (
		follow bool
		tail   int
	)
	cmd := &cobra.Command{
		Use:   "logs NAME|ID",
		Short: "Print what a container's entrypoint wrote",
		Args:  nArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(*dir)
			if err != nil {
				return err
			}
			return c.Logs(cmd.Context(), args[0], follow, tail, a.stdout)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing as it writes more")
	cmd.Flags().IntVar(&tail, "tail", -1, "print only the last N lines")
	return cmd
}

func (a *app) containerStopCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "stop NAME|ID...",
		Short: "Stop containers (SIGTERM, then SIGKILL after 10 s); they stay listed until rm",
		Args:  atLeastArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.eachArg(cmd.Context(), *dir, args, func(c *client.Client, ctx context.Context, ref string) error {
				_, err := c.Stop(ctx, ref)
				return err
			})
		},
	}
}

func (a *app) containerRmCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME|ID...",
		Short: "Remove containers, running or not; their volumes stay",
		Args:  atLeastArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.eachArg(cmd.Context(), *dir, args, (*client.Client).Remove)
		},
	}
}
