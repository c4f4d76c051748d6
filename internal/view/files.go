package view

import (
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"unicode/utf8"
)

// maxListed bounds how many files of out/ a page lists.
const maxListed = 5000

// outFile is one entry of a run's out/.
type outFile struct {
	Path string // slash-separated, relative to out/
	Size int64
	Note string // why it is not served, for what is not a regular file
	Text bool   // it reads as text, so it can be shown in the browser
}

// URL is the file's address below the run's out/ route.
func (f outFile) URL() string { return escapePath(f.Path) }

// listOut lists the files below the run's out/, which root opens.
func listOut(root *os.Root) ([]outFile, bool, error) {
	var files []outFile
	more := false
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			files = append(files, outFile{Path: p, Note: "unreadable: " + err.Error()})
			return nil
		}
		if p == "." || d.IsDir() {
			return nil
		}
		if len(files) >= maxListed {
			more = true
			return fs.SkipAll
		}
		f := outFile{Path: p}
		switch t := d.Type(); {
		case t.IsRegular():
			if info, err := d.Info(); err == nil {
				f.Size = info.Size()
			}
			f.Text = isText(root, p)
		case t&fs.ModeSymlink != 0:
			f.Note = "symbolic link, not served"
		default:
			f.Note = "not a regular file, not served"
		}
		files = append(files, f)
		return nil
	})
	return files, more, err
}

// isText reports whether the start of the file reads as text.
func isText(root *os.Root, p string) bool {
	f, err := root.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 8<<10)
	n, _ := io.ReadFull(f, buf)
	full := n == len(buf)
	buf = buf[:n]
	// A full sample may end inside a character.
	for i := 0; full && i < utf8.UTFMax-1 && len(buf) > 0 && !utf8.Valid(buf); i++ {
		buf = buf[:len(buf)-1]
	}
	return utf8.Valid(buf) && !strings.ContainsRune(string(buf), 0)
}

// serveFile sends the file p below root as a download, or, with inline
// set and when it reads as text, as plain text. Nothing a run left is
// ever served as a type a browser would render or run.
func serveFile(w http.ResponseWriter, r *http.Request, root *os.Root, p string, inline bool) {
	if !fs.ValidPath(p) || p == "." {
		http.NotFound(w, r)
		return
	}
	f, err := root.Open(p)
	if err != nil {
		notFound(w, r, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	name := path.Base(p)
	if inline && isText(root, p) {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": name}))
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	}
	http.ServeContent(w, r, "", st.ModTime(), f)
}

func notFound(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		http.NotFound(w, r)
		return
	}
	// os.Root refuses paths that lead out of it: the same answer.
	http.Error(w, "404 page not found", http.StatusNotFound)
}

// escapePath escapes each element of a slash-separated path for a URL.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
