package cli

import (
	"fmt"
	goruntime "runtime"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X .../cli.Version=v1.2.3".
var Version = "dev"

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print chalk's version",
		Args:  maxArgs(0),
		Run: func(*cobra.Command, []string) {
			fmt.Fprintf(a.stdout, "chalk %s (%s, %s/%s)\n", Version, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
		},
	}
}
