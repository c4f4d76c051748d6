package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// Output blocks: consecutive output events of one process are shown as one
// block. A block longer than collapseLines or collapseBytes shows its
// first previewLines and folds the rest; past maxBlockBytes it is cut, and
// the whole of it stays in the transcript.
const (
	collapseLines = 60
	collapseBytes = 16 << 10
	previewLines  = 20
	maxBlockBytes = 1 << 20
)

// item is one row of a transcript page.
type item struct {
	Seq  int64
	Kind string // the template that renders it
	At   string // time since the run started
	Time string // the event's own time, RFC 3339

	Event   transcript.Event
	Command string
	Output  *block
	Exit    string
	Model   *modelView
	Raw     string // pretty JSON, for event types this version does not know
	Err     string
}

// block is the merged output of one process.
type block struct {
	Process string
	Head    []chunk // always shown
	Tail    []chunk // folded away
	Lines   int
	Bytes   int64
	Cut     int64 // bytes not shown at all
}

// shown is how many bytes of the block are shown, folded or not.
func (b *block) shown() int { return int(b.Bytes - b.Cut) }

// chunk is text from one stream.
type chunk struct {
	Stream string
	Text   string
}

// renderer turns transcript entries into items. It carries what later
// events are rendered against, so that a page can be extended with the
// events that arrive after it was served.
type renderer struct {
	state cursor
	items []*item
	open  *block // the block new output joins, when the last item is one
}

// cursor is where a page's rendering stopped: the next transcript offset
// and what the following events are shown relative to. Pages hand it back
// when they ask for new events.
type cursor struct {
	Offset  int64     `json:"o"`
	Start   time.Time `json:"t,omitzero"`
	Msgs    int       `json:"m,omitempty"` // messages in the last model request
	MsgHash string    `json:"h,omitempty"` // their hash
	Done    bool      `json:"d,omitempty"` // run.finished was seen
}

func (r *renderer) add(en entry) {
	if en.Err != nil {
		r.push(&item{Kind: "error", Err: en.Err.Error(), Raw: string(en.Raw)})
		return
	}
	e := en.Event
	if e.Type == transcript.RunStarted && r.state.Start.IsZero() {
		r.state.Start = e.Time
	}
	if e.Type == transcript.Output {
		r.output(e)
		return
	}
	it := &item{Seq: e.Seq, Kind: e.Type, Event: e}
	switch e.Type {
	case transcript.RunStarted:
		if e.Run == nil {
			it.Kind = "unknown"
		}
	case transcript.ProcessStarted:
		it.Command = runtime.ShellJoin(e.Command)
	case transcript.ProcessExited:
		it.Exit = transcript.ExitText(e)
	case transcript.Reward:
		if e.Reward == nil {
			it.Kind = "unknown"
		}
	case transcript.ModelCall:
		if e.Model == nil {
			it.Kind = "unknown"
			break
		}
		it.Model = r.model(e.Model)
	case transcript.LimitHit:
		if e.Limit == nil {
			it.Kind = "unknown"
		}
	case transcript.RunFinished:
		r.state.Done = true
	case transcript.OutCopied, transcript.Note:
	default:
		it.Kind = "unknown"
	}
	if it.Kind == "unknown" {
		it.Raw = pretty(en.Raw)
	}
	r.stamp(it, e)
	r.push(it)
}

func (r *renderer) stamp(it *item, e transcript.Event) {
	if e.Time.IsZero() {
		return
	}
	it.Time = e.Time.Format(time.RFC3339Nano)
	if !r.state.Start.IsZero() {
		it.At = "+" + transcript.FormatDuration(e.Time.Sub(r.state.Start))
	}
}

func (r *renderer) push(it *item) {
	r.items = append(r.items, it)
	r.open = nil
}

// output adds e to the open block of its process, or starts one.
func (r *renderer) output(e transcript.Event) {
	b := r.open
	if b == nil || b.Process != e.Process {
		b = &block{Process: e.Process}
		it := &item{Seq: e.Seq, Kind: "output", Output: b}
		r.stamp(it, e)
		r.push(it)
		r.open = b
	}
	text := strings.ToValidUTF8(string(e.Data()), "\uFFFD")
	b.add(e.Stream, text)
}

func (b *block) add(stream, text string) {
	room := maxBlockBytes - b.shown()
	b.Bytes += int64(len(text))
	b.Lines += strings.Count(text, "\n")
	if len(text) > room {
		keep := text[:max(room, 0)]
		for len(keep) > 0 && !utf8.ValidString(keep) {
			keep = keep[:len(keep)-1]
		}
		b.Cut += int64(len(text) - len(keep))
		text = keep
	}
	if text == "" {
		return
	}
	c := chunk{Stream: stream, Text: text}
	switch {
	case b.Tail == nil && b.Lines <= collapseLines && b.shown() <= collapseBytes:
		b.Head = append(b.Head, c)
	case b.Tail == nil:
		b.Head, b.Tail = splitLines(append(b.Head, c), previewLines)
		if b.Tail == nil {
			b.Tail = []chunk{}
		}
	default:
		b.Tail = append(b.Tail, c)
	}
}

// Folded reports whether part of the block is folded away.
func (b *block) Folded() bool { return len(b.Tail) > 0 }

// TailLines counts the lines folded away.
func (b *block) TailLines() int {
	n := 0
	for _, c := range b.Tail {
		n += strings.Count(c.Text, "\n")
	}
	if k := len(b.Tail); k > 0 && !strings.HasSuffix(b.Tail[k-1].Text, "\n") {
		n++
	}
	return n
}

// splitLines cuts cs after its first n lines.
func splitLines(cs []chunk, n int) (head, tail []chunk) {
	for i, c := range cs {
		for j := 0; j < len(c.Text); j++ {
			if c.Text[j] != '\n' {
				continue
			}
			n--
			if n == 0 {
				head = append(append(head, cs[:i]...), chunk{c.Stream, c.Text[:j+1]})
				if rest := c.Text[j+1:]; rest != "" {
					tail = append(tail, chunk{c.Stream, rest})
				}
				tail = append(tail, cs[i+1:]...)
				return head, tail
			}
		}
	}
	// Fewer than n lines, but too many bytes: cut by size instead.
	head = append(head, cs...)
	return foldBySize(head)
}

func foldBySize(cs []chunk) (head, tail []chunk) {
	left := collapseBytes / 4
	for i, c := range cs {
		if len(c.Text) <= left {
			left -= len(c.Text)
			continue
		}
		cut := left
		for cut > 0 && !utf8.RuneStart(c.Text[cut]) {
			cut--
		}
		head = append(append(head, cs[:i]...), chunk{c.Stream, c.Text[:cut]})
		tail = append(append(tail, chunk{c.Stream, c.Text[cut:]}), cs[i+1:]...)
		return head, tail
	}
	return cs, nil
}

func fmtSize(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
}

// pretty indents a JSON document, or returns it as it is when it is not
// JSON.
func pretty(raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
