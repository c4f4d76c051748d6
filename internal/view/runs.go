package view

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chalk-rl/chalk/internal/transcript"
)

// TranscriptName is the transcript's file name in a run directory.
const TranscriptName = "transcript.jsonl"

// StatusRunning is the status of a run whose transcript has no
// run.finished yet.
const StatusRunning = "running"

// StatusAbandoned is the status of a run without run.finished whose chalk
// process is gone: killed before it could write the end.
const StatusAbandoned = "abandoned"

// Summary is what the list of runs shows about one run.
type Summary struct {
	Name        string // the run directory's name: TIME-ID
	ID          string
	Environment string
	Runtime     string
	Hardware    string
	Status      string // a transcript status, or StatusRunning
	Message     string
	Reward      *float64
	Start       time.Time
	End         time.Time // zero while running
	Limits      []string  // the limits hit
	Info        *transcript.RunInfo
	Err         string // the transcript could not be read whole
}

// Duration is how long the run took, or has taken so far.
func (s *Summary) Duration(now time.Time) time.Duration {
	switch {
	case s.Start.IsZero():
		return 0
	case s.End.IsZero():
		return now.Sub(s.Start)
	}
	return s.End.Sub(s.Start)
}

// add folds one event into the summary.
func (s *Summary) add(e transcript.Event) {
	switch e.Type {
	case transcript.RunStarted:
		s.Start, s.Info = e.Time, e.Run
		if r := e.Run; r != nil {
			s.ID, s.Environment, s.Runtime, s.Hardware = r.ID, r.Environment, r.Runtime, r.Hardware
		}
	case transcript.Reward:
		s.Reward = e.Reward
	case transcript.LimitHit:
		if l := e.Limit; l != nil {
			s.Limits = append(s.Limits, l.Name)
		}
	case transcript.RunFinished:
		s.Status, s.Message, s.End = e.Status, e.Message, e.Time
	}
}

// summaries keeps each run's summary with the transcript offset it was
// read up to, so that a growing transcript is only read from where it was
// left. A page that also shows a run's events reads them through it, so
// that a request reads and decodes the transcript once.
type summaries struct {
	mu        sync.Mutex
	m         map[string]*cached
	ownerGone func(owner string) (bool, string)
	// onRead, when set, is told of every read of a transcript (readFrom):
	// the byte range [from, to) read and decoded. Tests count reads with it.
	onRead func(path string, from, to int64)
}

// cached is one run's summary. Its lock is held while its transcript is
// read, so that runs are read side by side and each once at a time.
type cached struct {
	mu      sync.Mutex
	sum     Summary
	off     int64
	modTime time.Time
}

// entry is the cache entry of the transcript at path.
func (c *summaries) entry(path string) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cached{}
	}
	ent := c.m[path]
	if ent == nil {
		ent = &cached{}
		c.m[path] = ent
	}
	return ent
}

// get returns the summary of the run name, below root.
func (c *summaries) get(root *os.Root, name string) Summary {
	s, _, _, _ := c.read(root, name, -1)
	return s
}

// read returns the summary of the run name, below root, and the entries
// of its transcript from byte offset from on, with the offset to read
// from next; a negative from asks for the summary only. The transcript
// is read once, from the earlier of from and where the summary was left.
// A transcript shorter than from was replaced: read returns errReplaced.
func (c *summaries) read(root *os.Root, name string, from int64) (Summary, []entry, int64, error) {
	path := filepath.Join(name, TranscriptName)
	ent := c.entry(path)
	ent.mu.Lock()
	defer ent.mu.Unlock()
	st, err := root.Stat(path)
	if err != nil {
		return Summary{Name: name, Status: "unreadable", Err: err.Error()}, nil, from, err
	}
	if ent.sum.Name == "" || st.Size() < ent.off || (st.Size() == ent.off && !st.ModTime().Equal(ent.modTime)) {
		// New, or replaced: read it from the start.
		ent.sum, ent.off = Summary{Name: name}, 0
	}
	var entries []entry
	next, start := from, ent.off
	if from >= 0 {
		start = min(start, from)
	}
	switch {
	case from > st.Size():
		err = errReplaced
	case st.Size() > start || start == 0:
		var off int64
		entries, off, err = c.readFrom(root, path, start)
		if err != nil {
			ent.sum.Err = err.Error()
		}
		var asked []entry // the entries from offset from on
		for _, en := range entries {
			if en.Off >= ent.off {
				if en.Err != nil {
					ent.sum.Err = en.Err.Error()
				} else {
					ent.sum.add(en.Event)
				}
			}
			if from >= 0 && en.Off >= from {
				asked = append(asked, en)
			}
		}
		entries = asked
		ent.off, next = max(ent.off, off), max(from, off)
	}
	ent.modTime = st.ModTime()
	s := ent.sum
	if s.Status == "" {
		s.Status = StatusRunning
		if s.Info != nil && s.Info.Owner != "" && c.ownerGone != nil {
			if gone, why := c.ownerGone(s.Info.Owner); gone {
				s.Status, s.Message = StatusAbandoned, "the run never finished: "+why
			}
		}
	}
	return s, entries, next, err
}

// list returns the summaries of the runs below root, newest first. A run
// is a directory holding a transcript.
func (c *summaries) list(root *os.Root) ([]Summary, error) {
	ents, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, d := range ents {
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		if _, err := root.Stat(filepath.Join(d.Name(), TranscriptName)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		out = append(out, c.get(root, d.Name()))
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Start, out[j].Start
		if !a.Equal(b) {
			return a.After(b)
		}
		return out[i].Name > out[j].Name
	})
	return out, nil
}
