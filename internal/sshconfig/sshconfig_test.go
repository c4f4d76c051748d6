package sshconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/hint"
)

var testOpts = Defaults("/usr/local/bin/chalk", "/path/to/project")

// wantDefault is the block as the user documentation shows it.
const wantDefault = `# >>> chalk sandbox configure-ssh >>>
# Managed by 'chalk sandbox configure-ssh'. Edits between these markers are
# overwritten on the next run; delete the markers too to stop managing it.
#
# 'ssh chalk-sbx-<sandbox name or id>' tunnels to a Chalk sandbox over the Chalk API.
# The sandbox must be host-backed ('--compute-class host') and running an sshd.
Host chalk-sbx-*
  User root
  ProxyCommand sh -c 'exec "/usr/local/bin/chalk" session proxy --dir "/path/to/project" "${0#chalk-sbx-}"' %n
  # Sandboxes are ephemeral and regenerate their host keys with them, so
  # recording those keys would only produce false mismatch warnings. The
  # connection is authenticated by Chalk before ssh ever sees it.
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  LogLevel ERROR
# <<< chalk sandbox configure-ssh <<<
`

func TestBlockDefault(t *testing.T) {
	require.NoError(t, testOpts.Validate())
	require.Equal(t, wantDefault, Block(testOpts))
	explicit := Options{Prefix: "chalk-sbx-", User: "root", Port: 22, Chalk: testOpts.Chalk, Dir: testOpts.Dir}
	require.Equal(t, wantDefault, Block(explicit))
}

func TestBlockCustom(t *testing.T) {
	o := Options{Prefix: "box-", User: "dev", Port: 2222, Chalk: "/opt/chalk", Dir: "/home/me/proj"}
	require.NoError(t, o.Validate())
	b := Block(o)
	require.Contains(t, b, "\nHost box-*\n")
	require.Contains(t, b, "\n  User dev\n")
	require.Contains(t, b, "# 'ssh box-<sandbox name or id>' tunnels")
	require.Contains(t, b, `  ProxyCommand sh -c 'exec "/opt/chalk" session proxy --dir "/home/me/proj" --port 2222 "${0#box-}"' %n`+"\n")
	require.NotContains(t, b, "chalk-sbx-")
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"prefix with space", func(o *Options) { o.Prefix = "bad prefix" }, "invalid --prefix"},
		{"prefix with star", func(o *Options) { o.Prefix = "box*" }, "invalid --prefix"},
		{"prefix with newline", func(o *Options) { o.Prefix = "box-\nHost *" }, "invalid --prefix"},
		{"prefix with percent", func(o *Options) { o.Prefix = "box%n" }, "invalid --prefix"},
		{"prefix with dollar", func(o *Options) { o.Prefix = "box$x" }, "invalid --prefix"},
		{"prefix starting with dash", func(o *Options) { o.Prefix = "-box" }, "invalid --prefix"},
		{"user injecting a Host", func(o *Options) { o.User = "root\nHost *" }, "invalid --user"},
		{"user with space", func(o *Options) { o.User = "ro ot" }, "invalid --user"},
		{"defaults", nil, ""},
		{"empty prefix", func(o *Options) { o.Prefix = "" }, "invalid --prefix"},
		{"empty user", func(o *Options) { o.User = "" }, "invalid --user"},
		{"port 0", func(o *Options) { o.Port = 0 }, "invalid --port"},
		{"port negative", func(o *Options) { o.Port = -1 }, "invalid --port"},
		{"port 70000", func(o *Options) { o.Port = 70000 }, "invalid --port"},
		{"chalk path with double quote", func(o *Options) { o.Chalk = `/opt/"chalk` }, "chalk binary path"},
		{"dir with single quote", func(o *Options) { o.Dir = `/home/o'neil` }, "project directory path"},
		{"dir with dollar", func(o *Options) { o.Dir = `/x/$HOME` }, "project directory path"},
		{"dir with backquote", func(o *Options) { o.Dir = "/x/`id`" }, "project directory path"},
		{"dir with backslash", func(o *Options) { o.Dir = `/x\y` }, "project directory path"},
		{"dir with newline", func(o *Options) { o.Dir = "/x\nHost *" }, "project directory path"},
		{"dir with percent", func(o *Options) { o.Dir = "/x/%h" }, "project directory path"},
		{"relative dir", func(o *Options) { o.Dir = "proj" }, "not absolute"},
		{"dir with space and hash is fine", func(o *Options) { o.Dir = "/my proj/#1" }, ""},
		{"dotted prefix and user are fine", func(o *Options) { o.Prefix = "sbx.a_b-"; o.User = "_svc.x-1" }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOpts
			if c.mod != nil {
				c.mod(&o)
			}
			err := o.Validate()
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
			require.NotEmpty(t, hint.Of(err), "every validation error carries a fix")
		})
	}
}

func TestApply(t *testing.T) {
	block := Block(testOpts)
	stale := strings.Replace(block, "/usr/local/bin/chalk", "/old/chalk", 1)
	stale = strings.Replace(stale, "  LogLevel ERROR\n", "  LogLevel ERROR\n  # my edit\n", 1)
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", block},
		{"host star", "Host *\n  User me\n", block + "\nHost *\n  User me\n"},
		{"no final newline", "Host *\n  User me", block + "\nHost *\n  User me"},
		{"stale block in the middle", "Host a\n  Port 1\n\n" + stale + "\nHost *\n  User me\n",
			"Host a\n  Port 1\n\n" + block + "\nHost *\n  User me\n"},
		{"indented markers", "  " + strings.Replace(stale, EndMarker, EndMarker+"  ", 1), block},
		{"crlf file", "Host *\r\n  User me\r\n", strings.ReplaceAll(block, "\n", "\r\n") + "\r\nHost *\r\n  User me\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Apply([]byte(c.in), block)
			require.NoError(t, err)
			require.Equal(t, c.want, string(got))
			again, err := Apply(got, block)
			require.NoError(t, err)
			require.Equal(t, string(got), string(again), "Apply is idempotent")
		})
	}
}

