package run

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/chalk-rl/chalk/internal/runtime"
)

// ParseMount reads a --mount value, source:target[:ro|:rw]. The source must
// exist; it is made absolute.
func ParseMount(v string) (runtime.Mount, error) {
	fix := "write --mount SOURCE:TARGET[:ro], e.g. --mount ./data:/data:ro"
	parts := strings.Split(v, ":")
	var m runtime.Mount
	switch {
	case len(parts) == 3 && (parts[2] == "ro" || parts[2] == "rw"):
		m.ReadOnly = parts[2] == "ro"
	case len(parts) == 2:
	default:
		return m, hint.Newf(fix, "--mount %q: want SOURCE:TARGET or SOURCE:TARGET:ro", v)
	}
	if parts[0] == "" || parts[1] == "" {
		return m, hint.Newf(fix, "--mount %q: the source and the target must both be given", v)
	}
	src, err := filepath.Abs(parts[0])
	if err != nil {
		return m, fmt.Errorf("--mount %q: %w", v, err)
	}
	if _, err := os.Stat(src); err != nil {
		return m, hint.Newf("create it, or fix the path", "--mount %q: the source %s does not exist", v, src)
	}
	if !path.IsAbs(parts[1]) {
		return m, hint.Newf("give the target as an absolute path in the sandbox, e.g. /data", "--mount %q: the target %q is not an absolute path", v, parts[1])
	}
	if t := path.Clean(parts[1]); t == "/" || t == "/out" || strings.HasPrefix(t, "/.chalk") {
		return m, hint.Newf("mount somewhere else, e.g. /data", "--mount %q: %s is Chalk's own and cannot be mounted over", v, t)
	}
	m.Source, m.Target = src, path.Clean(parts[1])
	return m, nil
}
