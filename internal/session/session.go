// Package session is the stream protocol between 'chalk session' on a
// person's machine and the Chalk API: one websocket per session, carrying
// binary messages whose first byte says what the rest is. It also names
// the connectors the server may start inside a container for 'session
// proxy', and runs the client's half of both kinds of session.
//
// Client to server:
//
//	'd' + bytes   stdin (exec) or tunnel bytes (proxy)
//	'c'           stdin is at EOF: the server half-closes the process's input
//	's' + JSON    Start: the command of an exec session (its first message)
//	'r' + JSON    Resize: the terminal's new size
//
// Server to client:
//
//	'd' + bytes   stdout, or tunnel bytes
//	'e' + bytes   stderr (exec); the connector's own complaints (proxy)
//	'x' + JSON    Exit: the session is over; always the last message
//
// Both sides ping at an interval and give up on a peer that stops
// answering, so a dead network path ends the session and its process.
package session

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coder/websocket"
)

// Message kinds.
const (
	KindData     = 'd'
	KindStderr   = 'e'
	KindCloseIn  = 'c'
	KindStart    = 's'
	KindResize   = 'r'
	KindExit     = 'x'
	MaxMessage   = 1 << 20
	Subprotocol  = "chalk.session.v1"
	pingDeadline = 15 * time.Second
)

// DataSize is the most data either side reads for one message, and so
// puts in one.
const DataSize = 512 << 10

// Start is the first message of an exec session.
type Start struct {
	Cmd  []string `json:"cmd"`
	TTY  bool     `json:"tty,omitempty"`
	Cols int      `json:"cols,omitempty"`
	Rows int      `json:"rows,omitempty"`
	Env  []string `json:"env,omitempty"`
}

// Resize is a terminal's size.
type Resize struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// Exit ends a session: the process's exit code, or why the session
// failed (Error, with Hint the fix) before or while it ran.
type Exit struct {
	Code  int    `json:"code"`
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
	// Kind classifies Error for the client: see the Err* constants.
	Kind string `json:"kind,omitempty"`
}

// Exit kinds.
const (
	ErrNoConnector  = "no-connector"
	ErrNotListening = "not-listening"
	ErrNotFound     = "not-found"
	ErrFailed       = "failed"
)

// Encode returns kind followed by v's JSON.
func Encode(kind byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are encoded
	}
	return append([]byte{kind}, b...)
}

// Decode parses the JSON after the kind byte of msg into v.
func Decode(msg []byte, v any) error {
	if len(msg) < 1 {
		return fmt.Errorf("empty session message")
	}
	return json.Unmarshal(msg[1:], v)
}

// Keepalive is how often each side pings, and how long it waits for the
// answer before it declares the peer dead.
type Keepalive struct {
	Interval time.Duration
	Timeout  time.Duration
}

// DefaultKeepalive suits connections across the internet: a dead peer is
// noticed within about 30 s.
var DefaultKeepalive = Keepalive{Interval: 15 * time.Second, Timeout: pingDeadline}

// KeepAlive pings c until ctx ends; when a ping goes unanswered it
// closes c, which ends every read and write on it, and calls dead.
func KeepAlive(ctx context.Context, c *websocket.Conn, k Keepalive, dead func()) {
	if k.Interval <= 0 {
		return
	}
	if k.Timeout <= 0 {
		k.Timeout = k.Interval
	}
	t := time.NewTicker(k.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, k.Timeout)
		err := c.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil && dead != nil {
				dead()
			}
			c.CloseNow()
			return
		}
	}
}
