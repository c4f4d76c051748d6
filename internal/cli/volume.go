package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/client"
)

func (a *app) volumeCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "volume",
		Short: "Persistent volumes on the Chalk API, for work that outlives a container",
		Long: `A volume is named storage on the Chalk API server that outlives any container.
Mount it with 'chalk container run --volume NAME:/path'. Names are yours
alone: another owner's volume of the same name is a different volume.`,
		Args: groupArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "project directory whose .chalk/config.toml to use")
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a volume",
		Args:  nArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(dir)
			if err != nil {
				return err
			}
			v, err := c.CreateVolume(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, v.Name)
			return nil
		},
	}
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List your volumes",
		Args:  maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.apiClient(dir)
			if err != nil {
				return err
			}
			vs, err := c.Volumes(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCREATED")
			for _, v := range vs {
				fmt.Fprintf(tw, "%s\t%s\n", v.Name, v.CreatedAt.Local().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	rm := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Delete volumes and their data; a volume a container mounts cannot be deleted",
		Args:  atLeastArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.eachArg(cmd.Context(), dir, args, (*client.Client).RemoveVolume)
		},
	}
	cmd.AddCommand(create, ls, rm)
	return cmd
}
