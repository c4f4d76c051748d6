package tui

import (
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// The size assumed until the terminal tells its own (and for an output
// that is not a terminal).
const (
	defaultWidth  = 80
	defaultHeight = 24
)

type (
	tickMsg  struct{}
	closeMsg struct{}
)

// model is the bubbletea side of the view: it copies the runs' state on
// every tick, so events never wait for drawing and drawing never waits
// for events.
type model struct {
	ui            *UI
	width, height int
	snap          snapshot
	closing       bool
}

func tick() tea.Cmd {
	return tea.Tick(redraw, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *model) Init() tea.Cmd {
	m.snap = m.ui.snapshot()
	return tick()
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tickMsg:
		if m.closing {
			return m, nil
		}
		m.snap = m.ui.snapshot()
		return m, tea.Batch(m.ui.printCmd(false), tick())
	case closeMsg:
		m.snap = m.ui.snapshot()
		m.closing = true
		return m, tea.Sequence(m.ui.printCmd(true), tea.Quit)
	case tea.WindowSizeMsg:
		// A narrower terminal rewraps what was drawn, and the renderer no
		// longer knows where its lines are: start again from a clear screen.
		var cmd tea.Cmd
		if m.width != 0 && msg.Width < m.width {
			cmd = tea.ClearScreen
		}
		m.width, m.height = msg.Width, msg.Height
		return m, cmd
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c":
			m.ui.interrupt()
			m.snap.interrupting = true
		}
	}
	return m, nil
}

// View draws the last snapshot in the terminal's size, keeping the last
// row free: the final frame ends with a newline, so that what is printed
// after the view starts below it.
func (m *model) View() string {
	w, h := m.width, m.height
	if w <= 0 {
		w = defaultWidth
	}
	if h <= 0 {
		h = defaultHeight
	}
	s := strings.Join(render(m.snap, w, h-1, m.ui.styles), "\n")
	if m.closing {
		s += "\n"
	}
	return s
}
