//go:build unix

package config

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByOther reports whether fi belongs to a user other than the one
// running chalk and root.
func ownedByOther(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return st.Uid != 0 && int(st.Uid) != os.Geteuid()
}
