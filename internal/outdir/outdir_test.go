package outdir

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tarEntry is what a test reads back from, or writes into, a tar stream.
type tarEntry struct {
	Name     string
	Type     byte
	Mode     int64
	Linkname string
	Body     []byte
}

func readTar(t *testing.T, b []byte) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, tarEntry{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, Linkname: h.Linkname, Body: body})
	}
}

// buildTar writes entries as a tar stream, as a hostile host-side or
// sandbox-side producer might.
func buildTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Linkname: e.Linkname, ModTime: time.Unix(1700000000, 0)}
		if e.Type == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		require.NoError(t, tw.WriteHeader(h), e.Name)
		if e.Type == tar.TypeReg {
			_, err := tw.Write(e.Body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// tree lists everything under dir (Lstat, never following links) as
// relative name -> mode.
func tree(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if p == dir {
			return nil
		}
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		r, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		out[filepath.ToSlash(r)] = fi.Mode()
		return nil
	})
	require.NoError(t, err)
	return out
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

func writeFile(t *testing.T, p string, body []byte, mode fs.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, body, mode))
	require.NoError(t, os.Chmod(p, mode)) // past the umask, and for setuid bits
}

// withUmask runs the test body under umask 022, so that the modes Unpack
// asks for are the modes the files get.
func withUmask(t *testing.T) {
	t.Helper()
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
}

// packWithin runs Pack, failing the test rather than hanging if Pack
// blocks (on a fifo, say).
func packWithin(t *testing.T, dir string, limit time.Duration) ([]byte, Summary, error) {
	t.Helper()
	type res struct {
		b   []byte
		sum Summary
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var buf bytes.Buffer
		sum, err := Pack(dir, &buf)
		ch <- res{buf.Bytes(), sum, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.sum, r.err
	case <-time.After(limit):
		t.Fatalf("Pack(%s) still running after %s", dir, limit)
		return nil, Summary{}, nil
	}
}

func TestPackKeepsOnlyRegularFilesAndDirs(t *testing.T) {
	withUmask(t)
	src := filepath.Join(t.TempDir(), "out")
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), []byte("outside secret"), 0o600)

	writeFile(t, filepath.Join(src, "top.txt"), []byte("top\n"), 0o644)
	writeFile(t, filepath.Join(src, "a", "b", "c", "deep.txt"), []byte("deep\n"), 0o600)
	writeFile(t, filepath.Join(src, "a", "sibling.bin"), []byte{0, 1, 2, 0xff, 0xfe}, 0o640)
	writeFile(t, filepath.Join(src, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o700)
	writeFile(t, filepath.Join(src, "suid"), []byte("setuid\n"), 0o4755)
	writeFile(t, filepath.Join(src, "empty"), nil, 0o644)
	require.NoError(t, os.MkdirAll(filepath.Join(src, "emptydir", "nested-empty"), 0o700))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(src, "passwd")))
	require.NoError(t, os.Symlink(outside, filepath.Join(src, "a", "outlink")))
	require.NoError(t, os.Symlink("top.txt", filepath.Join(src, "rel-link")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(src, "a", "fifo"), 0o666))
	require.NoError(t, os.Link(filepath.Join(src, "top.txt"), filepath.Join(src, "hardlink")))

	// A socket with a short path: a unix socket path is at most 107 bytes.
	sockDir, err := os.MkdirTemp("", "sk")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	require.NoError(t, os.Rename(filepath.Join(sockDir, "s"), filepath.Join(src, "sock")))

	b, sum, err := packWithin(t, src, 10*time.Second)
	require.NoError(t, err)

	got := map[string]tarEntry{}
	for _, e := range readTar(t, b) {
		require.NotContains(t, got, e.Name, "duplicate entry")
		got[e.Name] = e
	}

	wantFiles := map[string]struct {
		body []byte
		mode int64
	}{
		"top.txt":        {[]byte("top\n"), 0o644},
		"a/b/c/deep.txt": {[]byte("deep\n"), 0o644},
		"a/sibling.bin":  {[]byte{0, 1, 2, 0xff, 0xfe}, 0o644},
		"run.sh":         {[]byte("#!/bin/sh\necho hi\n"), 0o755},
		"suid":           {[]byte("setuid\n"), 0o755},
		"empty":          {nil, 0o644},
		"hardlink":       {[]byte("top\n"), 0o644}, // a second name for a regular file is a regular file
	}
	wantDirs := []string{"a/", "a/b/", "a/b/c/", "emptydir/", "emptydir/nested-empty/"}

	var names []string
	for n := range got {
		names = append(names, n)
	}
	var want []string
	for n := range wantFiles {
		want = append(want, n)
	}
	want = append(want, wantDirs...)
	require.ElementsMatch(t, want, names)

	for name, w := range wantFiles {
		e := got[name]
		require.Equal(t, byte(tar.TypeReg), e.Type, name)
		require.Equal(t, w.mode, e.Mode, name)
		if len(w.body) == 0 {
			require.Empty(t, e.Body, name)
		} else {
			require.Equal(t, w.body, e.Body, name)
		}
	}
	for _, name := range wantDirs {
		e := got[name]
		require.Equal(t, byte(tar.TypeDir), e.Type, name)
		require.Equal(t, int64(0o755), e.Mode, name)
	}
	for _, e := range got {
		require.Empty(t, e.Linkname, e.Name)
		require.False(t, strings.HasPrefix(e.Name, "/"), e.Name)
		require.NotContains(t, e.Name, "..", e.Name)
		require.NotContains(t, string(e.Body), "outside secret")
		require.NotContains(t, string(e.Body), "root:")
	}

	require.ElementsMatch(t, []string{
		"passwd (symlink)",
		"a/outlink (symlink)",
		"rel-link (symlink)",
		"a/fifo (fifo)",
		"sock (socket)",
	}, sum.Skipped)
	require.Equal(t, len(wantFiles), sum.Files)
	var total int64
	for _, w := range wantFiles {
		total += int64(len(w.body))
	}
	require.Equal(t, total, sum.Bytes)
}

