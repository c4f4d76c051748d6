package env

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/chalk-rl/chalk/internal/hint"
)

// IgnoreFile is the name of the file listing what the build context leaves
// out.
const IgnoreFile = ".dockerignore"

// hashVersion changes whenever the encoding below does, so that hashes of
// different encodings never meet.
const hashVersion = "chalk env hash v1\n"

// Hash returns the hex SHA-256 of the build context as the image build
// sees it: every file, directory and symbolic link under Dir that
// .dockerignore does not exclude, plus chalk.toml, .dockerignore and the
// Containerfile whatever .dockerignore says. Each entry contributes its
// path relative to Dir, its type, whether it is executable, and its
// content (for a symbolic link, its target). Modification times, owners
// and other permission bits do not count.
func (e *Env) Hash() (string, error) {
	pm, err := ReadIgnore(e.Dir)
	if err != nil {
		return "", err
	}

	// Walk the directory itself even when Dir is a symbolic link to it.
	root, err := filepath.EvalSymlinks(e.Dir)
	if err != nil {
		return "", hint.Wrap(fmt.Errorf("hashing %s: %w", e.Dir, err), "check that the environment directory exists")
	}

	entries := map[string]fs.FileInfo{}
	err = WalkContext(root, pm, nil, func(_, rel string, d fs.DirEntry) error {
		fi, err := d.Info()
		if err != nil {
			return err
		}
		entries[rel] = fi
		return nil
	})
	if err != nil {
		return "", hint.Wrap(fmt.Errorf("hashing %s: %w", e.Dir, err),
			"make every file in the environment directory readable, or list the unreadable ones in "+IgnoreFile)
	}

	// The build always receives these, whatever .dockerignore says.
	for _, p := range []string{e.ConfigPath, filepath.Join(e.Dir, IgnoreFile), e.Containerfile} {
		rel, err := filepath.Rel(e.Dir, p)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			continue // not in the build context
		}
		if _, ok := entries[rel]; ok {
			continue
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", hint.Wrap(err, "check that "+p+" is readable")
		}
		entries[rel] = fi
	}

	names := make([]string, 0, len(entries))
	for rel := range entries {
		names = append(names, rel)
	}
	sort.Strings(names)

	h := sha256.New()
	io.WriteString(h, hashVersion)
	for _, rel := range names {
		if err := hashEntry(h, root, rel, entries[rel]); err != nil {
			return "", hint.Wrap(fmt.Errorf("hashing %s: %w", e.Dir, err),
				"make every file in the environment directory readable, or list the unreadable ones in "+IgnoreFile)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashEntry writes one entry to h. Every field is either of fixed size or
// preceded by its length, so that two different contexts never write the
// same bytes.
func hashEntry(h io.Writer, dir, rel string, fi fs.FileInfo) error {
	mode := fi.Mode()
	var kind, payload string
	switch {
	case mode.IsRegular():
		kind = "file"
		if mode.Perm()&0o111 != 0 {
			kind = "exec"
		}
		sum, err := fileSum(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		payload = sum
	case mode.IsDir():
		kind = "dir"
	case mode&fs.ModeSymlink != 0:
		kind = "link"
		target, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		payload = filepath.ToSlash(target)
	default:
		// Pipes, sockets and devices: their type is all that counts.
		kind = "other:" + mode.Type().String()
	}
	_, err := fmt.Fprintf(h, "%d:%s %d:%s %d:%s\n", len(kind), kind, len(rel), rel, len(payload), payload)
	return err
}

// fileSum returns the hex SHA-256 of the content of the file at p.
func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
