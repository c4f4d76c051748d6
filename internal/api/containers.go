package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/store"
)

// Compute classes.
const (
	ClassHost       = "host"
	ClassKubernetes = "kubernetes"
)

// namePattern is what container and volume names may look like: they
// end up in host names, docker names and ssh host patterns.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func checkName(kind, name string) error {
	if !namePattern.MatchString(name) {
		return badRequest("use letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 characters",
			fmt.Sprintf("%s name %q is not valid", kind, name))
	}
	if uuidPattern.MatchString(strings.ToLower(name)) {
		return badRequest("pick a name that does not look like an ID", fmt.Sprintf("%s name %q looks like an ID, which would make it ambiguous", kind, name))
	}
	return nil
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("check that chalk and the server are the same version", "bad request body: "+err.Error())
	}
	return nil
}

func (s *Server) runContainer(w http.ResponseWriter, r *http.Request, who store.Token) {
	var req wire.RunRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	c, err := s.run(r.Context(), who.Owner, req)
	if err != nil {
		writeError(w, err)
		return
	}
	s.Log.Info("container started", "owner", who.Owner, "id", c.ID, "name", c.Name, "image", c.Image, "expires_at", c.ExpiresAt)
	writeJSON(w, http.StatusCreated, s.describe(r.Context(), c))
}

func (s *Server) run(ctx context.Context, owner string, req wire.RunRequest) (store.Container, error) {
	id := store.NewID()
	if req.Name == "" {
		req.Name = "box-" + id[:8]
	}
	if err := checkName("container", req.Name); err != nil {
		return store.Container{}, err
	}
	switch req.ComputeClass {
	case "", ClassHost:
		req.ComputeClass = ClassHost
	case ClassKubernetes:
		return store.Container{}, &apiError{Status: http.StatusNotImplemented, Code: wire.CodeUnsupported,
			Msg:  "the kubernetes compute class is not configured on this server: it runs containers on its own host only",
			Hint: "use --compute-class host"}
	default:
		return store.Container{}, badRequest("use --compute-class host (or kubernetes, where the server has it)",
			fmt.Sprintf("unknown compute class %q", req.ComputeClass))
	}
	if req.Image == "" {
		return store.Container{}, badRequest("pass --image IMAGE", "no image given")
	}
	lifetime := s.DefaultLifetime
	if req.Lifetime != "" {
		d, err := time.ParseDuration(req.Lifetime)
		if err != nil || d <= 0 {
			return store.Container{}, badRequest("give a positive duration such as 30m, 8h or 72h", fmt.Sprintf("lifetime %q is not a duration", req.Lifetime))
		}
		lifetime = d
	}
	if lifetime > s.MaxLifetime {
		return store.Container{}, badRequest(fmt.Sprintf("ask for at most %s", s.MaxLifetime),
			fmt.Sprintf("lifetime %s is longer than this server allows", req.Lifetime))
	}
	if len(req.Command) > 0 && len(req.Entrypoint) == 0 {
		return store.Container{}, badRequest("pass --entrypoint with the program that takes these arguments", "a command needs an entrypoint")
	}
	for _, kv := range req.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return store.Container{}, badRequest("write it as KEY=value", fmt.Sprintf("--env %q is not KEY=value", kv))
		}
	}
	image, err := s.resolveImage(ctx, owner, req.Image)
	if err != nil {
		return store.Container{}, err
	}
	spec := store.Spec{Entrypoint: req.Entrypoint, Command: req.Command, Env: req.Env, CPUs: req.CPUs, MemoryBytes: req.MemoryBytes}
	var mounts [][2]string
	for _, v := range req.Volumes {
		name, p, ok := strings.Cut(v, ":")
		if !ok || name == "" || !path.IsAbs(p) {
			return store.Container{}, badRequest("write it as NAME:/absolute/path", fmt.Sprintf("--volume %q is not NAME:/path", v))
		}
		vol, err := s.Store.FindVolume(ctx, owner, name)
		if errors.Is(err, store.ErrNotFound) {
			return store.Container{}, &apiError{Status: http.StatusNotFound, Code: wire.CodeNotFound,
				Msg: fmt.Sprintf("no volume %q", name), Hint: "create it first: chalk volume create " + name}
		}
		if err != nil {
			return store.Container{}, err
		}
		spec.Volumes = append(spec.Volumes, store.Mount{Volume: name, Path: path.Clean(p)})
		mounts = append(mounts, [2]string{vol.EngineName, path.Clean(p)})
	}
	now := time.Now().UTC()
	c := store.Container{ID: id, Owner: owner, Name: req.Name, Image: req.Image, ComputeClass: req.ComputeClass,
		Spec: spec, CreatedAt: now, ExpiresAt: now.Add(lifetime), State: store.StateCreating}
	if err := s.Store.InsertContainer(ctx, c); err != nil {
		if errors.Is(err, store.ErrExists) {
			return store.Container{}, &apiError{Status: http.StatusConflict, Code: wire.CodeExists,
				Msg:  fmt.Sprintf("you already have a container named %q", req.Name),
				Hint: fmt.Sprintf("pick another --name, or remove it first: chalk container rm %s", req.Name)}
		}
		return store.Container{}, err
	}
	engineID, err := s.Host.Run(ctx, hostclass.RunSpec{ID: id, Owner: owner, Name: req.Name, Image: image,
		Entrypoint: req.Entrypoint, Command: req.Command, Env: req.Env, CPUs: req.CPUs, MemoryBytes: req.MemoryBytes, Volumes: mounts})
	if err != nil {
		_ = s.Store.DeleteContainer(context.WithoutCancel(ctx), id)
		return store.Container{}, &apiError{Status: http.StatusBadGateway, Code: wire.CodeInternal,
			Msg: "start the container: " + err.Error(), Hint: "check the image and the flags; the server's log has the details"}
	}
	c.EngineID, c.State = engineID, store.StateRunning
	if err := s.Store.SetContainerState(context.WithoutCancel(ctx), id, engineID, store.StateRunning, ""); err != nil {
		return store.Container{}, err
	}
	return c, nil
}

