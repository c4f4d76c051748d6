// Package view serves a local web page for reading runs: the list of runs
// in a runs directory, and each run's transcript (the student's commands
// and output, model calls, limits hit, the grader's result and reward) in
// order, following a run that is still going. Everything a run recorded is
// untrusted: it is escaped by html/template, the page's only script is
// its own, and the files in out/ are served as downloads or plain text.
package view

import (
	"bytes"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/transcript"
)

//go:embed assets
var assets embed.FS

// PollInterval is how often a page asks for the events of a run that is
// still going, and for the list of runs while one is.
const PollInterval = time.Second

// Server serves the runs in one directory.
type Server struct {
	dir   string
	root  *os.Root
	hosts map[string]bool
	log   *slog.Logger
	tmpl  *template.Template
	sums  summaries
	now   func() time.Time
}

// Options configure a Server.
type Options struct {
	// Host is the name the server is reached by, besides IP addresses and
	// localhost: other names in a request's Host are refused, so that a
	// web page cannot reach the server through a name it controls.
	Host string
	Log  *slog.Logger
	// OwnerGone, when set, says whether the chalk process that ran a run
	// (its run.started's owner) is gone: a run without run.finished whose
	// chalk is gone is shown abandoned, not running.
	OwnerGone func(owner string) (bool, string)
}

// New returns a server for the runs in dir, which must exist.
func New(dir string, o Options) (*Server, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		root.Close()
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{dir: dir, root: root, log: o.Log, tmpl: t, now: time.Now, hosts: map[string]bool{"localhost": true}}
	s.sums.ownerGone = o.OwnerGone
	if o.Host != "" {
		s.hosts[strings.ToLower(o.Host)] = true
	}
	return s, nil
}

// Close releases the runs directory.
func (s *Server) Close() error { return s.root.Close() }

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /rows", s.rows)
	mux.HandleFunc("GET /run/{name}", s.run)
	mux.HandleFunc("GET /run/{name}/events", s.events)
	mux.HandleFunc("GET /run/{name}/out/{file...}", s.outFile)
	mux.HandleFunc("GET /run/{name}/file/{file}", s.runFile)
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return s.guard(mux)
}

// guard refuses requests for other hosts and sets the headers every
// response carries.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			http.Error(w, "chalk view answers only to its own address", http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "+
			"img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		next.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if net.ParseIP(host) != nil {
		return true
	}
	return s.hosts[strings.ToLower(host)]
}

// runName checks a run name from a URL: one directory right below the
// runs directory, holding a transcript.
func (s *Server) runName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		http.NotFound(w, r)
		return "", false
	}
	st, err := s.root.Lstat(name)
	if err != nil || !st.IsDir() {
		http.NotFound(w, r)
		return "", false
	}
	if _, err := s.root.Stat(path.Join(name, TranscriptName)); err != nil {
		http.NotFound(w, r)
		return "", false
	}
	return name, true
}

type listPage struct {
	Dir     string
	Runs    []Summary
	Err     string
	Running bool
	Now     time.Time
}

func (s *Server) listData() listPage {
	p := listPage{Dir: s.dir, Now: s.now()}
	runs, err := s.sums.list(s.root)
	if err != nil {
		p.Err = err.Error()
	}
	p.Runs = runs
	for _, r := range runs {
		if r.Status == StatusRunning {
			p.Running = true
		}
	}
	return p
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.render(w, "list", s.listData())
}

func (s *Server) rows(w http.ResponseWriter, r *http.Request) {
	s.render(w, "rows", s.listData())
}

// runPage is what a run's page shows.
type runPage struct {
	Name     string
	Sum      Summary
	Items    []*item
	Cursor   string
	Files    filesView
	Log      bool // harness.log exists
	Now      time.Time
	Interval int64 // milliseconds between polls
}

type filesView struct {
	Name  string
	Files []outFile
	More  bool
	Err   string
	Done  bool
}

