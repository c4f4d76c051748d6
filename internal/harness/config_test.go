package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStudentUID(t *testing.T) {
	tests := []struct {
		uid, want int
	}{
		{0, StudentUID},
		{-1, StudentUID},
		{StudentUID, StudentUID},
		{1234, 1234},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, (&Config{UID: tc.uid}).studentUID(), "UID %d", tc.uid)
	}
}

func TestSelfIsTheRunningBinary(t *testing.T) {
	want, err := os.Executable()
	require.NoError(t, err)
	got, err := Self()
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestReadConfig(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr string
		check   func(t *testing.T, c *Config)
	}{
		{
			name: "full",
			json: `{"run_id":"r1","uid":1234,"env":{"K":"V"},
				"student":{"command":["sh","-c","x"],"workdir":"/w","timeout":"1m30s","env":{"A":"B"}},
				"grader":{"command":["g"],"timeout":"10s"}}`,
			check: func(t *testing.T, c *Config) {
				require.Equal(t, "r1", c.RunID)
				require.Equal(t, 1234, c.studentUID())
				require.Equal(t, map[string]string{"K": "V"}, c.Env)
				require.Equal(t, []string{"sh", "-c", "x"}, c.Student.Command)
				require.Equal(t, "/w", c.Student.Workdir)
				require.Equal(t, Duration(90*time.Second), c.Student.Timeout)
				require.Equal(t, map[string]string{"A": "B"}, c.Student.Env)
				require.NotNil(t, c.Grader)
				require.Equal(t, Duration(10*time.Second), c.Grader.Timeout)
			},
		},
		{
			name: "defaults",
			json: `{"student":{"command":["x"]}}`,
			check: func(t *testing.T, c *Config) {
				require.Equal(t, StudentUID, c.studentUID(), "the student runs as StudentUID")
				require.Nil(t, c.Grader)
				require.Zero(t, c.Student.Timeout)
			},
		},
		{name: "empty command", json: `{"student":{"command":[]}}`, wantErr: "student.command is empty"},
		{name: "no student", json: `{}`, wantErr: "student.command is empty"},
		{name: "bad duration", json: `{"student":{"command":["x"],"timeout":"soon"}}`, wantErr: "parse run config"},
		{name: "numeric duration", json: `{"student":{"command":["x"],"timeout":30}}`, wantErr: "parse run config"},
		{name: "not json", json: `student = x`, wantErr: "parse run config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.json")
			require.NoError(t, os.WriteFile(p, []byte(tc.json), 0o600))
			c, err := ReadConfig(p)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
	_, err := ReadConfig(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorContains(t, err, "read run config")
}

func TestDurationJSON(t *testing.T) {
	for _, d := range []time.Duration{0, 300 * time.Millisecond, 90 * time.Second, 2 * time.Hour} {
		b, err := Duration(d).MarshalJSON()
		require.NoError(t, err)
		var got Duration
		require.NoError(t, got.UnmarshalJSON(b))
		require.Equal(t, Duration(d), got)
	}
}
