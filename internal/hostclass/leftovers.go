package hostclass

import (
	"cmp"
	"context"
	"net/url"
)

// SessionEnv is set, to the Host's Mark, in the environment of every
// process the server starts in a container, so that one left by a server
// that was killed can be told from a process someone else started with
// docker exec.
const SessionEnv = "CHALK_SESSION"

// KillLeftovers kills the session processes, and everything they
// started, that are still running in container engineID although no
// server attends them: those carrying this Host's Mark. Call it at start,
// before serving. It returns how many it killed, and the first error.
func (h *Host) KillLeftovers(ctx context.Context, engineID string) (int, error) {
	if h.Mark == "" {
		return 0, nil
	}
	var c struct {
		ExecIDs []string
		State   struct{ Running bool }
	}
	if err := h.apiCall(ctx, "GET", "/containers/"+url.PathEscape(engineID)+"/json", nil, &c); err != nil {
		return 0, err
	}
	killed := 0
	var first error
	for _, id := range c.ExecIDs {
		var st ExecState
		if err := h.apiCall(ctx, "GET", "/exec/"+url.PathEscape(id)+"/json", nil, &st); err != nil || !st.Running || st.Pid <= 0 {
			continue
		}
		if !hasEnv(st.Pid, SessionEnv+"="+h.Mark) {
			continue
		}
		if err := killTree(st.Pid); err != nil {
			first = cmp.Or(first, err)
			continue
		}
		killed++
	}
	return killed, first
}
