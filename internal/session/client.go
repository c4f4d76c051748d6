package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/coder/websocket"
)

// ExitError is a session that ended with an Exit carrying an error.
type ExitError struct{ Exit Exit }

func (e *ExitError) Error() string { return e.Exit.Error }

// Proxy joins the tunnel on c to stdin and stdout until either side ends.
// Only tunnel bytes are written to stdout.
func Proxy(ctx context.Context, c *websocket.Conn, k Keepalive, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go KeepAlive(ctx, c, k, nil)
	go pump(ctx, c, stdin)
	ex, err := receive(ctx, c, stdout, stderr)
	if err != nil {
		return err
	}
	c.Close(websocket.StatusNormalClosure, "")
	if ex.Error != "" {
		return &ExitError{Exit: *ex}
	}
	return nil
}

// Exec runs start's command over c: stdin goes to the process, its
// stdout and stderr come back, and its exit code is returned. Sizes sent
// on resize reach its terminal.
func Exec(ctx context.Context, c *websocket.Conn, k Keepalive, start Start, stdin io.Reader, stdout, stderr io.Writer, resize <-chan Resize) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageBinary, Encode(KindStart, start)); err != nil {
		return -1, fmt.Errorf("start the session: %w", err)
	}
	go KeepAlive(ctx, c, k, nil)
	go pump(ctx, c, stdin)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case r, ok := <-resize:
				if !ok {
					return
				}
				_ = c.Write(ctx, websocket.MessageBinary, Encode(KindResize, r))
			}
		}
	}()
	ex, err := receive(ctx, c, stdout, stderr)
	if err != nil {
		return -1, err
	}
	c.Close(websocket.StatusNormalClosure, "")
	if ex == nil {
		return -1, errors.New("the session ended without an exit status")
	}
	if ex.Error != "" {
		return ex.Code, &ExitError{Exit: *ex}
	}
	return ex.Code, nil
}

// pump sends stdin as data messages, then an EOF.
func pump(ctx context.Context, c *websocket.Conn, stdin io.Reader) {
	if stdin == nil {
		_ = c.Write(ctx, websocket.MessageBinary, []byte{KindCloseIn})
		return
	}
	buf := make([]byte, 1+DataSize)
	buf[0] = KindData
	for {
		n, err := stdin.Read(buf[1:])
		if n > 0 {
			if werr := c.Write(ctx, websocket.MessageBinary, buf[:1+n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = c.Write(ctx, websocket.MessageBinary, []byte{KindCloseIn})
			return
		}
	}
}

// receive writes data to stdout and stderr until the Exit, which it
// returns. Messages are streamed through one buffer, not each allocated.
func receive(ctx context.Context, c *websocket.Conn, stdout, stderr io.Writer) (*Exit, error) {
	buf := make([]byte, DataSize)
	for {
		_, r, err := c.Reader(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, lostError(err)
		}
		var kind [1]byte
		if _, err := io.ReadFull(r, kind[:]); err != nil {
			continue // an empty message
		}
		switch kind[0] {
		case KindData:
			// The whole message at once: fewer, larger writes.
			for {
				n, rerr := io.ReadFull(r, buf)
				if n > 0 {
					if _, err := stdout.Write(buf[:n]); err != nil {
						return nil, fmt.Errorf("write output: %w", err)
					}
				}
				if rerr != nil {
					break
				}
			}
		case KindStderr:
			_, _ = io.CopyBuffer(onlyWriter{stderr}, onlyReader{r}, buf)
		case KindExit:
			var ex Exit
			data, err := io.ReadAll(io.LimitReader(r, 64<<10))
			if err == nil {
				err = json.Unmarshal(data, &ex)
			}
			if err != nil {
				return nil, fmt.Errorf("bad exit message from the server: %w", err)
			}
			return &ex, nil
		default:
			_, _ = io.Copy(io.Discard, r)
		}
	}
}

// onlyReader and onlyWriter hide ReadFrom/WriteTo so that io.CopyBuffer
// uses the buffer it is given.
type onlyReader struct{ io.Reader }
type onlyWriter struct{ io.Writer }

// LostError is a session whose stream broke before it ended.
type LostError struct{ Err error }

func (e *LostError) Error() string {
	return "the session's connection to the Chalk API was lost: " + e.Err.Error()
}
func (e *LostError) Unwrap() error { return e.Err }

func lostError(err error) error {
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Reason != "" {
		return &LostError{Err: errors.New(ce.Reason)}
	}
	return &LostError{Err: err}
}
