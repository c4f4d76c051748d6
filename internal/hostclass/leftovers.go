package hostclass

import (
	"context"
	"net/url"
)

// SessionMark is in the environment of every process the server starts
// in a container, so that one left by a server that was killed can be
// told from a process someone else started with docker exec.
const SessionMark = "CHALK_SESSION=1"

// KillLeftovers kills the session processes, and everything they
// started, that are still running in container engineID although no
// server attends them: call it at start, before serving. It returns how
// many it killed.
func (h *Host) KillLeftovers(ctx context.Context, engineID string) (int, error) {
	var c struct {
		ExecIDs []string
		State   struct{ Running bool }
	}
	if err := h.apiCall(ctx, "GET", "/containers/"+url.PathEscape(engineID)+"/json", nil, &c); err != nil {
		return 0, err
	}
	killed := 0
	for _, id := range c.ExecIDs {
		var st ExecState
		if err := h.apiCall(ctx, "GET", "/exec/"+url.PathEscape(id)+"/json", nil, &st); err != nil || !st.Running || st.Pid <= 0 {
			continue
		}
		if !hasEnv(st.Pid, SessionMark) {
			continue
		}
		if err := killTree(st.Pid); err != nil {
			return killed, err
		}
		killed++
	}
	return killed, nil
}
