package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/chalk-rl/chalk/internal/runtime"
)

// inspectFormat is one line per container: the facts List reports.
const inspectFormat = "{{.Id}}\t{{.Name}}\t{{.Config.Image}}\t{{.State.Running}}\t{{json .Config.Labels}}"

// inspect reads the facts List reports for each of ids, in one call.
// Sandboxes that vanish between ps and inspect are left out: the client
// prints the others and fails saying only that those do not exist.
func (e *Engine) inspect(ctx context.Context, ids []string) ([]runtime.SandboxInfo, error) {
	args := append([]string{"inspect", "--type", "container", "--format", inspectFormat}, ids...)
	out, err := e.command(ctx, nil, args...)
	if err != nil && !isAbsent(err) {
		return nil, err
	}
	infos, perr := parseInspect(out)
	if perr != nil {
		return nil, fmt.Errorf("%s inspect: %w", e.Bin, perr)
	}
	return infos, nil
}

// parseInspect reads inspect's answer in inspectFormat. Blank lines,
// which docker prints for a container it did not find, are skipped.
func parseInspect(out []byte) ([]runtime.SandboxInfo, error) {
	var infos []runtime.SandboxInfo
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "\t", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("unexpected answer %q", line)
		}
		info := runtime.SandboxInfo{
			ID:      f[0],
			Name:    strings.TrimPrefix(f[1], "/"),
			Image:   f[2],
			Running: f[3] == "true",
		}
		if err := json.Unmarshal([]byte(f[4]), &info.Labels); err != nil {
			return nil, fmt.Errorf("labels of %s: %w", info.ID, err)
		}
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