func TestPackFifoNeverBlocks(t *testing.T) {
	// A directory of nothing but fifos, and one with a writer-less fifo
	// next to a regular file: Pack must neither open nor wait on them.
	src := t.TempDir()
	for _, n := range []string{"f1", "f2", "reward"} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(src, n), 0o600))
	}
	writeFile(t, filepath.Join(src, "ok"), []byte("ok"), 0o644)
	b, sum, err := packWithin(t, src, 10*time.Second)
	require.NoError(t, err)
	entries := readTar(t, b)
	require.Len(t, entries, 1)
	require.Equal(t, "ok", entries[0].Name)
	require.ElementsMatch(t, []string{"f1 (fifo)", "f2 (fifo)", "reward (fifo)"}, sum.Skipped)
}

func TestPackErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) string
	}{
		{"missing dir", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Pack(tc.setup(t), io.Discard)
			require.Error(t, err)
		})
	}
}

func TestPackRootSymlinkIsNotFollowed(t *testing.T) {
	target := t.TempDir()
	writeFile(t, filepath.Join(target, "secret"), []byte("x"), 0o600)
	link := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Symlink(target, link))
	b, sum, err := packWithin(t, link, 10*time.Second)
	require.NoError(t, err)
	require.Empty(t, readTar(t, b))
	require.Zero(t, sum.Files)
}

func TestPackSkippedListIsBounded(t *testing.T) {
	src := t.TempDir()
	for i := range 150 {
		require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(src, "l"+strconv.Itoa(i))))
	}
	_, sum, err := packWithin(t, src, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, sum.Skipped, 100)
}

