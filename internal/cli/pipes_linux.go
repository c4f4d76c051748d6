package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipes asks for 1 MiB buffers on those of streams that are pipes;
// anything else is left as it is.
func growPipes(streams ...any) {
	for _, s := range streams {
		if f, ok := s.(*os.File); ok {
			_, _ = unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, 1<<20)
		}
	}
}
