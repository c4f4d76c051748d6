// Package e2e holds the end-to-end tests of the Chalk API: a real server
// (in the test process), the real chalk binary, real dockerd, and real
// clients (OpenSSH's ssh and scp, curl, socat) talking through sessions.
package e2e