func TestApplyMissingFile(t *testing.T) {
	_, err := os.ReadFile(filepath.Join(t.TempDir(), "config"))
	require.ErrorIs(t, err, os.ErrNotExist)
	got, err := Apply(nil, Block(testOpts))
	require.NoError(t, err)
	require.Equal(t, wantDefault, string(got))
}

func TestBrokenMarkers(t *testing.T) {
	b, e := BeginMarker+"\n", EndMarker+"\n"
	cases := []struct {
		name, in, want string
	}{
		{"begin twice", b + b + e, "begin marker appears more than once, on lines 1, 2"},
		{"end twice", "Host x\n" + b + e + e, "end marker appears more than once, on lines 3, 4"},
		{"begin without end", "Host x\n" + b + "Host y\n", "begin marker on line 2 has no end marker"},
		{"end without begin", "Host x\n" + e, "end marker on line 2 has no begin marker"},
		{"end before begin", e + "Host x\n" + b, "end marker on line 1 comes before its begin marker on line 3"},
		{"two blocks", b + e + b + e, "begin marker appears more than once"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Apply([]byte(c.in), Block(testOpts))
			require.ErrorContains(t, err, c.want)
			require.Contains(t, hint.Of(err), "delete the stray marker")
			_, _, err = Remove([]byte(c.in))
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestRemove(t *testing.T) {
	block := Block(testOpts)
	cases := []struct {
		name, in, want string
		removed        bool
	}{
		{"nothing", "Host *\n", "Host *\n", false},
		{"empty", "", "", false},
		{"only block", block, "", true},
		{"top with blank line", block + "\nHost *\n", "Host *\n", true},
		{"middle", "Host a\n\n" + block + "\nHost *\n", "Host a\n\nHost *\n", true},
		{"crlf", strings.ReplaceAll(block+"\nHost *\n", "\n", "\r\n"), "Host *\r\n", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, removed, err := Remove([]byte(c.in))
			require.NoError(t, err)
			require.Equal(t, c.removed, removed)
			require.Equal(t, c.want, string(got))
		})
	}
}

// TestSSHReadsBlock has the real ssh client parse the block.
func TestSSHReadsBlock(t *testing.T) {
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("ssh is not on PATH; install openssh-client to run this test")
	}
	dir := t.TempDir()
	// A stand-in chalk that prints its arguments, one a line.
	fake := filepath.Join(dir, "my chalk", "chalk")
	require.NoError(t, os.MkdirAll(filepath.Dir(fake), 0o755))
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755))
	o := Defaults(fake, filepath.Join(dir, "proj #1"))
	require.NoError(t, o.Validate())
	cfg := filepath.Join(dir, "config")
	data, err := Apply([]byte("Host *\n  User someoneelse\n  LogLevel INFO\n"), Block(o))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfg, data, 0o600))

	resolved := func(host string) []string {
		cmd := exec.Command(sshPath, "-G", "-F", cfg, host)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.Output()
		require.NoError(t, err, "ssh -G %s", host)
		return strings.Split(string(out), "\n")
	}
	got := resolved("chalk-sbx-my-box")
	require.Contains(t, got, "user root")
	require.Contains(t, got, "userknownhostsfile /dev/null")
	require.Contains(t, got, "stricthostkeychecking false")
	require.Contains(t, got, "loglevel ERROR")
	// Some ssh versions expand %n in -G output, others print it as is.
	want := `proxycommand sh -c 'exec "` + fake + `" session proxy --dir "` + o.Dir + `" "${0#chalk-sbx-}"' `
	var proxy string
	for _, l := range got {
		if strings.HasPrefix(l, "proxycommand ") {
			proxy = l
		}
	}
	require.Contains(t, []string{want + "%n", want + "chalk-sbx-my-box"}, proxy)

	// Run the command the way ssh does, %n expanded: the prefix is
	// stripped and the paths arrive intact.
	command := strings.Replace(strings.TrimPrefix(proxy, "proxycommand "), "%n", "chalk-sbx-my-box", 1)
	out, err := exec.Command("/bin/sh", "-c", "exec "+command).Output()
	require.NoError(t, err)
	require.Equal(t, "session\nproxy\n--dir\n"+o.Dir+"\nmy-box\n", string(out))

	other := resolved("example.com")
	require.Contains(t, other, "user someoneelse")
	for _, l := range other {
		require.False(t, strings.HasPrefix(l, "proxycommand"), "a real host gets no proxy: %s", l)
	}
}

func FuzzApply(f *testing.F) {
	for _, s := range []string{"", "Host *\n  User me\n", "\n", "x", "Host a\r\n  Port 2\r\n", "\r\n\n", "#\n# >>> chalk\n"} {
		f.Add(s)
	}
	block := Block(testOpts)
	f.Fuzz(func(t *testing.T, x string) {
		if strings.Contains(x, BeginMarker) || strings.Contains(x, EndMarker) {
			t.Skip()
		}
		once, err := Apply([]byte(x), block)
		require.NoError(t, err)
		require.True(t, strings.HasSuffix(string(once), x), "the original bytes follow the block")
		twice, err := Apply(once, block)
		require.NoError(t, err)
		require.Equal(t, string(once), string(twice))
		back, removed, err := Remove(once)
		require.NoError(t, err)
		require.True(t, removed)
		require.Equal(t, x, string(back))
	})
}