func TestUnpackHostileStreams(t *testing.T) {
	reg := func(name string, body string) tarEntry {
		return tarEntry{Name: name, Type: tar.TypeReg, Mode: 0o644, Body: []byte(body)}
	}
	dir := func(name string) tarEntry { return tarEntry{Name: name, Type: tar.TypeDir, Mode: 0o755} }

	tests := []struct {
		name  string
		strip string
		// entries may use OUTSIDE, replaced by a directory next to dest
		// that must never be created or written.
		entries []tarEntry
		// setup prepares dest (which exists) before unpacking.
		setup       func(t *testing.T, dest, outside string)
		wantTree    map[string]fs.FileMode
		wantBodies  map[string]string
		wantSkipped []string
		// wantRefused names entries the OS refused: skipped with its
		// own error text, so only the name is checked.
		wantRefused []string
		wantFiles   int
	}{
		{
			name:        "absolute names",
			entries:     []tarEntry{reg("/etc/x", "evil"), reg("OUTSIDE/abs", "evil"), dir("/etc/d/"), reg("ok", "fine")},
			wantTree:    map[string]fs.FileMode{"ok": 0o644},
			wantBodies:  map[string]string{"ok": "fine"},
			wantSkipped: []string{"/etc/x (outside /out)", "OUTSIDE/abs (outside /out)", "/etc/d/ (outside /out)"},
			wantFiles:   1,
		},
		{
			name: "dot-dot escapes",
			entries: []tarEntry{
				reg("../x", "evil"),
				reg("a/../../x", "evil"),
				reg("./../x", "evil"),
				dir("../d/"),
				reg("..", "evil"),
				reg("a/../b", "fine"), // stays inside: cleaned to b
			},
			wantTree:    map[string]fs.FileMode{"b": 0o644},
			wantBodies:  map[string]string{"b": "fine"},
			wantSkipped: []string{"../x (outside /out)", "a/../../x (outside /out)", "./../x (outside /out)", "../d/ (outside /out)", ".. (outside /out)"},
			wantFiles:   1,
		},
		{
			name:  "strip prefix",
			strip: "out",
			entries: []tarEntry{
				dir("out/"),
				dir("out/sub/"),
				reg("out/sub/f", "inside"),
				reg("./out/g", "inside too"),
				reg("other/f", "not under out"),
				reg("outer", "not under out"),
				reg("outx/f", "not under out"),
				reg("out/../x", "escape"),
				reg("out/../../x", "escape"),
				reg("f", "no prefix"),
			},
			wantTree:   map[string]fs.FileMode{"sub": fs.ModeDir | 0o755, "sub/f": 0o644, "g": 0o644},
			wantBodies: map[string]string{"sub/f": "inside", "g": "inside too"},
			wantSkipped: []string{
				"other/f (outside /out)", "outer (outside /out)", "outx/f (outside /out)",
				"out/../x (outside /out)", "out/../../x (outside /out)", "f (outside /out)",
			},
			wantFiles: 2,
		},
		{
			name:        "strip prefix given with slashes",
			strip:       "/out/",
			entries:     []tarEntry{dir("out/"), reg("out/f", "x")},
			wantTree:    map[string]fs.FileMode{"f": 0o644},
			wantBodies:  map[string]string{"f": "x"},
			wantSkipped: nil,
			wantFiles:   1,
		},
		{
			name: "symlink entries",
			entries: []tarEntry{
				{Name: "passwd", Type: tar.TypeSymlink, Linkname: "/etc/passwd"},
				{Name: "rel", Type: tar.TypeSymlink, Linkname: "../../OUTSIDE"},
				{Name: "inner", Type: tar.TypeSymlink, Linkname: "ok"},
				reg("ok", "fine"),
			},
			wantTree:    map[string]fs.FileMode{"ok": 0o644},
			wantBodies:  map[string]string{"ok": "fine"},
			wantSkipped: []string{"passwd (symlink)", "rel (symlink)", "inner (symlink)"},
			wantFiles:   1,
		},
		{
			name: "hard link entries",
			entries: []tarEntry{
				reg("ok", "fine"),
				{Name: "shadow", Type: tar.TypeLink, Linkname: "/etc/shadow"},
				{Name: "again", Type: tar.TypeLink, Linkname: "ok"},
			},
			wantTree:    map[string]fs.FileMode{"ok": 0o644},
			wantBodies:  map[string]string{"ok": "fine"},
			wantSkipped: []string{"shadow (hard link)", "again (hard link)"},
			wantFiles:   1,
		},
		{
			name: "write through a symlink entry",
			entries: []tarEntry{
				{Name: "a", Type: tar.TypeSymlink, Linkname: "OUTSIDE"},
				reg("a/b", "through the link"),
				{Name: "c", Type: tar.TypeSymlink, Linkname: "OUTSIDE/file"},
				reg("c", "over the link"),
			},
			wantTree:    map[string]fs.FileMode{"a": fs.ModeDir | 0o755, "a/b": 0o644, "c": 0o644},
			wantBodies:  map[string]string{"a/b": "through the link", "c": "over the link"},
			wantSkipped: []string{"a (symlink)", "c (symlink)"},
			wantFiles:   2,
		},
		{
			name: "write through a symlink already in dest",
			setup: func(t *testing.T, dest, outside string) {
				require.NoError(t, os.Symlink(outside, filepath.Join(dest, "dirlink")))
				require.NoError(t, os.Symlink(filepath.Join(outside, "file"), filepath.Join(dest, "filelink")))
			},
			entries: []tarEntry{
				reg("dirlink/b", "through the link"),
				dir("dirlink/sub/"),
				reg("filelink", "over the link"),
				reg("ok", "fine"),
			},
			wantTree: map[string]fs.FileMode{
				"dirlink": fs.ModeSymlink | 0o777, "filelink": fs.ModeSymlink | 0o777, "ok": 0o644,
			},
			wantBodies:  map[string]string{"ok": "fine"},
			wantRefused: []string{"dirlink/b", "dirlink/sub", "filelink"},
			wantFiles:   1,
		},
		{
			name: "other entry types",
			entries: []tarEntry{
				{Name: "fifo", Type: tar.TypeFifo, Mode: 0o666},
				{Name: "null", Type: tar.TypeChar, Mode: 0o666},
				{Name: "sda", Type: tar.TypeBlock, Mode: 0o666},
				{Name: "cont", Type: tar.TypeCont, Mode: 0o666},
				reg("ok", "fine"),
			},
			wantTree:    map[string]fs.FileMode{"ok": 0o644},
			wantBodies:  map[string]string{"ok": "fine"},
			wantSkipped: []string{"fifo (fifo)", "null (device)", "sda (device)", "cont (tar entry type '7')"},
			wantFiles:   1,
		},
		{
			name: "modes are normalised",
			entries: []tarEntry{
				{Name: "suid", Type: tar.TypeReg, Mode: 0o4755, Body: []byte("s")},
				{Name: "sgid", Type: tar.TypeReg, Mode: 0o2711, Body: []byte("g")},
				{Name: "world", Type: tar.TypeReg, Mode: 0o666, Body: []byte("w")},
				{Name: "sticky", Type: tar.TypeReg, Mode: 0o1600, Body: []byte("t")},
				{Name: "none", Type: tar.TypeReg, Mode: 0, Body: []byte("n")},
				{Name: "d/", Type: tar.TypeDir, Mode: 0o7777},
				{Name: "d/private/", Type: tar.TypeDir, Mode: 0o700},
			},
			wantTree: map[string]fs.FileMode{
				"suid": 0o755, "sgid": 0o755, "world": 0o644, "sticky": 0o644, "none": 0o644,
				"d": fs.ModeDir | 0o755, "d/private": fs.ModeDir | 0o755,
			},
			wantFiles: 5,
		},
		{
			name: "file where a directory is",
			entries: []tarEntry{
				dir("d/"),
				reg("d", "clobber"),
				reg("after", "still read"),
			},
			wantTree:    map[string]fs.FileMode{"d": fs.ModeDir | 0o755, "after": 0o644},
			wantBodies:  map[string]string{"after": "still read"},
			wantRefused: []string{"d"},
			wantFiles:   1,
		},
		{
			name:        "empty and dot names",
			entries:     []tarEntry{dir("./"), reg("./x", "x")},
			wantTree:    map[string]fs.FileMode{"x": 0o644},
			wantBodies:  map[string]string{"x": "x"},
			wantSkipped: nil,
			wantFiles:   1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withUmask(t)
			base := t.TempDir()
			dest := filepath.Join(base, "dest")
			outside := filepath.Join(base, "evil-dir")
			require.NoError(t, os.MkdirAll(dest, 0o755))
			if tc.setup != nil {
				tc.setup(t, dest, outside)
			}
			entries := make([]tarEntry, len(tc.entries))
			for i, e := range tc.entries {
				e.Name = strings.ReplaceAll(e.Name, "OUTSIDE", outside)
				e.Linkname = strings.ReplaceAll(e.Linkname, "OUTSIDE", outside)
				entries[i] = e
			}
			// Names in the expected skipped list use OUTSIDE too.
			var wantSkipped []string
			for _, s := range tc.wantSkipped {
				wantSkipped = append(wantSkipped, strings.ReplaceAll(s, "OUTSIDE", outside))
			}

			sum, err := Unpack(bytes.NewReader(buildTar(t, entries)), dest, tc.strip)
			require.NoError(t, err)

			_, err = os.Lstat(outside)
			require.ErrorIs(t, err, fs.ErrNotExist, "something was created outside dest")
			// Nothing but dest appeared next to it.
			siblings, err := os.ReadDir(base)
			require.NoError(t, err)
			require.Len(t, siblings, 1)

			require.Equal(t, tc.wantTree, tree(t, dest))
			for name, body := range tc.wantBodies {
				b, err := os.ReadFile(filepath.Join(dest, name))
				require.NoError(t, err)
				require.Equal(t, body, string(b), name)
			}
			require.Equal(t, tc.wantFiles, sum.Files)
			if tc.wantRefused != nil {
				require.Len(t, sum.Skipped, len(tc.wantRefused), "%q", sum.Skipped)
				for i, name := range tc.wantRefused {
					require.True(t, strings.HasPrefix(sum.Skipped[i], name+" ("), "%q", sum.Skipped)
				}
				return
			}
			require.ElementsMatch(t, wantSkipped, sum.Skipped)
		})
	}
}