// imagePrefix names images built through the API, per owner.
const imagePrefix = "chalk-api/"

// resolveImage turns what the person passed to --image into an engine
// reference: their own built image of that name first, else an image
// the server's engine has.
func (s *Server) resolveImage(ctx context.Context, owner, ref string) (string, error) {
	if im, err := s.Store.FindImage(ctx, owner, ref); err == nil {
		return im.EngineRef, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	if strings.HasPrefix(ref, imagePrefix) {
		// Another owner's build: never reachable by its engine name.
		return "", imageNotFound(ref)
	}
	ok, err := s.Host.ImageExists(ctx, ref)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", imageNotFound(ref)
	}
	return ref, nil
}

func imageNotFound(ref string) error {
	return &apiError{Status: http.StatusNotFound, Code: wire.CodeNotFound,
		Msg:  fmt.Sprintf("image %q is not on the server", ref),
		Hint: "build it through the server ('chalk image build --name NAME DIR'), or load it into the server's docker"}
}

// find resolves ref (an ID or a name) among owner's containers. Other
// owners' containers are indistinguishable from missing ones.
func (s *Server) find(ctx context.Context, owner, ref string) (store.Container, error) {
	c, err := s.Store.FindContainer(ctx, owner, ref)
	if errors.Is(err, store.ErrNotFound) {
		return c, &apiError{Status: http.StatusNotFound, Code: wire.CodeNotFound,
			Msg:  fmt.Sprintf("no container %q", ref),
			Hint: "list yours with 'chalk container ls'"}
	}
	return c, err
}

// describe reports c with the engine's view of whether it runs.
func (s *Server) describe(ctx context.Context, c store.Container) wire.Container {
	out := wire.Container{ID: c.ID, Name: c.Name, Image: c.Image, ComputeClass: c.ComputeClass, State: c.State,
		Reason: c.Reason, CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, Entrypoint: c.Spec.Entrypoint,
		Command: c.Spec.Command, Env: c.Spec.Env, CPUs: c.Spec.CPUs, MemoryBytes: c.Spec.MemoryBytes}
	for _, v := range c.Spec.Volumes {
		out.Volumes = append(out.Volumes, v.Volume+":"+v.Path)
	}
	if c.State == store.StateRunning && c.EngineID != "" {
		st, err := s.Host.Inspect(ctx, c.EngineID)
		switch {
		case err != nil:
			out.Reason = "could not ask the engine: " + err.Error()
		case !st.Exists:
			out.State, out.Reason = store.StateFailed, "the engine no longer has it"
		case !st.Running:
			code := st.ExitCode
			out.State, out.ExitCode = store.StateExited, &code
			out.Reason = fmt.Sprintf("its entrypoint exited with status %d", code)
		}
	}
	return out
}

