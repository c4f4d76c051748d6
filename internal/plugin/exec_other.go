//go:build !unix

package plugin

import "os/exec"

// ownGroup leaves the plugin in Chalk's process group: a timeout kills the
// plugin itself.
func ownGroup(cmd *exec.Cmd) {}
