//go:build !linux

package hostclass

import "net"

// Off Linux chalk server refuses to start (see Supported): these only let
// the package build, so that one chalk binary serves Linux and macOS.

func peerPid(*net.UnixConn) (int, error) { return 0, errLinuxOnly }

func killTree(int) error { return errLinuxOnly }

func descends(int, int) bool { return false }

func hasEnv(int, string) bool { return false }
