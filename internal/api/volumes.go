package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/api/wire"
	"github.com/chalk-rl/chalk/internal/store"
)

func (s *Server) createVolume(w http.ResponseWriter, r *http.Request, who store.Token) {
	var req wire.VolumeRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkName("volume", req.Name); err != nil {
		writeError(w, err)
		return
	}
	v := store.Volume{Owner: who.Owner, Name: req.Name, EngineName: "chalk-api-" + store.NewID(), CreatedAt: time.Now().UTC()}
	if err := s.Store.InsertVolume(r.Context(), v); err != nil {
		if errors.Is(err, store.ErrExists) {
			err = &apiError{Status: http.StatusConflict, Code: wire.CodeExists, Msg: fmt.Sprintf("you already have a volume named %q", req.Name),
				Hint: "use it, or pick another name"}
		}
		writeError(w, err)
		return
	}
	if err := s.Host.CreateVolume(r.Context(), v.EngineName, who.Owner); err != nil {
		_ = s.Store.DeleteVolume(r.Context(), who.Owner, v.Name)
		writeError(w, err)
		return
	}
	s.Log.Info("volume created", "owner", who.Owner, "name", v.Name)
	writeJSON(w, http.StatusCreated, wire.Volume{Name: v.Name, CreatedAt: v.CreatedAt})
}

func (s *Server) listVolumes(w http.ResponseWriter, r *http.Request, who store.Token) {
	vs, err := s.Store.Volumes(r.Context(), who.Owner)
	if err != nil {
		writeError(w, err)
		return
	}
	out := []wire.Volume{}
	for _, v := range vs {
		out = append(out, wire.Volume{Name: v.Name, CreatedAt: v.CreatedAt})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) removeVolume(w http.ResponseWriter, r *http.Request, who store.Token) {
	name := r.PathValue("name")
	v, err := s.Store.FindVolume(r.Context(), who.Owner, name)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, &apiError{Status: http.StatusNotFound, Code: wire.CodeNotFound, Msg: fmt.Sprintf("no volume %q", name),
			Hint: "list yours with 'chalk volume ls'"})
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	cs, err := s.Store.Containers(r.Context(), who.Owner)
	if err != nil {
		writeError(w, err)
		return
	}
	for _, c := range cs {
		for _, m := range c.Spec.Volumes {
			if m.Volume == name {
				writeError(w, &apiError{Status: http.StatusConflict, Code: wire.CodeExists,
					Msg:  fmt.Sprintf("volume %q is mounted by container %s", name, c.Name),
					Hint: "remove the container first: chalk container rm " + c.Name})
				return
			}
		}
	}
	if err := s.Host.RemoveVolume(r.Context(), v.EngineName); err != nil {
		if strings.Contains(err.Error(), "in use") {
			err = &apiError{Status: http.StatusConflict, Code: wire.CodeExists, Msg: fmt.Sprintf("volume %q is still in use", name)}
		}
		writeError(w, err)
		return
	}
	if err := s.Store.DeleteVolume(r.Context(), who.Owner, name); err != nil {
		writeError(w, err)
		return
	}
	s.Log.Info("volume removed", "owner", who.Owner, "name", name)
	w.WriteHeader(http.StatusNoContent)
}
