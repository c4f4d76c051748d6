// Package outdir moves a run's /out from the sandbox to the host. Only
// regular files and directories cross: the student may plant symlinks,
// fifos or device nodes in /out, and none of them is followed, read or
// recreated. Nothing is ever written outside the destination directory.
package outdir

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Summary says what crossed and what was left out.
type Summary struct {
	Files   int
	Bytes   int64
	Skipped []string // paths, relative, with the reason
}

func (s *Summary) skip(name, why string) {
	const max = 100
	if len(s.Skipped) < max {
		s.Skipped = append(s.Skipped, name+" ("+why+")")
	}
}

// Pack writes the regular files and directories under dir to w as a tar
// stream, with names relative to dir. It never follows a symlink.
func Pack(dir string, w io.Writer) (Summary, error) {
	var sum Summary
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			sum.skip(rel(dir, p), "unreadable")
			return nil
		}
		if p == dir {
			return nil
		}
		name := rel(dir, p)
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755})
		case d.Type().IsRegular():
			return packFile(tw, p, name, &sum)
		default:
			sum.skip(name, kind(d.Type()))
			return nil
		}
	})
	if err != nil {
		return sum, err
	}
	return sum, tw.Close()
}

func packFile(tw *tar.Writer, p, name string, sum *Summary) error {
	// O_NOFOLLOW and O_NONBLOCK: if the entry was swapped for a symlink or
	// a fifo since the walk saw it, the open fails or the fstat shows it.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		sum.skip(name, "unreadable")
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		sum.skip(name, "not a regular file")
		return nil
	}
	mode := int64(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(f, fi.Size()))
	if err != nil {
		return err
	}
	if n < fi.Size() { // shrank while we read: pad, the header is written
		if _, err := io.CopyN(tw, zeros{}, fi.Size()-n); err != nil {
			return err
		}
	}
	sum.Files++
	sum.Bytes += n
	return nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func rel(dir, p string) string {
	r, err := filepath.Rel(dir, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "not a regular file"
}

// Unpack extracts the regular files and directories of the tar stream r
// into dest, which it creates. strip is a leading directory to remove from
// every name (docker cp names entries after the copied directory, "out/").
// Entries of any other type, and names that would land outside dest, are
// skipped and listed.
func Unpack(r io.Reader, dest, strip string) (Summary, error) {
	var sum Summary
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return sum, err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return sum, err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return sum, nil
		}
		if err != nil {
			return sum, fmt.Errorf("read /out archive: %w", err)
		}
		name, ok := clean(h.Name, strip)
		if !ok {
			if name != "" {
				sum.skip(h.Name, "outside /out")
			}
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				sum.skip(name, err.Error())
			}
		case tar.TypeReg:
			if err := unpackFile(root, name, h, tr, &sum); err != nil {
				return sum, err
			}
		default:
			sum.skip(name, typeName(h.Typeflag))
		}
	}
}

func unpackFile(root *os.Root, name string, h *tar.Header, r io.Reader, sum *Summary) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			sum.skip(name, err.Error())
			return nil
		}
	}
	mode := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, mode)
	if err != nil {
		sum.skip(name, err.Error())
		return nil
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	sum.Files++
	sum.Bytes += n
	return nil
}

// clean makes a tar name relative and safe. It reports false for the
// stripped directory itself (name "") and for names that leave dest.
func clean(name, strip string) (string, bool) {
	name = strings.TrimPrefix(name, "./")
	if strip != "" {
		s := strings.Trim(strip, "/")
		if name == s || name == s+"/" {
			return "", false
		}
		if !strings.HasPrefix(name, s+"/") {
			return name, false
		}
		name = strings.TrimPrefix(name, s+"/")
	}
	if path.IsAbs(name) {
		return name, false
	}
	c := path.Clean(name)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return name, false
	}
	return c, true
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("tar entry type %q", t)
}
