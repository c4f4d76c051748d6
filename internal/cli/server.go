package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/api"
	"github.com/chalk-rl/chalk/internal/client"
	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/store"
)

func (a *app) serverCommand() *cobra.Command {
	var (
		listen, dataDir    string
		certFile, keyFile  string
		tlsHosts           []string
		network            string
		maxLife, defLife   time.Duration
		keepalive, timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the Chalk API server: containers on this host, reached by sessions",
		Long: `Run the Chalk API over HTTPS. It runs containers on this machine's docker
(the host compute class), each on an internal network with no route out of
the host and no inbound port: people reach them through sessions ('chalk
session exec', 'chalk session proxy'). Every container stops when its
lifetime ends, also when that happens while the server is down.

State (tokens, containers, volumes, images) is kept in an SQLite database in
--data, and survives restarts. Create tokens with 'chalk token create'.

Without --tls-cert/--tls-key the server makes a self-signed certificate in
--data, keeps it, and prints its fingerprint: 'chalk login' shows the same
fingerprint when it pins it. Logs are JSON lines on stderr.`,
		Args: maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := hostclass.Supported(); err != nil {
				return hint.Wrap(fmt.Errorf("chalk server runs only on Linux: %w", err),
					"run chalk server on a Linux machine with docker, and reach it from this one with 'chalk login'")
			}
			ctx := cmd.Context()
			dir, err := serverDataDir(dataDir)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: a.logLevel()}))
			cert, err := api.LoadCertificate(certFile, keyFile, dir, tlsHosts)
			if err != nil {
				return hint.Wrap(err, "pass --tls-cert and --tls-key a PEM certificate and key, or neither for a self-signed one")
			}
			st, err := store.Open(ctx, filepath.Join(dir, "chalk.db"))
			if err != nil {
				return hint.Wrap(err, "check that --data "+dir+" is writable")
			}
			defer st.Close()
			host, err := hostclass.New(network, os.Getenv("DOCKER_HOST"))
			if err != nil {
				return hint.Wrap(err, "unset DOCKER_HOST, or point it at the local daemon's socket")
			}
			host.SocketRoot = filepath.Join(dir, "sessions")
			if !host.SocketsUsable() {
				log.Warn("session sockets are off: the data directory's path is too long for a unix socket's, or holds a comma or a double quote; sessions go through docker exec's stdio, which is slower. Pick a shorter, plainer --data to turn them on",
					"dir", host.SocketRoot)
			}
			srv := &api.Server{Store: st, Host: host, Log: log, MaxLifetime: maxLife, DefaultLifetime: defLife}
			srv.Keepalive.Interval, srv.Keepalive.Timeout = keepalive, timeout
			if err := srv.Prepare(ctx); err != nil {
				return hint.Wrap(err, "check that docker runs on this machine: 'chalk doctor'")
			}
			ln, err := api.Listen(listen)
			if err != nil {
				return hint.Wrap(fmt.Errorf("listen on %s: %w", listen, err), "pick another address with --listen HOST:PORT")
			}
			hs := srv.HTTPServer(cert, slog.NewLogLogger(log.Handler(), slog.LevelWarn))
			go srv.Run(ctx)
			log.Info("serving", "url", "https://"+ln.Addr().String(), "fingerprint", client.Fingerprint(cert.Certificate[0]), "data", dir)
			errc := make(chan error, 1)
			go func() { errc <- hs.ServeTLS(ln, "", "") }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
			srv.EndSessions(sctx)
			if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			log.Info("stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8443", "address to serve HTTPS on")
	f.StringVar(&dataDir, "data", "", "directory for the database and the self-signed certificate (env CHALK_SERVER_DATA; default $XDG_STATE_HOME/chalk/server)")
	f.StringVar(&certFile, "tls-cert", "", "PEM certificate to serve (default: a self-signed one kept in --data)")
	f.StringVar(&keyFile, "tls-key", "", "PEM private key of --tls-cert")
	f.StringArrayVar(&tlsHosts, "tls-host", nil, "extra host name or IP for the self-signed certificate (repeatable)")
	f.StringVar(&network, "network", hostclass.DefaultNetwork, "internal docker network containers join")
	f.DurationVar(&defLife, "default-lifetime", api.DefaultDefaultLifetime, "lifetime of a container run without --lifetime")
	f.DurationVar(&maxLife, "max-lifetime", api.DefaultMaxLifetime, "longest --lifetime a container may ask for")
	f.DurationVar(&keepalive, "keepalive", 15*time.Second, "how often sessions ping the client")
	f.DurationVar(&timeout, "keepalive-timeout", 15*time.Second, "how long a ping may go unanswered before the session is ended")
	return cmd
}

func (a *app) logLevel() slog.Level {
	if a.verbose {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// serverDataDir is --data, $CHALK_SERVER_DATA, or the XDG state directory.
func serverDataDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv("CHALK_SERVER_DATA")
	}
	if dir == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", hint.Wrap(err, "pass --data DIR")
			}
			base = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(base, "chalk", "server")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", hint.Wrap(err, "pass --data a directory you can write")
	}
	return abs, nil
}
