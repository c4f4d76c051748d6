package run

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/chalk-rl/chalk/internal/harness"
	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/transcript"
)

// The host follows the harness's events over the websocket the harness
// serves inside the sandbox, at the address the runtime gives it,
// resuming after the last event it saw whenever the connection drops.
// Whatever the stream did not deliver, the host reads from the harness's
// event log in the run's directory once the sandbox has ended: no event
// is lost, and none is written twice.

// follower turns the harness's events into the transcript.
type follower struct {
	r    *runner
	last int64 // the harness's sequence number of the last event taken
}

// take records one encoded harness event, unless it was taken already.
// It reports whether its header showed it had been (then it is not
// decoded at all).
func (f *follower) take(line []byte) (seen bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return false
	}
	h, ok := transcript.ReadHeader(line)
	if ok && h.Seq <= f.last {
		return true
	}
	// The student's output, which can be most of a transcript, goes
	// through as the harness encoded it: only its number changes.
	if ok && h.Type == transcript.Output {
		f.last = h.Seq
		f.r.emitRaw(line)
		return false
	}
	var e transcript.Event
	if err := json.Unmarshal(line, &e); err != nil || e.Type == "" {
		f.r.emit(transcript.Event{Type: transcript.Note, Message: "harness: " + string(line)})
		return false
	}
	if e.Seq <= f.last {
		return false
	}
	f.last = e.Seq
	switch e.Type {
	case transcript.RunFinished:
		f.r.finished = &e
		return false
	case transcript.Reward:
		if e.Reward != nil {
			f.r.res.Reward = e.Reward
		}
	}
	f.r.emit(e) // renumbered in the transcript's sequence
	return false
}

// stream follows the websocket until ctx ends or the harness has sent
// run.finished.
func (f *follower) stream(ctx context.Context) {
	addr, ok := f.r.rt.(runtime.Addresser)
	if !ok {
		return
	}
	wait := 20 * time.Millisecond
	for ctx.Err() == nil {
		ip, err := addr.Address(ctx, f.r.res.SandboxID)
		if err == nil && ip != "" {
			before := f.r.res.StreamConnections
			var done bool
			done, err = f.session(ctx, ip)
			if done {
				return
			}
			if f.r.res.StreamConnections > before { // it had connected: retry at once
				wait = 20 * time.Millisecond
			}
		}
		if err != nil {
			f.r.o.Log.Debug("follow the run's events", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// session is one websocket connection; done when the harness closed it
// after run.finished.
func (f *follower) session(ctx context.Context, ip string) (bool, error) {
	u := fmt.Sprintf("ws://%s/events?after=%d", net.JoinHostPort(ip, strconv.Itoa(harness.EventsPort)), f.last)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	c, _, err := websocket.Dial(dctx, u, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + f.r.token}},
	})
	cancel()
	if err != nil {
		return false, err
	}
	defer c.CloseNow()
	f.r.res.StreamConnections++
	c.SetReadLimit(64 << 20)
	ack := func() (bool, error) {
		// Tell the harness it can stop waiting for us.
		if err := c.Write(ctx, websocket.MessageText, []byte("ack "+strconv.FormatInt(f.last, 10))); err != nil {
			return false, err
		}
		c.Close(websocket.StatusNormalClosure, "")
		return true, nil
	}
	if f.r.finished != nil { // a connection dropped right after run.finished
		return ack()
	}
	n := 0
	var buf bytes.Buffer // reused: output events can be a megabyte each
	for {
		_, rd, err := c.Reader(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				return true, nil
			}
			return false, err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(rd); err != nil {
			return false, err
		}
		data := buf.Bytes()
		f.take(data)
		n++
		if drop := f.r.o.FaultDropStreamEvery; drop > 0 && n%drop == 0 {
			return false, errors.New("connection dropped on purpose (FaultDropStreamEvery)")
		}
		if f.r.finished != nil {
			return ack()
		}
	}
}

// fromLog takes, from the harness's event log, every event the stream
// did not deliver.
func (f *follower) fromLog() {
	fl, err := os.Open(filepath.Join(f.r.private, filepath.Base(harness.EventLog)))
	if err != nil {
		return
	}
	defer fl.Close()
	br := bufio.NewReaderSize(fl, 256<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 && err == nil && !f.take(line) {
			f.r.res.EventsFromLog++ // the stream had not delivered it
		}
		if err != nil {
			return
		}
	}
}
