//go:build !linux

package hostclass

import (
	"errors"
	"net"
)

// errLinuxOnly: the host compute class runs the server's containers on
// the Linux machine it runs on.
var errLinuxOnly = errors.New("the host compute class needs Linux")

func peerPid(*net.UnixConn) (int, error) { return 0, errLinuxOnly }

func killTree(int) error { return errLinuxOnly }

func descends(int, int) bool { return false }

func hasEnv(int, string) bool { return false }
