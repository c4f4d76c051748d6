package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/chalk-rl/chalk/internal/runtime"
)

// inspect reads the facts List reports for each of ids. Sandboxes that
// vanish between ps and inspect are left out.
func (e *Engine) inspect(ctx context.Context, ids []string) ([]runtime.SandboxInfo, error) {
	const format = "{{.Id}}\t{{.Name}}\t{{.Config.Image}}\t{{.State.Running}}\t{{json .Config.Labels}}"
	var infos []runtime.SandboxInfo
	for _, id := range ids {
		out, err := e.command(ctx, nil, "inspect", "--type", "container", "--format", format, id)
		if err != nil {
			if isAbsent(err) {
				continue
			}
			return nil, err
		}
		f := strings.SplitN(strings.TrimSpace(string(out)), "\t", 5)
		if len(f) != 5 {
			continue
		}
		info := runtime.SandboxInfo{
			ID:      f[0],
			Name:    strings.TrimPrefix(f[1], "/"),
			Image:   f[2],
			Running: f[3] == "true",
		}
		_ = json.Unmarshal([]byte(f[4]), &info.Labels)
		infos = append(infos, info)
	}
	return infos, nil
}

// tailBuffer keeps the last 8 KiB written to it: enough of a client's
// output to explain a failure.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const tailMax = 8 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - tailMax; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
