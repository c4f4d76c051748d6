package api

import (
	"context"
	"time"
)

// reap stops every container whose lifetime has ended. The deadline is in
// the database, so a lifetime that ends while the server is down is
// enforced as soon as it is back.
func (s *Server) reap(ctx context.Context) {
	cs, err := s.Store.Expired(ctx, time.Now())
	if err != nil {
		s.Log.Error("lifetimes: list containers", "err", err)
		return
	}
	for _, c := range cs {
		if err := s.stop(ctx, c, "its lifetime ended at "+c.ExpiresAt.Format(time.RFC3339)); err != nil {
			s.Log.Error("lifetimes: stop container", "id", c.ID, "err", err)
		}
	}
}
