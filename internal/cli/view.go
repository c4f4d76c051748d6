package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/view"
)

func (a *app) viewCommand() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "view [RUNS_DIR]",
		Short: "Read runs and their transcripts in a web browser",
		Long: `Serve a web page that lists the runs in RUNS_DIR (default: $CHALK_RUNS_DIR,
else ./runs), newest first, and shows each run's transcript: the student's
commands and output, model calls, limits hit, the grader's result and the
reward, in order. A run that is still going is followed as it goes. The
files the run left in out/ can be downloaded.

chalk view prints the page's address on stdout and serves until Ctrl-C.
By default it listens on 127.0.0.1 on a free port; --listen picks another
address. Anyone who can reach the address can read the runs.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := envOr("CHALK_RUNS_DIR", "runs")
			if len(args) == 1 {
				dir = args[0]
			}
			if err := checkRunsDir(dir); err != nil {
				return err
			}
			addr, host, err := listenAddress(listen)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return hint.Wrap(fmt.Errorf("listen on %s: %w", addr, err),
					"pick another address with --listen, e.g. --listen 127.0.0.1:0 for a free port")
			}
			s, err := view.New(dir, view.Options{Host: host, Log: a.log, OwnerGone: run.OwnerGone})
			if err != nil {
				ln.Close()
				return err
			}
			defer s.Close()
			return a.serveView(cmd.Context(), ln, s, dir)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0",
		"address to serve on: HOST:PORT, or PORT alone for 127.0.0.1:PORT; port 0 picks a free one")
	return cmd
}

func (a *app) serveView(ctx context.Context, ln net.Listener, s *view.Server, dir string) error {
	tcp := ln.Addr().(*net.TCPAddr)
	shown := tcp.String()
	if tcp.IP.IsUnspecified() {
		shown = net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	if !tcp.IP.IsLoopback() {
		fmt.Fprintf(a.stderr, "chalk view: listening on %s: anyone who can reach it can read these runs\n", tcp)
	}
	abs, _ := filepath.Abs(dir)
	fmt.Fprintf(a.stdout, "http://%s/\n", shown)
	fmt.Fprintf(a.stderr, "chalk view: serving the runs in %s; press Ctrl-C to stop\n", abs)

	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	if err := serveUntil(ctx, srv, ln); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// serveUntil serves srv on ln until ctx ends, then gives the requests
// in flight 5 s to finish. It returns Serve's error when serving stops
// first.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}

// checkRunsDir refuses a runs directory that is missing or not one.
func checkRunsDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return hint.Newf("run an environment first (chalk run writes its runs there), or name the directory that holds the runs: chalk view path/to/runs",
			"runs directory %s does not exist", dir)
	case err != nil:
		return hint.Wrap(fmt.Errorf("runs directory: %w", err), "check that "+dir+" is readable")
	case !st.IsDir():
		return hint.Newf("name the directory that holds the runs, e.g. chalk view runs",
			"%s is not a directory", dir)
	}
	return nil
}

// listenAddress reads --listen: HOST:PORT, :PORT or PORT. It returns the
// address to listen on and the host name the page answers to.
func listenAddress(s string) (addr, host string, err error) {
	bad := func(why string) error {
		return &usageError{err: fmt.Errorf("--listen %q: %s", s, why),
			help: "write HOST:PORT (127.0.0.1:8080, [::1]:8080, localhost:0) or a port alone (8080)"}
	}
	if s == "" {
		return "", "", bad("is empty")
	}
	if !strings.Contains(s, ":") {
		s = "127.0.0.1:" + s
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", "", bad(strings.TrimPrefix(err.Error(), "address "+s+": "))
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", "", bad(fmt.Sprintf("port %q is not a number from 0 to 65535", p))
	}
	return net.JoinHostPort(h, p), h, nil
}
