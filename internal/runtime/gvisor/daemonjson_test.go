package gvisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDaemonJSON(t *testing.T) {
	tests := []struct {
		name      string
		existing  string // inline input
		fixture   string // or a testdata file
		runsc     string
		golden    string // golden file with the exact output
		keep      []string
		runtimes  []string // runtimes the output must have
		wantErr   error
		wantLine  int
		errSubstr string
	}{
		{name: "nil", runsc: "/usr/local/bin/runsc", golden: "daemon-empty.json", runtimes: []string{"runsc"}},
		{name: "whitespace", existing: " \n\t", runsc: "/usr/local/bin/runsc", golden: "daemon-empty.json", runtimes: []string{"runsc"}},
		{name: "null", existing: "null", runsc: "/usr/local/bin/runsc", golden: "daemon-empty.json", runtimes: []string{"runsc"}},
		{name: "empty object", existing: "{}", runsc: "/usr/local/bin/runsc", golden: "daemon-empty.json", runtimes: []string{"runsc"}},
		{name: "null runtimes", existing: `{"runtimes": null}`, runsc: "/usr/local/bin/runsc", golden: "daemon-empty.json", runtimes: []string{"runsc"}},
		{name: "no runtimes key", fixture: "no-runtimes.json", runsc: "/usr/bin/runsc", keep: []string{"log-driver", "log-opts"}, runtimes: []string{"runsc"}},
		{name: "other keys and runtime", fixture: "other-runtime.json", runsc: "/usr/bin/runsc", golden: "daemon-other-runtime.json",
			keep: []string{"log-driver", "default-runtime", "max-concurrent-downloads", "features"}, runtimes: []string{"nvidia", "runsc"}},
		{name: "runsc replaced", fixture: "runsc-missing-args.json", runsc: "/usr/local/bin/runsc", keep: []string{"log-driver"}, runtimes: []string{"nvidia", "runsc"}},
		{name: "complete runsc gets the canonical args", fixture: "runsc-complete.json", runsc: "/usr/bin/runsc", keep: []string{"log-driver"}, runtimes: []string{"runsc"}},
		{name: "invalid", fixture: "invalid.json", wantLine: 6, errSubstr: "line 6, column 5"},
		{name: "unterminated", existing: "{\n  \"debug\": true\n", wantLine: 2, errSubstr: "line 2, column 16: unexpected end of JSON input"},
		{name: "array", fixture: "not-object.json", wantErr: ErrNotObject, errSubstr: "the file is an array"},
		{name: "string", existing: `"runsc"`, wantErr: ErrNotObject, errSubstr: "the file is a string"},
		{name: "runtimes array", fixture: "runtimes-not-object.json", wantErr: ErrNotObject, errSubstr: "runtimes is an array"},
		{name: "runtimes number", existing: `{"runtimes": 1}`, wantErr: ErrNotObject, errSubstr: "runtimes is a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := []byte(tt.existing)
			if tt.fixture != "" {
				var err error
				existing, err = os.ReadFile(filepath.Join("testdata", tt.fixture))
				require.NoError(t, err)
			}
			got, err := DaemonJSON(existing, tt.runsc)
			if tt.errSubstr != "" {
				require.Error(t, err)
				require.Nil(t, got)
				require.Contains(t, err.Error(), tt.errSubstr)
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
				}
				if tt.wantLine != 0 {
					var perr *ParseError
					require.True(t, errors.As(err, &perr))
					require.Equal(t, tt.wantLine, perr.Line)
				}
				return
			}
			require.NoError(t, err)
			if tt.golden != "" {
				golden(t, tt.golden, string(got))
			}

			var out, in map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(got, &out))
			if len(bytes.TrimSpace(existing)) > 0 {
				require.NoError(t, json.Unmarshal(existing, &in))
			}
			for _, k := range tt.keep {
				require.JSONEq(t, string(in[k]), string(out[k]), "key %s", k)
			}
			var runtimes map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(out["runtimes"], &runtimes))
			var names []string
			for n := range runtimes {
				names = append(names, n)
			}
			require.ElementsMatch(t, tt.runtimes, names)
			if r, ok := in["runtimes"]; ok && string(r) != "null" {
				var before map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(r, &before))
				for n, v := range before {
					if n != "runsc" {
						require.JSONEq(t, string(v), string(runtimes[n]), "runtime %s", n)
					}
				}
			}
			var entry struct {
				Path        string   `json:"path"`
				RuntimeArgs []string `json:"runtimeArgs"`
			}
			require.NoError(t, json.Unmarshal(runtimes["runsc"], &entry))
			require.Equal(t, tt.runsc, entry.Path)
			require.Equal(t, RuntimeArgs, entry.RuntimeArgs)
			require.Equal(t, byte('\n'), got[len(got)-1])
		})
	}
}

// TestDaemonJSONKeepsValuesVerbatim checks that numbers too large for a
// float and characters encoding/json would escape come through unchanged.
func TestDaemonJSONKeepsValuesVerbatim(t *testing.T) {
	in := `{"big": 123456789012345678901234567890, "tag": "{{.Name}} & <x>", "exp": 1e3}`
	got, err := DaemonJSON([]byte(in), "/usr/bin/runsc")
	require.NoError(t, err)
	require.Contains(t, string(got), `"big": 123456789012345678901234567890,`)
	require.Contains(t, string(got), `"tag": "{{.Name}} & <x>"`)
	require.Contains(t, string(got), `"exp": 1e3,`)
}
