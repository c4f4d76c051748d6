package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/client"
	"github.com/chalk-rl/chalk/internal/config"
	"github.com/chalk-rl/chalk/internal/hint"
)

// apiClient is the client for the settings of the project in dir.
func (a *app) apiClient(dir string) (*client.Client, error) {
	s, err := config.Load(dir)
	if err != nil {
		return nil, err
	}
	return client.New(s)
}

// eachArg does op on the API for each argument in turn, printing each
// one done, and stops at the first that fails.
func (a *app) eachArg(ctx context.Context, dir string, args []string, op func(*client.Client, context.Context, string) error) error {
	c, err := a.apiClient(dir)
	if err != nil {
		return err
	}
	for _, arg := range args {
		if err := op(c, ctx, arg); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, arg)
	}
	return nil
}

func (a *app) loginCommand() *cobra.Command {
	var (
		token, fingerprint, dir string
		project                 bool
	)
	cmd := &cobra.Command{
		Use:   "login URL",
		Short: "Save the Chalk API's address and your token, pinning a self-signed certificate",
		Long: `Check that the Chalk API server at URL accepts the token, and save both in
your config file ($XDG_CONFIG_HOME/chalk/config.toml, else
~/.config/chalk/config.toml; mode 0600), or, with --project, in the
project's: the nearest .chalk/config.toml at or above --dir, else a new
one in --dir.

When the server's certificate is not signed by an authority this machine
trusts (the server's own self-signed one), login pins its fingerprint:
from then on chalk talks to that server only while it presents that very
certificate. Compare the fingerprint login prints with the one 'chalk
server' logged, or pass it with --fingerprint to have login check it.

The token comes from --token, or from stdin with --token -, or from
CHALK_API_TOKEN.`,
		Args: nArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			u, err := url.Parse(args[0])
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return &usageError{err: fmt.Errorf("%q is not an https:// URL", args[0]), help: "chalk login https://HOST:PORT --token TOKEN"}
			}
			if token == "-" {
				line, err := bufio.NewReader(a.stdin).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				token = strings.TrimSpace(line)
			}
			if token == "" {
				s, _ := config.Load(dir)
				token = s.Token
			}
			if token == "" {
				return &usageError{err: errors.New("no token given"), help: "pass --token TOKEN (or --token - to read it from stdin); the server's administrator makes one with 'chalk token create'"}
			}
			pin, trusted, err := serverFingerprint(ctx, u.Host)
			if err != nil {
				return err
			}
			settings := config.Settings{API: config.API{URL: u.String(), Token: token}}
			if !trusted {
				if fingerprint != "" && !strings.EqualFold(fingerprint, pin) {
					return hint.Newf("do not log in: check the server's log for its fingerprint, and that the URL is right",
						"the server's certificate is %s, not the %s you expected", pin, fingerprint)
				}
				settings.Fingerprint = pin
			}
			c, err := client.New(settings)
			if err != nil {
				return err
			}
			who, err := c.Whoami(ctx)
			if err != nil {
				return err
			}
			path, err := config.UserFile()
			if project {
				path, err = config.ProjectFileToWrite(dir)
			}
			if err != nil {
				return err
			}
			if err := config.WriteAPI(path, settings.API); err != nil {
				return hint.Wrap(fmt.Errorf("save the settings: %w", err), "check that you can write "+path)
			}
			if !trusted {
				fmt.Fprintf(a.stderr, "pinned the server's self-signed certificate %s\n", pin)
			}
			fmt.Fprintf(a.stderr, "logged in to %s as %s; saved in %s\n", u.String(), who.Owner, path)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&token, "token", "", "the API token ('-' reads it from stdin)")
	f.StringVar(&fingerprint, "fingerprint", "", "the certificate fingerprint the server printed (sha256:...), checked before pinning")
	f.BoolVar(&project, "project", false, "save in the project's .chalk/config.toml instead of your user config")
	f.StringVar(&dir, "dir", "", "the project directory (default: the current directory); its config is the nearest .chalk/config.toml at or above it")
	return cmd
}

// serverFingerprint connects to host and returns its certificate's
// fingerprint, and whether the system's roots already trust it.
func serverFingerprint(ctx context.Context, host string) (string, bool, error) {
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "443")
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 15 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return "", false, hint.Wrap(fmt.Errorf("connect to %s: %w", host, err), "check the URL, and that 'chalk server' runs there")
	}
	defer conn.Close()
	state := conn.(*tls.Conn).ConnectionState()
	if len(state.PeerCertificates) == 0 {
		return "", false, fmt.Errorf("%s presented no certificate", host)
	}
	leaf := state.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range state.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	name, _, _ := net.SplitHostPort(host)
	_, verr := leaf.Verify(x509.VerifyOptions{DNSName: name, Intermediates: inter})
	return client.Fingerprint(leaf.Raw), verr == nil, nil
}
