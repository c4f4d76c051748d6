package cli

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// progress prints a run's events as plain lines for a person.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	// partial holds output not yet ended by a newline, per process+stream.
	partial map[string][]byte
}

func (p *progress) event(e transcript.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Type {
	case transcript.RunStarted:
		fmt.Fprintf(p.w, "run %s: %s on %s, %g CPUs, %s memory\n", e.Run.ID, e.Run.Environment, e.Run.Runtime, e.Run.CPUs, sizeString(e.Run.MemoryBytes))
	case transcript.ProcessStarted:
		fmt.Fprintf(p.w, "%s started: %s\n", e.Process, strings.Join(e.Command, " "))
	case transcript.Output:
		p.output(e)
	case transcript.ProcessExited:
		p.flush()
		fmt.Fprintf(p.w, "%s %s\n", e.Process, transcript.ExitText(e))
	case transcript.Confinement:
		c := e.Confinement
		fmt.Fprintf(p.w, "student confined in %dms: memory %s (%s), %d processes (%s), disk %s (%s), network %s (%s)\n",
			c.SetupMS, sizeString(c.MemoryBytes), c.Enforcement["memory"], c.Processes, c.Enforcement["processes"],
			sizeString(c.DiskBytes), c.Enforcement["disk"], c.Network, c.Enforcement["network"])
		for _, k := range slices.Sorted(maps.Keys(c.Why)) {
			fmt.Fprintf(p.w, "  %s not held by the kernel: %s\n", k, c.Why[k])
		}
	case transcript.ModelCall:
		p.flush()
		m := e.Model
		line := fmt.Sprintf("model call: %s, status %d in %dms", orDash(m.Model), m.Status, m.LatencyMS)
		if m.PromptTokens+m.CompletionTokens > 0 {
			line += fmt.Sprintf(", %d+%d tokens", m.PromptTokens, m.CompletionTokens)
		}
		if m.Error != "" {
			line += ": " + m.Error
		}
		fmt.Fprintln(p.w, line)
	case transcript.LimitHit:
		p.flush()
		fmt.Fprintf(p.w, "limit hit: %s (%s, %s): %s\n", e.Limit.Name, e.Limit.Enforcement, e.Limit.Action, e.Message)
	case transcript.Reward:
		fmt.Fprintf(p.w, "reward: %g\n", *e.Reward)
	case transcript.Note:
		fmt.Fprintf(p.w, "note: %s\n", e.Message)
	case transcript.OutCopied:
		if len(e.Skipped) > 0 {
			fmt.Fprintf(p.w, "/out: left out %s\n", strings.Join(e.Skipped, ", "))
		}
	case transcript.RunFinished:
		p.flush()
		fmt.Fprintf(p.w, "run finished: %s (%s) in %s\n", e.Status, e.Message, time.Since(p.start).Round(time.Millisecond))
	}
}

func (p *progress) output(e transcript.Event) {
	if p.partial == nil {
		p.partial = map[string][]byte{}
	}
	key := e.Process + " " + e.Stream
	buf := append(p.partial[key], e.Data()...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s | %s\n", e.Process, buf[:i])
		buf = buf[i+1:]
	}
	p.partial[key] = append([]byte(nil), buf...)
}

func (p *progress) flush() {
	for key, buf := range p.partial {
		if len(buf) > 0 {
			proc, _, _ := strings.Cut(key, " ")
			fmt.Fprintf(p.w, "%s | %s\n", proc, buf)
		}
		delete(p.partial, key)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sizeString(n int64) string {
	const gib = 1 << 30
	switch {
	case n == 0:
		return "unlimited"
	case n >= 10*gib:
		return fmt.Sprintf("%.1fGiB", float64(n)/gib)
	}
	if n%gib == 0 {
		return fmt.Sprintf("%dGiB", n/gib)
	}
	return fmt.Sprintf("%dMiB", n>>20)
}
