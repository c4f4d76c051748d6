// Package config is the client's settings for the Chalk API: where the
// server is, the token, and the pinned fingerprint of a self-signed
// server certificate. They come, field by field, from the environment
// (CHALK_API_URL, CHALK_API_TOKEN, CHALK_API_FINGERPRINT), else the
// config files that Files finds: the nearest .chalk/config.toml at or
// above --dir (default: the working directory), else the user's file
// ($XDG_CONFIG_HOME/chalk/config.toml when XDG_CONFIG_HOME is absolute,
// else ~/.config/chalk/config.toml).
//
// Files is the one place that finds chalk's config files; internal/plugin
// reads its [plugins] table from the same files. Only the [api] table is
// read here; other tables in the same file belong to other parts of chalk
// and are left alone.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/chalk-rl/chalk/internal/atomicfile"
	"github.com/chalk-rl/chalk/internal/hint"
)

// Environment variables.
const (
	EnvURL         = "CHALK_API_URL"
	EnvToken       = "CHALK_API_TOKEN"
	EnvFingerprint = "CHALK_API_FINGERPRINT"
)

// API is the [api] table.
type API struct {
	URL         string `toml:"url,omitempty"`
	Token       string `toml:"token,omitempty"`
	Fingerprint string `toml:"fingerprint,omitempty"`
}

// Settings are the effective settings and where each came from.
type Settings struct {
	API
	// Source names where each field came from: "env CHALK_API_URL", a
	// file's path, or "" when unset.
	Source map[string]string
}

var apiKeys = []string{"url", "token", "fingerprint"}

// Load resolves the settings for a command run with --dir dir (""
// means the working directory), from the files Files finds there.
func Load(dir string) (Settings, error) {
	s := Settings{Source: map[string]string{}}
	set := func(field *string, key, v, src string) {
		if *field == "" && v != "" {
			*field, s.Source[key] = v, src
		}
	}
	set(&s.URL, "url", os.Getenv(EnvURL), "env "+EnvURL)
	set(&s.Token, "token", os.Getenv(EnvToken), "env "+EnvToken)
	set(&s.Fingerprint, "fingerprint", os.Getenv(EnvFingerprint), "env "+EnvFingerprint)
	files, err := Files(dir)
	if err != nil {
		return s, err
	}
	for _, f := range files {
		a, err := ReadFile(f)
		if err != nil {
			return s, err
		}
		set(&s.URL, "url", a.URL, f)
		set(&s.Token, "token", a.Token, f)
		set(&s.Fingerprint, "fingerprint", a.Fingerprint, f)
	}
	return s, nil
}

// ReadFile reads the [api] table of the TOML file at path. A missing
// file is empty. Unknown top-level tables are ignored; unknown keys in
// [api] are errors, since they are most likely typos.
func ReadFile(path string) (API, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return API{}, nil
	}
	if err != nil {
		return API{}, hint.Wrap(fmt.Errorf("read %s: %w", path, err), "check the file's permissions")
	}
	var doc struct {
		API map[string]any `toml:"api"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return API{}, hint.Newf("fix the TOML syntax", "%s:%d:%d: %s", path, row, col, de.Error())
		}
		return API{}, hint.Wrap(fmt.Errorf("%s: %w", path, err), "fix the [api] table: its keys are url, token and fingerprint, all strings")
	}
	var a API
	keys := make([]string, 0, len(doc.API))
	for k := range doc.API {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := doc.API[k].(string)
		if !slices.Contains(apiKeys, k) {
			return API{}, hint.Newf("the [api] table's keys are url, token and fingerprint", "%s: unknown key %q in [api]", path, k)
		}
		if !ok {
			return API{}, hint.Newf(fmt.Sprintf(`write it as a string: %s = "..."`, k), "%s: [api] %s must be a string", path, k)
		}
		switch k {
		case "url":
			a.URL = v
		case "token":
			a.Token = v
		case "fingerprint":
			a.Fingerprint = v
		}
	}
	return a, nil
}

// WriteAPI sets the [api] table in the TOML file at path to a, keeping
// every other table of the file as it is. The file is written 0600 (it
// holds a token), atomically; a symlinked file is replaced at its target.
func WriteAPI(path string, a API) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var table bytes.Buffer
	table.WriteString("[api]\n")
	for _, kv := range [][2]string{{"url", a.URL}, {"token", a.Token}, {"fingerprint", a.Fingerprint}} {
		if kv[1] != "" {
			b, _ := toml.Marshal(map[string]string{kv[0]: kv[1]})
			table.Write(b)
		}
	}
	return atomicfile.WriteFile(path, []byte(replaceTable(string(old), "api", table.String())))
}

// replaceTable swaps the lines of table [name] in doc (from its header
// to the next table header) for repl, or appends repl.
func replaceTable(doc, name, repl string) string {
	lines := strings.SplitAfter(doc, "\n")
	var out strings.Builder
	in, done := false, false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			header := strings.TrimSpace(strings.SplitN(strings.Trim(t, "[]"), "#", 2)[0])
			if header == name || strings.HasPrefix(header, name+".") {
				in = true
				if !done {
					out.WriteString(repl)
					done = true
				}
				continue
			}
			in = false
		}
		if !in {
			out.WriteString(l)
		}
	}
	s := out.String()
	if !done {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		if s != "" {
			s += "\n"
		}
		s += repl
	}
	return s
}
