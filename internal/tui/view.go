package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// maxOutputLines is the most output lines one run shows.
const maxOutputLines = 10

// statusWidth fits the longest status, "interrupted".
const statusWidth = 11

// snapshot is the runs as the view draws them.
type snapshot struct {
	elapsed      time.Duration
	interrupting bool
	keys         bool // the view reads keys: say which
	runs         []runView
}

// runView is one run, every string in it sanitized.
type runView struct {
	label, env, status string
	elapsed            time.Duration
	done               bool
	lines              []string // the student's latest output, oldest first
	calls              int
	lastCall           transcript.ModelCallInfo
	tokens             int
	limits             []transcript.LimitInfo
	reward             *float64
	exit, message      string
}

// render lays the snapshot out in at most height lines of at most width
// cells: a block per run with its details and output when they all fit,
// else one line per run, else as many runs as fit and a line for the rest.
func render(s snapshot, width, height int, st styles) []string {
	if height < 1 {
		height = 1
	}
	lines := []string{st.header.Render(header(s))}
	var footer string
	switch {
	case s.interrupting:
		footer = "stopping the runs..."
	case s.keys:
		footer = "q or ctrl+c: stop the runs"
	}
	avail := height - 1
	if footer != "" && avail > 1 {
		avail--
	} else {
		footer = ""
	}
	if b, ok := blocks(s.runs, avail, st); ok {
		lines = append(lines, b...)
	} else {
		lines = append(lines, compact(s.runs, avail, width, st)...)
	}
	if footer != "" {
		lines = append(lines, st.dim.Render(footer))
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, width, "…")
	}
	if len(lines) > height {
		lines = lines[:height]
	}
	return lines
}

// header is the totals line.
func header(s snapshot) string {
	var running, done, failed, interrupted, rewarded int
	var sum float64
	for _, r := range s.runs {
		switch {
		case !r.done:
			running++
		case r.status == transcript.StatusInterrupted:
			interrupted++
		case r.status != transcript.StatusOK:
			failed++
		}
		if r.done {
			done++
		}
		if r.reward != nil {
			rewarded++
			sum += *r.reward
		}
	}
	parts := []string{plural(len(s.runs), "run"), fmt.Sprintf("%d running", running), fmt.Sprintf("%d done", done)}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", failed))
	}
	if interrupted > 0 {
		parts = append(parts, fmt.Sprintf("%d interrupted", interrupted))
	}
	if rewarded > 0 {
		parts = append(parts, fmt.Sprintf("mean reward %s over %d", number(sum/float64(rewarded)), rewarded))
	} else {
		parts = append(parts, "no reward yet")
	}
	parts = append(parts, duration(s.elapsed))
	return "chalk run: " + strings.Join(parts, " · ")
}

// blocks draws each run as a block, when every run fits with at least
// one line of its output; the rows left over go to more output.
func blocks(runs []runView, avail int, st styles) ([]string, bool) {
	details := make([][]string, len(runs))
	shown := make([]int, len(runs))
	need := 0
	for i, r := range runs {
		details[i] = detailLines(r, st)
		shown[i] = min(1, len(r.lines))
		need += 1 + len(details[i]) + shown[i]
	}
	if need > avail {
		return nil, false
	}
	for spare, grew := avail-need, true; spare > 0 && grew; {
		grew = false
		for i, r := range runs {
			if spare > 0 && shown[i] < len(r.lines) {
				shown[i]++
				spare--
				grew = true
			}
		}
	}
	var out []string
	for i, r := range runs {
		title := st.label.Render(r.label)
		if r.env != "" {
			title += "  " + r.env
		}
		out = append(out, title+"  "+st.statusText(r.status, 0)+"  "+duration(r.elapsed))
		out = append(out, details[i]...)
		for _, l := range r.lines[len(r.lines)-shown[i]:] {
			out = append(out, st.dim.Render("  | ")+l)
		}
	}
	return out, true
}

