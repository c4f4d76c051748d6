// Package atomicfile replaces private files (mode 0600: ssh configs,
// config files that hold a token) so that a reader, or a crash, sees the
// old file or the new one, never half of one.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces the file at path with data, atomically: a temporary
// file in the same directory is written, synced and renamed over it. The
// file gets mode 0600, whatever its mode was. A missing parent directory is
// created with mode 0700 (as ssh wants ~/.ssh). If path is a symlink, the
// file it points to is replaced and the link kept, so a config kept in a
// dotfiles repository stays there.
func WriteFile(path string, data []byte) error {
	target, err := resolve(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".chalk-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	// Make the rename itself durable; not every filesystem supports it.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// resolve follows path through symlinks, dangling ones included, to the
// file to write.
func resolve(path string) (string, error) {
	p := path
	for range 40 {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}
