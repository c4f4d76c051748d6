package cli

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The context sent to the server's build is what docker's builder would
// receive: .dockerignore applies, but never to the Dockerfile or to
// itself; links stay links.
func TestTarContext(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"Dockerfile":     "FROM scratch\n",
		".dockerignore":  "*\n!keep.txt\n!app\n**/*.key\n",
		"keep.txt":       "kept",
		"drop.txt":       "dropped",
		"app/main.go":    "package main",
		"app/secret.key": "x",
		"cache/big.bin":  "dropped",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("keep.txt", filepath.Join(dir, "app", "link")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarContext(dir, &buf); err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "app/link" && (h.Typeflag != tar.TypeSymlink || h.Linkname != "keep.txt") {
			t.Errorf("app/link: type %c, target %q; want a link to keep.txt", h.Typeflag, h.Linkname)
		}
	}
	want := []string{".dockerignore", "Dockerfile", "app/", "app/link", "app/main.go", "keep.txt"}
	if !slices.Equal(names, want) {
		t.Fatalf("the context holds %q, want %q", names, want)
	}
}