func TestUnpackNeverTouchesHostFiles(t *testing.T) {
	// The classic attack on an extractor: names aimed at real files.
	before, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	dest := filepath.Join(t.TempDir(), "d")
	entries := []tarEntry{
		{Name: "/etc/passwd", Type: tar.TypeReg, Mode: 0o644, Body: []byte("pwned")},
		{Name: "../../../../../../../../etc/passwd", Type: tar.TypeReg, Mode: 0o644, Body: []byte("pwned")},
		{Name: "etc", Type: tar.TypeSymlink, Linkname: "/etc"},
		{Name: "etc/passwd", Type: tar.TypeReg, Mode: 0o644, Body: []byte("inside")},
		{Name: "p", Type: tar.TypeLink, Linkname: "/etc/passwd"},
		{Name: "p", Type: tar.TypeReg, Mode: 0o644, Body: []byte("pwned")},
	}
	_, err = Unpack(bytes.NewReader(buildTar(t, entries)), dest, "")
	require.NoError(t, err)
	after, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	require.Equal(t, before, after)
	fi, err := os.Lstat(filepath.Join(dest, "etc"))
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	b, err := os.ReadFile(filepath.Join(dest, "etc", "passwd"))
	require.NoError(t, err)
	require.Equal(t, "inside", string(b))
}