// detailLines are a run's lines between its title and its output.
func detailLines(r runView, st styles) []string {
	var out []string
	add := func(key, value string) {
		out = append(out, "  "+st.dim.Render(pad(key, 8))+" "+value)
	}
	if r.calls > 0 {
		add("model", calls(r))
	}
	if len(r.limits) > 0 {
		var hit []string
		for _, l := range r.limits {
			hit = append(hit, fmt.Sprintf("%s (%s, %s)", l.Name, l.Enforcement, l.Action))
		}
		add("limits", strings.Join(hit, ", "))
	}
	if r.exit != "" {
		add("student", r.exit)
	}
	if r.reward != nil {
		add("reward", number(*r.reward))
	}
	if r.message != "" {
		add("note", r.message)
	}
	return out
}

// calls says how many model calls the run made and how the last went.
func calls(r runView) string {
	c := r.lastCall
	s := fmt.Sprintf("%s, last %s: ", plural(r.calls, "call"), orDash(c.Model))
	if c.Status != 0 {
		s += fmt.Sprintf("%d ", c.Status)
	}
	s += "in " + (time.Duration(c.LatencyMS) * time.Millisecond).String()
	if n := c.PromptTokens + c.CompletionTokens; n > 0 {
		s += fmt.Sprintf(", %d+%d tokens", c.PromptTokens, c.CompletionTokens)
	}
	if c.Error != "" {
		s += ", " + c.Error
	}
	if r.calls > 1 && r.tokens > 0 {
		s += fmt.Sprintf("; %d tokens in all", r.tokens)
	}
	return s
}

// compact draws one line per run; when there are more runs than rows, the
// unfinished ones first, and a last line counts the ones left out.
func compact(runs []runView, avail, width int, st styles) []string {
	show := make([]bool, len(runs))
	if len(runs) <= avail {
		for i := range show {
			show[i] = true
		}
	} else {
		n := max(avail-1, 0)
		for pass := 0; pass < 2 && n > 0; pass++ {
			for i, r := range runs {
				if n > 0 && !show[i] && r.done == (pass == 1) {
					show[i] = true
					n--
				}
			}
		}
	}
	labelWidth := 0
	for _, r := range runs {
		labelWidth = max(labelWidth, ansi.StringWidth(r.label))
	}
	labelWidth = min(labelWidth, 28)
	var out []string
	var hidden, hiddenDone int
	for i, r := range runs {
		if !show[i] {
			hidden++
			if r.done {
				hiddenDone++
			}
			continue
		}
		out = append(out, compactLine(r, labelWidth, width, st))
	}
	if hidden > 0 && avail > 0 {
		out = append(out, st.dim.Render(fmt.Sprintf("... and %d more: %d running, %d done", hidden, hidden-hiddenDone, hiddenDone)))
	}
	return out
}

func compactLine(r runView, labelWidth, width int, st styles) string {
	label := ansi.Truncate(r.label, labelWidth, "…")
	line := st.label.Render(pad(label, labelWidth)) + "  " + st.statusText(r.status, statusWidth) +
		" " + fmt.Sprintf("%6s", duration(r.elapsed))
	calls := ""
	if r.calls > 0 {
		calls = plural(r.calls, "call")
	}
	line += "  " + fmt.Sprintf("%9s", calls)
	reward := ""
	if r.reward != nil {
		reward = "reward " + number(*r.reward)
	}
	line += "  " + pad(reward, 13)
	if len(r.limits) > 0 {
		names := make([]string, len(r.limits))
		for i, l := range r.limits {
			names[i] = l.Name
		}
		line += " limit " + strings.Join(names, ",")
	}
	if n := len(r.lines); n > 0 {
		line += " " + st.dim.Render("|") + " " + r.lines[n-1]
	} else if r.done && r.message != "" {
		line += " " + st.dim.Render("|") + " " + r.message
	}
	return ansi.Truncate(strings.TrimRight(line, " "), width, "…")
}

// pad fills s with spaces to width cells.
func pad(s string, width int) string {
	if n := width - ansi.StringWidth(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func number(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// duration is an elapsed time in at most six cells: 42s, 3m05s, 1h02m.
func duration(d time.Duration) string {
	d = max(d, 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
