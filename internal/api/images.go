package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/hostclass"
	"github.com/chalk-rl/chalk/internal/store"
)

// MaxBuildContext bounds an image build's uploaded context.
const MaxBuildContext = 2 << 30

// buildImage builds the tar build context in the body as the owner's
// image ?name=, with ?dockerfile= (default Dockerfile) inside it. The
// answer streams the build log and ends with a BuildResult line.
func (s *Server) buildImage(w http.ResponseWriter, r *http.Request, who store.Token) {
	q := r.URL.Query()
	name := q.Get("name")
	if err := checkImageName(name); err != nil {
		writeError(w, err)
		return
	}
	dockerfile := q.Get("dockerfile")
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if path.IsAbs(dockerfile) || strings.HasPrefix(path.Clean(dockerfile), "..") {
		writeError(w, badRequest("give the Dockerfile's path inside the build directory", fmt.Sprintf("dockerfile %q is outside the build context", dockerfile)))
		return
	}
	ref := imagePrefix + who.Owner + "/" + strings.ToLower(name) + ":" + time.Now().UTC().Format("20060102150405")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fw := &flushWriter{w: w}
	body := http.MaxBytesReader(w, r.Body, MaxBuildContext)
	err := s.Host.BuildImage(r.Context(), ref, dockerfile, map[string]string{hostclass.LabelManaged: "1", hostclass.LabelOwner: who.Owner}, body, fw)
	res := wire.BuildResult{Image: name}
	if err == nil {
		err = s.Store.PutImage(r.Context(), store.Image{Owner: who.Owner, Name: name, EngineRef: ref, CreatedAt: time.Now().UTC()})
	}
	if err != nil {
		res = wire.BuildResult{Error: err.Error()}
		s.Log.Warn("image build failed", "owner", who.Owner, "name", name, "err", err)
	} else {
		s.Log.Info("image built", "owner", who.Owner, "name", name, "ref", ref)
	}
	line, _ := json.Marshal(res)
	fmt.Fprintf(fw, "\n%s%s\n", wire.BuildResultPrefix, line)
}

func checkImageName(name string) error {
	base, tag, _ := strings.Cut(name, ":")
	ok := base != "" && len(name) <= 128
	for _, part := range strings.Split(base, "/") {
		if !namePattern.MatchString(part) {
			ok = false
		}
	}
	if tag != "" && !namePattern.MatchString(tag) {
		ok = false
	}
	if !ok || strings.HasPrefix(name, imagePrefix) {
		return badRequest("use letters, digits, '.', '_', '-' and '/', with an optional :TAG, e.g. dev-box:latest",
			fmt.Sprintf("image name %q is not valid", name))
	}
	return nil
}

func (s *Server) listImages(w http.ResponseWriter, r *http.Request, who store.Token) {
	ims, err := s.Store.Images(r.Context(), who.Owner)
	if err != nil {
		writeError(w, err)
		return
	}
	out := []wire.Image{}
	for _, im := range ims {
		out = append(out, wire.Image{Name: im.Name, CreatedAt: im.CreatedAt})
	}
	writeJSON(w, http.StatusOK, out)
}
