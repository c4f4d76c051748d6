// Package harness is Chalk's trusted process inside the sandbox. It starts
// as the sandbox's entrypoint (`chalk harness CONFIG`), runs the student as
// an unprivileged uid, then the grader, records every event as a transcript
// line on its stdout, and packs /out for the host.
//
// The episode runs only on Linux (run_linux.go, process_linux.go); on any
// host, chalk run uses the Config, the paths and the event stream here.
package harness

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/chalk-rl/chalk/internal/confine"
)

// Paths inside the sandbox.
const (
	// Dir holds the chalk binary and, in Dir/run, the run's private files.
	Dir = "/.chalk"
	// Binary is where the host puts the chalk binary.
	Binary = Dir + "/chalk"
	// RunDir is the run's private directory, mode 0700: its config, with
	// any secret in it, and the packed /out. The student cannot read it.
	RunDir = Dir + "/run"
	// ConfigPath is the run's config.
	ConfigPath = RunDir + "/config.json"
	// EventLog is the harness's events, which it also serves on
	// EventsPort; the host reads what it missed here after the end.
	EventLog = RunDir + "/events.jsonl"
	// OutArchive is where the harness leaves /out, packed, for the host.
	OutArchive = RunDir + "/out.tar"
	// DiskImage is the student's disk, in the run's directory on the
	// host's disk; DiskMount is where it is mounted in the sandbox.
	DiskImage = RunDir + "/student-disk.img"
	DiskMount = Dir + "/disk"
	// OutDir is the run's output directory.
	OutDir = "/out"
	// RewardFile is where the grader writes the reward, as a number.
	RewardFile = OutDir + "/reward"
)

// StudentUID is the unprivileged uid (and gid) the student runs as. It is
// unused in common base images.
const StudentUID = 61000

// Config is what the host tells the harness, as JSON in ConfigPath. It is
// read from a file so that nothing in it (an API key, say) is on any
// command line.
type Config struct {
	RunID   string   `json:"run_id"`
	Student Process  `json:"student"`
	Grader  *Process `json:"grader,omitempty"`
	// Env is added to both processes' environments: the variables
	// forwarded from the host's shell.
	Env map[string]string `json:"env,omitempty"`
	// UID runs the student; zero means StudentUID.
	UID int `json:"uid,omitempty"`
	// Limits are the student's memory, process and disk limits; zero
	// means unlimited.
	Limits confine.Limits `json:"limits,omitzero"`
	// Network is the student's network policy (see confine.NetworkPolicies);
	// empty means confine.NetworkProxy.
	Network string `json:"network,omitempty"`
	// EventsToken is the per-run secret the host presents to follow the
	// run's events over the websocket.
	EventsToken string `json:"events_token,omitempty"`
	// Model, when set, is the run's model proxy: the harness serves the
	// student an endpoint on the sandbox's loopback and forwards to it.
	Model *ModelConfig `json:"model,omitempty"`
	// Unconfined leaves out the limits and the firewall (the student
	// still runs as UID with no privilege). Only benchmarks set it, to
	// measure what confinement adds; chalk run never does.
	Unconfined bool `json:"unconfined,omitempty"`
	// Allow are the host:port addresses the student may reach by TCP
	// whatever the policy: the model proxy.
	Allow []string `json:"allow,omitempty"`
}

// ModelConfig is the model proxy the harness forwards the student's
// calls to. The key stays here, in the run's private config, and never
// reaches the student.
type ModelConfig struct {
	URL         string `json:"url"`
	APIKey      string `json:"api_key,omitempty"`
	ServiceTier string `json:"service_tier,omitempty"`
}

// EventsPort is where the harness serves the run's events inside the
// sandbox. The student cannot reach it.
const EventsPort = 7070

// Process is one command the harness runs.
type Process struct {
	Command []string          `json:"command"`
	Workdir string            `json:"workdir,omitempty"`
	Timeout Duration          `json:"timeout,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// Duration is a time.Duration written as a string such as "1m30s".
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// studentUID is the uid the student runs as: UID, or StudentUID when UID
// is unset. This is the one place the default is applied, for a Config
// read by ReadConfig and one built in code alike: never root, since
// running the student (and killing every process of its uid) as root
// would be a disaster.
func (c *Config) studentUID() int {
	if c.UID <= 0 {
		return StudentUID
	}
	return c.UID
}

// ReadConfig reads and checks the config at path.
func ReadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read run config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("parse run config %s: %w", path, err)
	}
	if len(c.Student.Command) == 0 {
		return nil, fmt.Errorf("run config %s: student.command is empty", path)
	}
	if c.Network == "" {
		c.Network = confine.NetworkProxy
	}
	if err := confine.CheckPolicy(c.Network); err != nil {
		return nil, fmt.Errorf("run config %s: %w", path, err)
	}
	for _, a := range c.Allow {
		if _, err := netip.ParseAddrPort(a); err != nil {
			return nil, fmt.Errorf("run config %s: allow: %w", path, err)
		}
	}
	return &c, nil
}