func (s *Server) listContainers(w http.ResponseWriter, r *http.Request, who store.Token) {
	cs, err := s.Store.Containers(r.Context(), who.Owner)
	if err != nil {
		writeError(w, err)
		return
	}
	out := []wire.Container{}
	for _, c := range cs {
		out = append(out, s.describe(r.Context(), c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) inspectContainer(w http.ResponseWriter, r *http.Request, who store.Token) {
	c, err := s.find(r.Context(), who.Owner, r.PathValue("ref"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.describe(r.Context(), c))
}

func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request, who store.Token) {
	c, err := s.find(r.Context(), who.Owner, r.PathValue("ref"))
	if err != nil {
		writeError(w, err)
		return
	}
	if c.EngineID == "" {
		writeError(w, &apiError{Status: http.StatusConflict, Code: wire.CodeNotRunning, Msg: fmt.Sprintf("container %s never started", c.Name)})
		return
	}
	tail := r.URL.Query().Get("tail")
	if tail != "" && tail != "all" {
		var n int
		if _, err := fmt.Sscan(tail, &n); err != nil || n < 0 {
			writeError(w, badRequest("pass --tail a number of lines", fmt.Sprintf("tail %q is not a number", tail)))
			return
		}
	}
	follow := r.URL.Query().Get("follow") == "1"
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	fw := &flushWriter{w: w}
	if err := s.Host.Logs(r.Context(), c.EngineID, follow, tail, fw); err != nil {
		s.Log.Warn("logs", "id", c.ID, "err", err)
	}
}

type flushWriter struct{ w http.ResponseWriter }

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

func (s *Server) stopContainer(w http.ResponseWriter, r *http.Request, who store.Token) {
	c, err := s.find(r.Context(), who.Owner, r.PathValue("ref"))
	if err != nil {
		writeError(w, err)
		return
	}
	const reason = "stopped by its owner"
	if err := s.stop(r.Context(), c, reason); err != nil {
		writeError(w, err)
		return
	}
	c.State, c.Reason = store.StateStopped, reason // as stop recorded them
	writeJSON(w, http.StatusOK, s.describe(r.Context(), c))
}

func (s *Server) stop(ctx context.Context, c store.Container, reason string) error {
	if c.EngineID != "" {
		if err := s.Host.Stop(ctx, c.EngineID, s.StopGrace); err != nil {
			return err
		}
	}
	s.forgetContainer(c.ID)
	s.Log.Info("container stopped", "owner", c.Owner, "id", c.ID, "name", c.Name, "reason", reason)
	return s.Store.SetContainerState(context.WithoutCancel(ctx), c.ID, c.EngineID, store.StateStopped, reason)
}

func (s *Server) removeContainer(w http.ResponseWriter, r *http.Request, who store.Token) {
	c, err := s.find(r.Context(), who.Owner, r.PathValue("ref"))
	if err != nil {
		writeError(w, err)
		return
	}
	if c.EngineID != "" {
		if err := s.Host.Remove(r.Context(), c.EngineID); err != nil {
			writeError(w, err)
			return
		}
	}
	if err := s.Store.DeleteContainer(r.Context(), c.ID); err != nil {
		writeError(w, err)
		return
	}
	s.forgetContainer(c.ID)
	if err := s.Host.RemoveSockets(c.ID); err != nil {
		s.Log.Warn("remove the container's session sockets", "id", c.ID, "err", err)
	}
	s.Log.Info("container removed", "owner", who.Owner, "id", c.ID, "name", c.Name)
	w.WriteHeader(http.StatusNoContent)
}
