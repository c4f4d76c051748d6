package env

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chalk-rl/chalk/internal/hint"
	"github.com/stretchr/testify/require"
)

// hashOf loads dir and returns its hash.
func hashOf(t *testing.T, dir string) string {
	t.Helper()
	e, err := Load(dir)
	require.NoError(t, err)
	h, err := e.Hash()
	require.NoError(t, err)
	require.Len(t, h, 64)
	return h
}

func hashTree(t *testing.T, extra map[string]string) string {
	t.Helper()
	files := map[string]string{
		"Containerfile": "FROM scratch\nCOPY . /env\n",
		"chalk.toml":    minimalTOML,
		"src/main.py":   "print('hi')\n",
		"src/util.py":   "X = 1\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return writeTree(t, files)
}

func TestHashStable(t *testing.T) {
	a := hashTree(t, nil)
	b := hashTree(t, nil)
	ha := hashOf(t, a)
	require.Equal(t, ha, hashOf(t, a), "same directory, same hash")
	require.Equal(t, ha, hashOf(t, b), "same content elsewhere, same hash")

	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	require.NoError(t, os.Chtimes(filepath.Join(a, "src", "main.py"), old, old))
	require.NoError(t, os.Chtimes(filepath.Join(a, "src"), old, old))
	require.Equal(t, ha, hashOf(t, a), "modification times do not count")

	require.NoError(t, os.Chmod(filepath.Join(a, "src", "main.py"), 0o600))
	require.Equal(t, ha, hashOf(t, a), "permission bits other than execute do not count")
}

func TestHashThroughSymlinkedDirectory(t *testing.T) {
	dir := hashTree(t, nil)
	link := filepath.Join(t.TempDir(), "current")
	require.NoError(t, os.Symlink(dir, link))
	require.Equal(t, hashOf(t, dir), hashOf(t, link))
}

func TestHashChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
	}{
		{"content", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "main.py"), []byte("print('bye')\n"), 0o644))
		}},
		{"chalk.toml", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "chalk.toml"), []byte(minimalTOML+"# comment\n"), 0o644))
		}},
		{"Containerfile", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM debian\n"), 0o644))
		}},
		{"chmod +x", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "src", "main.py"), 0o755))
		}},
		{"new file", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "new.py"), nil, 0o644))
		}},
		{"new empty directory", func(t *testing.T, dir string) {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755))
		}},
		{"removed file", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "src", "util.py")))
		}},
		{"renamed file", func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, "src", "util.py"), filepath.Join(dir, "src", "util2.py")))
		}},
		{"moved across directories", func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, "src", "util.py"), filepath.Join(dir, "util.py")))
		}},
		{"file replaced by a symlink", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "src", "util.py")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("X = 1\n", p))
		}},
		{"new .dockerignore", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte("nothing\n"), 0o644))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := hashTree(t, nil)
			before := hashOf(t, dir)
			tt.change(t, dir)
			require.NotEqual(t, before, hashOf(t, dir))
		})
	}
}

func TestHashSymlinkTarget(t *testing.T) {
	dir := hashTree(t, nil)
	link := filepath.Join(dir, "current")
	require.NoError(t, os.Symlink("src/main.py", link))
	before := hashOf(t, dir)
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("src/util.py", link))
	require.NotEqual(t, before, hashOf(t, dir))

	// A link out of the directory is hashed by its target, not followed.
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("/nonexistent/elsewhere", link))
	hashOf(t, dir)
}

func TestHashDockerignore(t *testing.T) {
	ignore := "# build outputs\n*.log\ncache/\n/chalk.toml\nContainerfile\n.dockerignore\nkeep/\n!keep/this.txt\n"
	tests := []struct {
		name    string
		change  func(t *testing.T, dir string)
		changes bool
	}{
		{"ignored file added", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "run.log"), []byte("x"), 0o644))
		}, false},
		{"ignored nested file added", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "cache", "deep", "x.bin"), []byte("x"), 0o644))
		}, false},
		{"ignored file changed", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "cache", "a"), []byte("changed"), 0o644))
		}, false},
		{"ignored directory's file changed", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "keep", "other.txt"), []byte("changed"), 0o644))
		}, false},
		{"file brought back by ! changed", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "keep", "this.txt"), []byte("changed"), 0o644))
		}, true},
		{"included file changed", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "main.py"), []byte("changed"), 0o644))
		}, true},
		{"chalk.toml changed although ignored", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "chalk.toml"), []byte(minimalTOML+"\n"), 0o644))
		}, true},
		{"Containerfile changed although ignored", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM x\n"), 0o644))
		}, true},
		{".dockerignore changed although ignored", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte(ignore+"# more\n"), 0o644))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := hashTree(t, map[string]string{
				".dockerignore":   ignore,
				"cache/a":         "a",
				"cache/deep/x":    "x",
				"keep/this.txt":   "this",
				"keep/other.txt":  "other",
				"notes/build.log": "log",
			})
			before := hashOf(t, dir)
			tt.change(t, dir)
			if tt.changes {
				require.NotEqual(t, before, hashOf(t, dir))
			} else {
				require.Equal(t, before, hashOf(t, dir))
			}
		})
	}
}

func TestHashForcedContainerfileInIgnoredDirectory(t *testing.T) {
	dir := writeTree(t, map[string]string{
		".dockerignore":       "build\n",
		"build/Containerfile": "FROM scratch\n",
		"build/other":         "x",
		"chalk.toml":          "containerfile = \"build/Containerfile\"\n" + minimalTOML,
	})
	before := hashOf(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "build", "other"), []byte("y"), 0o644))
	require.Equal(t, before, hashOf(t, dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "build", "Containerfile"), []byte("FROM x\n"), 0o644))
	require.NotEqual(t, before, hashOf(t, dir))
}

func TestHashBadDockerignore(t *testing.T) {
	dir := hashTree(t, map[string]string{".dockerignore": "[\n"})
	e, err := Load(dir)
	require.NoError(t, err)
	_, err = e.Hash()
	require.ErrorContains(t, err, filepath.Join(dir, ".dockerignore"))
	require.Contains(t, hint.Of(err), "fix the pattern")
}

func TestHashUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file")
	}
	dir := hashTree(t, nil)
	require.NoError(t, os.Chmod(filepath.Join(dir, "src", "util.py"), 0))
	e, err := Load(dir)
	require.NoError(t, err)
	_, err = e.Hash()
	require.ErrorContains(t, err, "util.py")
	require.Contains(t, hint.Of(err), ".dockerignore")
}
