package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/store"
)

func (a *app) tokenCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the Chalk API server's tokens (run on the server)",
		Long: `Manage the bearer tokens of the Chalk API server whose data directory is
--data (the same as 'chalk server --data'). These commands open the
server's database directly, so they run on the server's machine, while the
server runs or not. A token belongs to an owner: it sees and touches only
that owner's containers, volumes and images. Only a hash of each token is
stored; the token itself is shown once, at creation.`,
		Args: groupArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data", "", "the server's data directory (env CHALK_SERVER_DATA)")
	open := func(cmd *cobra.Command) (*store.Store, error) {
		dir, err := serverDataDir(dataDir)
		if err != nil {
			return nil, err
		}
		st, err := store.Open(cmd.Context(), filepath.Join(dir, "chalk.db"))
		return st, hint.Wrap(err, "check --data: it is the directory 'chalk server' keeps its state in")
	}
	var owner, name string
	create := &cobra.Command{
		Use:   "create --owner NAME",
		Short: "Make a token for an owner and print it (once) on stdout",
		Args:  maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if owner == "" {
				return &usageError{err: errors.New("--owner is required"), help: "chalk token create --owner alice"}
			}
			if !ownerPattern(owner) {
				return &usageError{err: fmt.Errorf("owner %q is not valid", owner), help: "use letters, digits, '.', '_', '-' and '@'"}
			}
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			t, secret, err := st.CreateToken(cmd.Context(), owner, name)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, secret)
			fmt.Fprintf(a.stderr, "token %s for owner %s; it is not shown again. Revoke it with 'chalk token revoke %s'.\n", t.ID, owner, t.ID)
			return nil
		},
	}
	create.Flags().StringVar(&owner, "owner", "", "who the token acts as")
	create.Flags().StringVar(&name, "name", "", "a label for the token, e.g. the laptop it is for")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List tokens (never their secrets)",
		Args:  maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			ts, err := st.Tokens(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tOWNER\tNAME\tCREATED\tSTATUS")
			for _, t := range ts {
				status := "active"
				if !t.RevokedAt.IsZero() {
					status = "revoked " + t.RevokedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Owner, t.Name, t.CreatedAt.Format(time.RFC3339), status)
			}
			return tw.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token: it is refused from then on, also by sessions being opened",
		Args:  nArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.RevokeToken(cmd.Context(), args[0]); errors.Is(err, store.ErrNotFound) {
				return hint.Newf("list them with 'chalk token ls'", "no token %q", args[0])
			} else if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "revoked token %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, ls, revoke)
	return cmd
}

func ownerPattern(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == '@') {
			return false
		}
	}
	return true
}

// groupArgs refuses an unknown subcommand of a command group.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{err: fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath()),
			help: fmt.Sprintf("see '%s --help'", cmd.CommandPath())}
	}
	return nil
}

// nArgs is cobra's ExactArgs as a usage error.
func nArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{err: fmt.Errorf("%s takes %d argument(s), got %d", cmd.CommandPath(), n, len(args)),
				help: fmt.Sprintf("usage: %s", cmd.UseLine())}
		}
		return nil
	}
}

// atLeastArgs is cobra's MinimumNArgs as a usage error.
func atLeastArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return &usageError{err: fmt.Errorf("%s takes at least %d argument(s), got %d", cmd.CommandPath(), n, len(args)),
				help: fmt.Sprintf("usage: %s", cmd.UseLine())}
		}
		return nil
	}
}
