//go:build !linux

package run

import "errors"

// processStart is unknown without /proc: owner labels then carry no start
// time, and a running pid always counts as the owner.
func processStart(int) (uint64, error) {
	return 0, errors.New("no /proc on this system")
}
