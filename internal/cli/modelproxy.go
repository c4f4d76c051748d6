package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/modelproxy"
)

func (a *app) modelProxyCommand() *cobra.Command {
	var script, listen string
	var check bool
	cmd := &cobra.Command{
		Use:   "model-proxy --script FILE [--listen ADDR]",
		Short: "Serve a scripted OpenAI-compatible model, for offline runs and tests",
		Long: `Serve a scripted model that speaks OpenAI's chat completions API
(POST /v1/chat/completions, streamed or not, with tool calls; GET /v1/models;
GET /healthz) and answers from a script of turns: a request that already
holds N assistant messages gets turn N+1. Any number of conversations can
share one server.

The base URL (http://ADDR/v1) is printed on stdout once the server listens;
logs go to stderr. Ctrl-C stops it. When CHALK_MODEL_PROXY_API_KEY is set,
requests must carry "Authorization: Bearer $CHALK_MODEL_PROXY_API_KEY".

--check only reads the script and prints its turns. The script format is in
docs/model-proxy.md.`,
		Args: maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if script == "" {
				return &usageError{err: errors.New("--script is required"),
					help: "pass the script of turns to answer from: chalk model-proxy --script model.toml (the format is in docs/model-proxy.md)"}
			}
			s, err := modelproxy.LoadScript(script)
			if err != nil {
				return err
			}
			if check {
				fmt.Fprintf(a.stdout, "%s: model %s, %d turns\n", script, s.Model, len(s.Turns))
				for i, t := range s.Turns {
					fmt.Fprintf(a.stdout, "  turn %d (line %d): %d tool calls, %d bytes of content\n", i+1, t.Line, len(t.ToolCalls), len(t.Content))
				}
				return nil
			}
			return a.serveModel(cmd.Context(), s, listen)
		},
	}
	f := cmd.Flags()
	f.StringVar(&script, "script", "", "the script of turns to answer from (TOML; see docs/model-proxy.md)")
	f.StringVar(&listen, "listen", "127.0.0.1:8787", "address to listen on; port 0 picks a free one")
	f.BoolVar(&check, "check", false, "check the script and print its turns, then exit")
	return cmd
}

func (a *app) serveModel(ctx context.Context, s *modelproxy.Script, listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return hint.Wrap(fmt.Errorf("model proxy: listen on %s: %w", listen, err),
			"pass a free address with --listen, e.g. --listen 127.0.0.1:0 for any free port")
	}
	token := os.Getenv(modelproxy.APIKeyEnv)
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() && token == "" {
		a.log.Warn("the scripted model listens beyond loopback without a token: anyone who reaches it can use it; set " + modelproxy.APIKeyEnv)
	}
	srv := &http.Server{
		Handler:           modelproxy.NewServer(s, token, a.log),
		ReadHeaderTimeout: 10 * time.Second,
	}
	a.log.Info("serving a scripted model", "script", s.Path, "turns", len(s.Turns), "model", s.Model, "token", token != "")
	fmt.Fprintf(a.stdout, "http://%s/v1\n", ln.Addr())
	if err := serveUntil(ctx, srv, ln); err != nil {
		return fmt.Errorf("model proxy: %w", err)
	}
	a.log.Info("stopped")
	return nil
}
