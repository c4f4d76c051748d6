package run

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// processStart reads pid's start time, in clock ticks after boot, from
// field 22 of /proc/PID/stat.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(b)
}

// parseStat reads the start time out of a /proc/PID/stat line. The
// second field, the command name in parentheses, may itself hold spaces
// and parentheses, so the fields are counted from the last ')'.
func parseStat(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc stat %q: too few fields", b)
	}
	return strconv.ParseUint(string(f[19]), 10, 64)
}
