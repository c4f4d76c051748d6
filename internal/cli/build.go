package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/run"
)

func (a *app) buildCommand() *cobra.Command {
	var runtimeName string
	var force bool
	cmd := &cobra.Command{
		Use:   "build [DIR]",
		Short: "Build an environment's image",
		Long: `Build the image of the environment in DIR (default: the current directory)
for a runtime. The image is tagged chalk-NAME:HASH, HASH being the content
hash of the build context (.dockerignore honoured), so an unchanged
environment is not built again. The build log streams to stderr; the image's
tag is printed on stdout.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadEnv(args)
			if err != nil {
				return err
			}
			rt, err := a.pickRuntime(cmd.Context(), runtimeName)
			if err != nil {
				return err
			}
			tag, _, built, err := run.Build(cmd.Context(), rt, e, force, a.stderr)
			if err != nil {
				return err
			}
			if !built {
				a.log.Info("image is up to date", "image", tag)
			}
			fmt.Fprintln(a.stdout, tag)
			return nil
		},
	}
	cmd.Flags().StringVar(&runtimeName, "runtime", "", runtimeFlagHelp)
	cmd.Flags().BoolVar(&force, "rebuild", false, "build even if the image is up to date")
	return cmd
}
