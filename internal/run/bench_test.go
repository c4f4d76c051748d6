package run_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/run"
	"github.com/chalk-rl/chalk/internal/testenv"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// BenchmarkConfinement measures, in one run, what confining the student
// adds to a run: the same environment (a student that runs true) is run
// confined and unconfined, alternately, and the medians are compared. It
// also reports the harness's own measure of the setup (cgroup, disk,
// firewall), from the confinement event.
//
//	go test -run '^$' -bench Confinement -benchtime 10x ./internal/run/
func BenchmarkConfinement(b *testing.B) {
	rt := docker(b)
	e := environment(b, "", "true", "true")
	once := func(unconfined bool) (time.Duration, int64) {
		start := time.Now()
		res, err := run.Run(context.Background(), run.Options{
			Env: e, Runtime: rt, RunsDir: b.TempDir(), Unconfined: unconfined,
			Log: slog.New(slog.DiscardHandler), BuildLog: io.Discard,
		})
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != transcript.StatusOK {
			b.Fatalf("run %s: %s", res.Status, res.Message)
		}
		events, err := transcript.ReadFile(res.Transcript)
		if err != nil {
			b.Fatal(err)
		}
		var setup int64 = -1
		for _, ev := range events {
			if ev.Type == transcript.Confinement {
				setup = ev.Confinement.SetupMS
			}
		}
		return took, setup
	}
	once(false) // build the image, warm the caches
	once(true)
	var confined, bare []time.Duration
	var setups []time.Duration
	b.ResetTimer()
	for range b.N {
		c, s := once(false)
		u, _ := once(true)
		confined, bare = append(confined, c), append(bare, u)
		setups = append(setups, time.Duration(s)*time.Millisecond)
	}
	b.StopTimer()
	c, u, s := testenv.Median(confined), testenv.Median(bare), testenv.Median(setups)
	added := c - u
	b.ReportMetric(float64(added.Milliseconds()), "ms-added-median")
	b.ReportMetric(float64(s.Milliseconds()), "ms-setup-median")
	fmt.Printf("confinement adds %s at the median (confined run %s, unconfined %s, over %d runs each; %.2fx); setup inside the sandbox %s at the median (target: under 200ms added)\n",
		added.Round(time.Millisecond), c.Round(time.Millisecond), u.Round(time.Millisecond), b.N, float64(c)/float64(u), s)
}
