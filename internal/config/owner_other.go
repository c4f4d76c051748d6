//go:build !unix

package config

import "io/fs"

func ownedByOther(fs.FileInfo) bool { return false }
