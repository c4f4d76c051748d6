// Command chalk builds and runs agent environments in sandboxes.
package main

import (
	"context"
	"os"

	"github.com/chalk-rl/chalk/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
