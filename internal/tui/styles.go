package tui

import (
	"github.com/charmbracelet/lipgloss"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// styles colour the view; the renderer drops the colours when the
// terminal has none or NO_COLOR is set.
type styles struct {
	header, label, dim lipgloss.Style
	status             map[string]lipgloss.Style
}

func newStyles(r *lipgloss.Renderer) styles {
	color := func(c string) lipgloss.Style { return r.NewStyle().Foreground(lipgloss.Color(c)) }
	return styles{
		header: r.NewStyle().Bold(true),
		label:  r.NewStyle().Bold(true),
		dim:    r.NewStyle().Faint(true),
		status: map[string]lipgloss.Style{
			StatusBuilding:               r.NewStyle().Faint(true),
			StatusStarting:               r.NewStyle().Faint(true),
			StatusRunning:                color("6"),
			StatusGrading:                color("4"),
			transcript.StatusOK:          color("2").Bold(true),
			transcript.StatusFailed:      color("1").Bold(true),
			transcript.StatusError:       color("1").Bold(true),
			transcript.StatusInterrupted: color("3").Bold(true),
		},
	}
}

// statusText is a run's status, padded to width and coloured.
func (s styles) statusText(status string, width int) string {
	padded := pad(status, width)
	if st, ok := s.status[status]; ok {
		return st.Render(padded)
	}
	return padded
}
