package cli

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/session"
)

func (a *app) sessionCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Reach into a container: run a command, or tunnel a TCP port",
		Long: `A session is one authenticated stream from this machine to the Chalk API,
an ordinary outbound HTTPS connection; the API joins it to a process inside
the container. The container opens nothing. Sessions need a host-backed
container ('--compute-class host').`,
		Args: groupArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "project directory whose .chalk/config.toml to use (default: search up from the current directory)")
	cmd.AddCommand(a.sessionProxyCommand(&dir), a.sessionExecCommand(&dir))
	return cmd
}

func (a *app) sessionProxyCommand(dir *string) *cobra.Command {
	var port int
	cmd := &cobra.Command{
		Use:   "proxy NAME|ID [--port N]",
		Short: "Join a TCP port inside a container to stdin and stdout (ssh's ProxyCommand)",
		Long: `Connect 127.0.0.1:PORT inside the container (22 by default) to this command's
standard input and output. Only the tunnel's bytes are written to stdout;
messages go to stderr. Inside the container the API runs one connector,
socat, else nc, else bash, and kills it when this command ends.

  ssh -o ProxyCommand='chalk session proxy %n' my-box
  socat TCP-LISTEN:15432,reuseaddr,fork EXEC:'chalk session proxy my-box --port 5432'`,
		Args: nArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := a.proxy(cmd, *dir, args[0], port)
			if err == nil {
				return nil
			}
			// Errors read as the seed's: 'chalk session proxy: ...'.
			msg := err.Error()
			if !strings.HasPrefix(msg, "chalk session proxy: ") {
				msg = "chalk session proxy: " + msg
			}
			fmt.Fprintln(a.stderr, msg)
			if h := hint.Of(err); h != "" {
				fmt.Fprintf(a.stderr, "hint: %s\n", h)
			}
			return &silentError{code: hint.ExitCode(err)}
		},
	}
	cmd.Flags().IntVar(&port, "port", 22, "TCP port inside the container")
	return cmd
}

func (a *app) proxy(cmd *cobra.Command, dir, ref string, port int) error {
	if port < 1 || port > 65535 {
		return hint.Newf("pass --port a number from 1 to 65535", "--port %d is not a TCP port", port)
	}
	c, err := a.apiClient(dir)
	if err != nil {
		return err
	}
	ws, err := c.Session(cmd.Context(), ref, "proxy", url.Values{"port": {strconv.Itoa(port)}})
	if err != nil {
		return err
	}
	// A tunnel's bulk moves in large pieces: ssh and scp hand it over
	// through pipes, which hold only 64 KiB unless asked for more.
	growPipes(a.stdin, a.stdout)
	err = session.Proxy(cmd.Context(), ws, session.DefaultKeepalive, a.stdin, a.stdout, a.stderr)
	return sessionError(err)
}

// sessionError attaches the server's hint to a session's failure.
func sessionError(err error) error {
	var ee *session.ExitError
	if errors.As(err, &ee) {
		return hint.Wrap(err, ee.Exit.Hint)
	}
	var lost *session.LostError
	if errors.As(err, &lost) {
		return hint.Wrap(err, "check the network and that the server still runs; the process in the container was ended with the session")
	}
	return err
}

func (a *app) sessionExecCommand(dir *string) *cobra.Command {
	var tty bool
	var env []string
	cmd := &cobra.Command{
		Use:   "exec NAME|ID [-t] CMD [-- ARG...]",
		Short: "Run a command in a container, with stdin, stdout, stderr and its exit code",
		Long: `Run CMD with ARGs inside the container. Your stdin goes to it, its stdout
and stderr come back to yours, and chalk exits with its exit code. Put
'--' before arguments that start with '-':

  chalk session exec my-box sh -- -c 'ss -ltn || netstat -ltn'

-t gives it a terminal (for shells and editors), sized like yours and
resized with it.`,
		Args: atLeastArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(*dir)
			if err != nil {
				return err
			}
			start := session.Start{Cmd: args[1:], TTY: tty, Env: env}
			stdinFile, _ := a.stdin.(*os.File)
			var resize chan session.Resize
			if tty && stdinFile != nil && term.IsTerminal(int(stdinFile.Fd())) {
				fd := int(stdinFile.Fd())
				if w, h, err := term.GetSize(fd); err == nil {
					start.Cols, start.Rows = w, h
				}
				old, err := term.MakeRaw(fd)
				if err != nil {
					return fmt.Errorf("put the terminal in raw mode: %w", err)
				}
				defer term.Restore(fd, old)
				resize = make(chan session.Resize, 1)
				winch := make(chan os.Signal, 1)
				signal.Notify(winch, syscall.SIGWINCH)
				defer signal.Stop(winch)
				go func() {
					for range winch {
						if w, h, err := term.GetSize(fd); err == nil {
							select {
							case resize <- session.Resize{Cols: w, Rows: h}:
							default:
							}
						}
					}
				}()
			}
			ws, err := c.Session(cmd.Context(), args[0], "exec", nil)
			if err != nil {
				return err
			}
			code, err := session.Exec(cmd.Context(), ws, session.DefaultKeepalive, start, a.stdin, a.stdout, a.stderr, resize)
			if err != nil {
				err = sessionError(err)
				if code > 0 {
					return hint.WithCode(err, code)
				}
				return err
			}
			if code != 0 {
				return &silentError{code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&tty, "tty", "t", false, "give the command a terminal")
	f.StringArrayVarP(&env, "env", "e", nil, "environment variable KEY=value for the command (repeatable)")
	return cmd
}
