package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chalk-rl/chalk/internal/confine"
	"github.com/chalk-rl/chalk/internal/harness"
	"github.com/chalk-rl/chalk/internal/runtime"
)

// MeasureConfinement starts a sandbox of image on rt, the way a run
// starts one, runs `chalk check confinement --json` in it and returns
// the report: what this runtime actually gives the student.
func MeasureConfinement(ctx context.Context, rt runtime.Runtime, image string) (*confine.Report, error) {
	info, err := rt.Image(ctx, image)
	if err != nil {
		return nil, err
	}
	if info == nil {
		return nil, fmt.Errorf("the %s runtime has no image %s", rt.Name(), image)
	}
	bin, err := HarnessBinary(info.Architecture)
	if err != nil {
		return nil, err
	}
	id := newID()
	sid, err := rt.Create(ctx, runtime.SandboxSpec{
		Name:        "chalk-check-" + id,
		Image:       image,
		Labels:      map[string]string{LabelRun: id, LabelOwner: Owner()},
		Mounts:      []runtime.Mount{{Source: bin, Target: harness.Binary, ReadOnly: true}},
		Entrypoint:  []string{harness.Binary, "check", "confinement", "--json"},
		CapAdd:      HarnessCaps,
		DeviceRules: HarnessDevices,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = rt.Remove(rctx, sid)
	}()
	var stdout, stderr bytes.Buffer
	if _, err := rt.Start(ctx, sid, &stdout, &stderr); err != nil {
		return nil, err
	}
	var rep confine.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("the confinement check in the %s sandbox printed no report: %v: %s", rt.Name(), err, strings.TrimSpace(stderr.String()))
	}
	return &rep, nil
}

// Enforcement reads, from a report, how each limit is held: kernel,
// watchdog or none (a limit whose check failed counts as none).
func Enforcement(rep *confine.Report) map[string]string {
	out := map[string]string{"memory": confine.None, "processes": confine.None, "disk": confine.None, "network": confine.None}
	for _, c := range rep.Checks {
		name := c.Name
		if name == "firewall" {
			name = "network"
		}
		if _, ok := out[name]; !ok {
			continue
		}
		if c.Status == confine.Pass && c.Enforcement != "" {
			out[name] = c.Enforcement
		}
	}
	// The firewall holds only if every attack on it was refused.
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, "reach ") && c.Status != confine.Pass {
			out["network"] = confine.None
		}
	}
	return out
}
