package session

import (
	"fmt"
	"strconv"
	"strings"
)

// Connector is a program inside the container that joins the session's
// stream to a TCP port on the container's loopback.
type Connector string

// The connectors, in the order the server looks for them.
const (
	Socat Connector = "socat"
	NC    Connector = "nc"
	// NCShutdown is an nc that can half-close (-N: OpenBSD's netcat).
	NCShutdown Connector = "nc-N"
	Bash       Connector = "bash"
)

// Order is the order of preference.
var Order = []Connector{Socat, NC, Bash}

// ErrNoConnectorText is what the person sees when a container has none.
const ErrNoConnectorText = "chalk session proxy: no socat, nc, or bash in the container"

// NoConnectorHint is its fix.
const NoConnectorHint = "add socat to the image (e.g. 'apt-get install socat' in its Dockerfile); nc or bash also work"

// ProbeScript prints the best connector the container has, or exits 3.
const ProbeScript = `for c in socat nc bash; do
  if command -v "$c" >/dev/null 2>&1; then
    if [ "$c" = nc ] && nc -h 2>&1 | grep -q -- '-N'; then echo nc-N; else echo "$c"; fi
    exit 0
  fi
done
exit 3`

// ParseProbe reads ProbeScript's answer.
func ParseProbe(out string) (Connector, bool) {
	switch c := Connector(strings.TrimSpace(out)); c {
	case Socat, NC, NCShutdown, Bash:
		return c, true
	}
	return "", false
}

// Command is the connector's command line for port. Each ends when the
// port's side closes and passes an EOF on its input on to the port
// where the program can (socat, OpenBSD nc).
func (c Connector) Command(port int) []string {
	p := strconv.Itoa(port)
	switch c {
	case Socat:
		// -d -d makes socat report on stderr when the port's side is at
		// EOF, which the server acts on (socat itself would wait for
		// its input to end as well). -t: after one direction ends, the
		// other may stay idle this long; the server kills socat when
		// the client goes, so it can be long. -b: 128 KiB transfers
		// instead of 8 KiB, for bulk throughput.
		return []string{"socat", "-d", "-d", "-t", "86400", "-b", "131072", "STDIO", "TCP:127.0.0.1:" + p + ",nodelay"}
	case NCShutdown:
		return []string{"nc", "-N", "127.0.0.1", p}
	case NC:
		return []string{"nc", "127.0.0.1", p}
	case Bash:
		// bash opens the connection itself; two cats move the bytes.
		// The writer runs in the background, where bash would give it
		// /dev/null for stdin: it reads a copy of stdin (fd 4) instead.
		// When the port's side closes, the writer is killed so bash
		// ends. bash cannot half-close a /dev/tcp socket.
		return []string{"bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/` + p + ` || exit 1
exec 4<&0
cat <&4 >&3 &
cat <&3
kill $! 2>/dev/null
exit 0`}
	}
	panic(fmt.Sprintf("unknown connector %q", c))
}

// DialsSockets reports whether the connector can carry a session
// through a unix socket (see SocketCommand).
func (c Connector) DialsSockets() bool { return c == Socat }

// SocketCommand is the connector's command line for port when the
// session's bytes move through the unix socket at path rather than
// through the connector's stdio, for a connector that DialsSockets.
// socat dials the socket first, so a socket out of its reach fails
// before the port is touched; a port with nothing listening then ends it
// with "Connection refused" on stderr. When the
// port's side ends, socat half-closes the socket, which the server reads
// as the end of the session's output. -t: after one direction ends, the
// other may stay idle this long (the server ends socat when the session
// ends). -b: 512 KiB transfers.
func (c Connector) SocketCommand(port int, path string) []string {
	if !c.DialsSockets() {
		panic(fmt.Sprintf("connector %q cannot dial a unix socket", c))
	}
	return []string{"socat", "-t", "86400", "-b", "524288",
		"UNIX-CONNECT:" + path + ",sndbuf=1048576,rcvbuf=1048576", "TCP:127.0.0.1:" + strconv.Itoa(port) + ",nodelay"}
}

// VersionProbe is a harmless command that exists exactly when c does,
// for containers without a shell to run ProbeScript.
func (c Connector) VersionProbe() []string {
	switch c {
	case Socat:
		return []string{"socat", "-V"}
	case NC, NCShutdown:
		return []string{"nc", "-h"}
	default:
		return []string{"bash", "-c", ":"}
	}
}

// PortEOF reports whether a line the connector wrote to stderr says
// the port's side of the connection is at EOF (socat -d -d's notice for
// its second address).
func PortEOF(c Connector, line string) bool {
	return c == Socat && strings.Contains(line, "socket 2 (fd") && strings.HasSuffix(strings.TrimSpace(line), "is at EOF")
}

// Refused reports whether a connector's complaint means nothing listens
// on the port.
func Refused(stderr string) bool {
	return strings.Contains(stderr, "Connection refused")
}

// Notice reports whether a connector's stderr line is its own chatter
// (socat's notices) rather than a complaint to pass on.
func Notice(c Connector, line string) bool {
	return c == Socat && strings.Contains(line, "] N ")
}