func TestUnpackBadStreams(t *testing.T) {
	good := buildTar(t, []tarEntry{{Name: "big", Type: tar.TypeReg, Mode: 0o644, Body: bytes.Repeat([]byte("x"), 4096)}})
	tests := []struct {
		name    string
		stream  []byte
		wantErr bool
	}{
		{"empty stream", nil, false},
		{"end of archive only", buildTar(t, nil), false},
		{"garbage", bytes.Repeat([]byte("not a tar "), 100), true},
		{"truncated body", good[:512+100], true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "d")
			_, err := Unpack(bytes.NewReader(tc.stream), dest, "")
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			fi, err := os.Stat(dest)
			require.NoError(t, err)
			require.True(t, fi.IsDir())
		})
	}
}

func TestUnpackSkippedListIsBounded(t *testing.T) {
	var entries []tarEntry
	for i := range 250 {
		entries = append(entries, tarEntry{Name: "l" + strconv.Itoa(i), Type: tar.TypeSymlink, Linkname: "/"})
	}
	sum, err := Unpack(bytes.NewReader(buildTar(t, entries)), t.TempDir(), "")
	require.NoError(t, err)
	require.Len(t, sum.Skipped, 100)
}

func TestUnpackCreatesMissingParents(t *testing.T) {
	withUmask(t)
	dest := filepath.Join(t.TempDir(), "runs", "abc", "nested", "out")
	stream := buildTar(t, []tarEntry{
		{Name: "out/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "out/x/y", Type: tar.TypeReg, Mode: 0o600, Body: []byte("y")},
	})
	sum, err := Unpack(bytes.NewReader(stream), dest, "out")
	require.NoError(t, err)
	require.Equal(t, 1, sum.Files)
	require.Equal(t, int64(1), sum.Bytes)
	require.Empty(t, sum.Skipped)
	require.Equal(t, map[string]fs.FileMode{"x": fs.ModeDir | 0o755, "x/y": 0o644}, tree(t, dest))
}

func TestUnpackOverwritesExistingFile(t *testing.T) {
	dest := t.TempDir()
	writeFile(t, filepath.Join(dest, "f"), []byte("a much longer old content"), 0o644)
	stream := buildTar(t, []tarEntry{{Name: "f", Type: tar.TypeReg, Mode: 0o644, Body: []byte("new")}})
	_, err := Unpack(bytes.NewReader(stream), dest, "")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dest, "f"))
	require.NoError(t, err)
	require.Equal(t, "new", string(b))
}