func (s *Server) files(name string, done bool) filesView {
	v := filesView{Name: name, Done: done}
	root, err := s.root.OpenRoot(path.Join(name, "out"))
	if errors.Is(err, fs.ErrNotExist) {
		return v
	}
	if err != nil {
		v.Err = err.Error()
		return v
	}
	defer root.Close()
	v.Files, v.More, err = listOut(root)
	if err != nil {
		v.Err = err.Error()
	}
	return v
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	name, ok := s.runName(w, r)
	if !ok {
		return
	}
	sum, entries, off, err := s.sums.read(s.root, name, 0)
	if err != nil {
		http.Error(w, "read transcript: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rd := &renderer{}
	for _, e := range entries {
		rd.add(e)
	}
	rd.state.Offset = off
	_, logErr := s.root.Stat(path.Join(name, "harness.log"))
	s.render(w, "run", runPage{
		Name: name, Sum: sum, Items: rd.items, Cursor: encodeCursor(rd.state),
		Files: s.files(name, rd.state.Done), Log: logErr == nil, Now: s.now(),
		Interval: PollInterval.Milliseconds(),
	})
}

// eventsReply carries what was added to a run since a page's cursor.
type eventsReply struct {
	HTML   string  `json:"html"`
	Header string  `json:"header"`
	Files  *string `json:"files,omitempty"` // when the run is done
	Cursor string  `json:"cursor"`
	Done   bool    `json:"done"`
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	name, ok := s.runName(w, r)
	if !ok {
		return
	}
	c, err := decodeCursor(r.URL.Query().Get("c"))
	if err != nil {
		http.Error(w, "bad cursor: "+err.Error(), http.StatusBadRequest)
		return
	}
	sum, entries, off, err := s.sums.read(s.root, name, c.Offset)
	if errors.Is(err, errReplaced) {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	if err != nil {
		http.Error(w, "read transcript: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rd := &renderer{state: c}
	for _, e := range entries {
		rd.add(e)
	}
	rd.state.Offset = off
	reply := eventsReply{Cursor: encodeCursor(rd.state), Done: rd.state.Done}
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, "items", rd.items); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	reply.HTML = b.String()
	b.Reset()
	if err := s.tmpl.ExecuteTemplate(&b, "header", runPage{Name: name, Sum: sum, Now: s.now()}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	reply.Header = b.String()
	if reply.Done {
		b.Reset()
		if err := s.tmpl.ExecuteTemplate(&b, "files", s.files(name, true)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		f := b.String()
		reply.Files = &f
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

func (s *Server) outFile(w http.ResponseWriter, r *http.Request) {
	name, ok := s.runName(w, r)
	if !ok {
		return
	}
	root, err := s.root.OpenRoot(path.Join(name, "out"))
	if err != nil {
		notFound(w, r, err)
		return
	}
	defer root.Close()
	serveFile(w, r, root, r.PathValue("file"), r.URL.Query().Has("view"))
}

// runFile serves the transcript and the harness's log.
func (s *Server) runFile(w http.ResponseWriter, r *http.Request) {
	name, ok := s.runName(w, r)
	if !ok {
		return
	}
	file := r.PathValue("file")
	if file != TranscriptName && file != "harness.log" {
		http.NotFound(w, r)
		return
	}
	root, err := s.root.OpenRoot(name)
	if err != nil {
		notFound(w, r, err)
		return
	}
	defer root.Close()
	serveFile(w, r, root, file, r.URL.Query().Has("view"))
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("render page", "template", name, "err", err)
		http.Error(w, "render page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	if c.Offset < 0 {
		return c, fmt.Errorf("negative offset")
	}
	return c, nil
}

var funcs = template.FuncMap{
	"dur":  transcript.FormatDuration,
	"size": fmtSize,
	"mem":  env.FormatSize, // a hardware size the way chalk.toml takes it
	"esc":  escapePath,
	"since": func(s Summary, now time.Time) string {
		return transcript.FormatDuration(s.Duration(now))
	},
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"reward": func(f *float64) string {
		if f == nil {
			return ""
		}
		return fmt.Sprintf("%g", *f)
	},
	"join": strings.Join,
	"deref": func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	},
	"kind": func(e transcript.Event) string { return e.Type },
}
