package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// demoEnv, when set to a directory, makes the test binary the demo: a
// program that draws the view of three scripted runs on its terminal, one
// step each time the test makes the file the step waits for there.
const demoEnv = "CHALK_TUI_DEMO"

func TestMain(m *testing.M) {
	if dir := os.Getenv(demoEnv); dir != "" {
		if err := demo(dir); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func demo(dir string) error {
	// Never outlive a test that died.
	time.AfterFunc(time.Minute, func() { os.Exit(2) })
	wait := func(name string) {
		for {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	mark := func(name string) error { return os.WriteFile(filepath.Join(dir, name), nil, 0o644) }

	var ui *UI
	interrupted := make(chan struct{}, 1)
	ui = New(os.Stderr, []Run{{Label: "run 1/3 demo01"}, {Label: "run 2/3 demo02"}, {Label: "run 3/3 demo03"}}, Options{
		Input: os.Stdin,
		Interrupt: func() {
			select {
			case interrupted <- struct{}{}:
			default:
			}
		},
	})
	ui.Start()
	fmt.Fprintln(ui, "image chalk-demo:0123 is up to date")

	for i := range 2 {
		ui.Event(i, started("demo"))
		ui.Event(i, proc(transcript.ProcessStarted, "student"))
	}
	ui.Event(0, output("\x1b[31mcompiling\x1b[0m step 1\n"))
	ui.Event(0, call("demo-model", 850, 120, 30))
	ui.Event(1, output("fetching data\x1b]0;title\x07\n"))
	wait("go1")

	ui.Event(0, proc(transcript.ProcessExited, "student"))
	ui.Event(0, proc(transcript.ProcessStarted, "grader"))
	ui.Event(0, reward(0.75))
	ui.Event(0, finished(transcript.StatusOK, ""))
	ui.Event(1, transcript.Event{Type: transcript.LimitHit, Limit: &transcript.LimitInfo{Name: "memory", Enforcement: "kernel", Action: "killed"}})
	ui.Event(1, finished(transcript.StatusFailed, "student killed by SIGKILL"))
	ui.Event(2, started("demo"))
	ui.Event(2, proc(transcript.ProcessStarted, "student"))
	ui.Event(2, output("still going\n"))

	// The user presses q; the runs are stopped, as chalk run would.
	<-interrupted
	if err := mark("interrupted"); err != nil {
		return err
	}
	ui.Event(2, finished(transcript.StatusInterrupted, "stopped by the user"))
	wait("go2")

	if err := ui.Close(); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "printed after the view")
	if err := mark("closed"); err != nil {
		return err
	}
	wait("exit")
	return nil
}