func TestPackUnpackRoundTrip(t *testing.T) {
	withUmask(t)
	allBytes := make([]byte, 256*4)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	files := map[string]struct {
		body []byte
		mode fs.FileMode
	}{
		"reward":                 {[]byte("0.75\n"), 0o644},
		"empty":                  {nil, 0o644},
		"bin/all-bytes":          {allBytes, 0o600},
		"bin/random":             {randomBytes(t, 100_000), 0o644},
		"big/five-mib":           {randomBytes(t, 5<<20), 0o644},
		"tool":                   {[]byte("#!/bin/sh\nexit 0\n"), 0o755},
		"deep/a/b/c/d/e/f.json":  {[]byte(`{"k": "välue ✓"}`), 0o644},
		"name with spaces.txt":   {[]byte("spaces\r\n"), 0o644},
		"ünïcode/ファイル":           {[]byte("utf-8 names"), 0o644},
		strings.Repeat("n", 200): {[]byte("a long name needs a PAX or GNU header"), 0o644},
		"nul-heavy":              {make([]byte, 70_000), 0o644},
	}
	src := filepath.Join(t.TempDir(), "out")
	var total int64
	for name, f := range files {
		writeFile(t, filepath.Join(src, filepath.FromSlash(name)), f.body, f.mode)
		total += int64(len(f.body))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(src, "empty-dir", "inner"), 0o755))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(src, "skipme")))

	var buf bytes.Buffer
	psum, err := Pack(src, &buf)
	require.NoError(t, err)
	require.Equal(t, len(files), psum.Files)
	require.Equal(t, total, psum.Bytes)
	require.Equal(t, []string{"skipme (symlink)"}, psum.Skipped)

	for _, strip := range []string{"", "out"} {
		t.Run("strip="+strip, func(t *testing.T) {
			stream := buf.Bytes()
			if strip != "" {
				stream = prefixTar(t, stream, strip+"/")
			}
			dest := filepath.Join(t.TempDir(), "host", "out")
			usum, err := Unpack(bytes.NewReader(stream), dest, strip)
			require.NoError(t, err)
			require.Equal(t, psum.Files, usum.Files)
			require.Equal(t, psum.Bytes, usum.Bytes)
			require.Empty(t, usum.Skipped)

			got := tree(t, dest)
			wantTree := map[string]fs.FileMode{
				"empty-dir": fs.ModeDir | 0o755, "empty-dir/inner": fs.ModeDir | 0o755,
			}
			for name, f := range files {
				mode := fs.FileMode(0o644)
				if f.mode&0o111 != 0 {
					mode = 0o755
				}
				wantTree[name] = mode
				for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
					wantTree[filepath.ToSlash(d)] = fs.ModeDir | 0o755
				}
			}
			require.Equal(t, wantTree, got)
			for name, f := range files {
				b, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(name)))
				require.NoError(t, err)
				require.True(t, bytes.Equal(f.body, b), "%s differs after the round trip (%d bytes, want %d)", name, len(b), len(f.body))
			}
		})
	}
}

// prefixTar renames every entry of stream under prefix, the way docker cp
// names entries after the copied directory.
func prefixTar(t *testing.T, stream []byte, prefix string) []byte {
	t.Helper()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: prefix, Typeflag: tar.TypeDir, Mode: 0o755}))
	tr := tar.NewReader(bytes.NewReader(stream))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		h.Name = prefix + h.Name
		h.PAXRecords, h.Format = nil, tar.FormatUnknown
		require.NoError(t, tw.WriteHeader(h))
		_, err = io.Copy(tw, tr)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return out.Bytes()
}

func TestPackOrderIsDeterministic(t *testing.T) {
	src := t.TempDir()
	for _, n := range []string{"z", "a", "m/b", "m/a", "b"} {
		writeFile(t, filepath.Join(src, n), []byte(n), 0o644)
	}
	b, _, err := packWithin(t, src, 10*time.Second)
	require.NoError(t, err)
	var names []string
	for _, e := range readTar(t, b) {
		names = append(names, e.Name)
	}
	require.True(t, sort.StringsAreSorted(names), "%v", names)
	require.Equal(t, []string{"a", "b", "m/", "m/a", "m/b", "z"}, names)
}
