package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/atomicfile"
	"github.com/chalk-rl/chalk/internal/config"
	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/sshconfig"
)

func (a *app) sandboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Work with Chalk sandboxes from your own tools",
		Args:  groupArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.configureSSHCommand())
	return cmd
}

func (a *app) configureSSHCommand() *cobra.Command {
	var (
		dryRun, remove bool
		o              sshconfig.Options
		sshConfig, dir string
	)
	cmd := &cobra.Command{
		Use:   "configure-ssh",
		Short: "Let ssh, scp, rsync and editors reach sandboxes as chalk-sbx-<name or id>",
		Long: `Write a block into your ssh client configuration (default ~/.ssh/config)
so that any host named with the prefix reaches a Chalk sandbox, addressed by
its name or its ID:

  ssh chalk-sbx-<sandbox name or id>
  scp ./train.py chalk-sbx-my-box:/workspace/

The block's ProxyCommand runs 'chalk session proxy' for the project in --dir
(default: the current directory), with this chalk binary's absolute path.
The sandbox must be host-backed ('--compute-class host') and run an sshd.

The block sits between two marker lines. The first run puts it at the top of
the file, because ssh keeps the first value it reads for each option and a
'Host *' block further down would otherwise win; later runs rewrite it in
place, wherever it is, and touch nothing else. Re-run after moving chalk or
switching projects. --remove deletes it. --dry-run prints the block and
writes nothing.`,
		Args: maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dryRun && remove {
				return &usageError{err: errors.New("--dry-run and --remove cannot be combined"),
					help: "run with --remove alone to delete the block"}
			}
			path, err := sshConfigPath(sshConfig)
			if err != nil {
				return err
			}
			if remove {
				return a.removeSSHBlock(path)
			}
			if o.Chalk, err = chalkPath(); err != nil {
				return err
			}
			if o.Dir, err = config.ProjectDir(dir); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			block := sshconfig.Block(o)
			if dryRun {
				_, err := fmt.Fprint(a.stdout, block)
				return err
			}
			old, err := readConfig(path)
			if err != nil {
				return err
			}
			data, err := sshconfig.Apply(old, block)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if err := atomicfile.WriteFile(path, data); err != nil {
				return hint.Wrap(fmt.Errorf("write the ssh config: %w", err), "check that you can write to "+path+", or pick another file with --ssh-config")
			}
			fmt.Fprintf(a.stderr, "updated %s: 'ssh %s<sandbox name or id>' now reaches a sandbox\n", path, o.Prefix)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "print the block on stdout and write nothing")
	f.BoolVar(&remove, "remove", false, "delete the block from the ssh config")
	f.StringVar(&o.Prefix, "prefix", sshconfig.DefaultPrefix, "host name prefix that selects a sandbox")
	f.StringVar(&o.User, "user", sshconfig.DefaultUser, "user to log in as inside the sandbox")
	f.IntVar(&o.Port, "port", sshconfig.DefaultPort, "port sshd listens on inside the sandbox")
	f.StringVar(&sshConfig, "ssh-config", "", "ssh client config file to edit (default ~/.ssh/config)")
	f.StringVar(&dir, "dir", "", "project directory the proxy runs in (default: the current directory)")
	return cmd
}

func (a *app) removeSSHBlock(path string) error {
	old, err := readConfig(path)
	if err != nil {
		return err
	}
	data, removed, err := sshconfig.Remove(old)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !removed {
		fmt.Fprintf(a.stderr, "%s has no chalk block; nothing to remove\n", path)
		return nil
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return hint.Wrap(fmt.Errorf("write the ssh config: %w", err), "check that you can write to "+path)
	}
	fmt.Fprintf(a.stderr, "updated %s: removed the chalk block\n", path)
	return nil
}

// sshConfigPath is flag, "~/" expanded, or ~/.ssh/config.
func sshConfigPath(flag string) (string, error) {
	if flag != "" && flag != "~" && !strings.HasPrefix(flag, "~/") {
		return filepath.Abs(flag)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", hint.Wrap(err, "set HOME, or pass --ssh-config PATH")
	}
	if flag == "" {
		return filepath.Join(home, ".ssh", "config"), nil
	}
	return filepath.Join(home, strings.TrimPrefix(flag, "~")), nil
}

// readConfig reads the ssh config; a missing file is empty.
func readConfig(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, hint.Wrap(err, "check the file's permissions, or pick another file with --ssh-config")
	}
	return data, nil
}

// chalkPath is the absolute, symlink-free path of the running binary.
func chalkPath() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", hint.Wrap(fmt.Errorf("find the chalk binary: %w", err), "run chalk by its full path")
	}
	return exe, nil
}
