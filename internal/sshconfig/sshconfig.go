// Package sshconfig renders and maintains the block that 'chalk sandbox
// configure-ssh' keeps in an ssh client configuration (~/.ssh/config).
//
// The block is delimited by a begin and an end marker line. Apply inserts it
// at the top of a file that has none (ssh keeps the first value it reads for
// each option, so a catch-all "Host *" further down must not get there
// first) and rewrites it in place, wherever it sits, in a file that already
// has one. Remove deletes it again. Every byte outside the block is kept.
package sshconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/chalk-rl/chalk/internal/hint"
)

// The marker lines delimiting the managed block.
const (
	BeginMarker = "# >>> chalk sandbox configure-ssh >>>"
	EndMarker   = "# <<< chalk sandbox configure-ssh <<<"
)

// Defaults for Options.
const (
	DefaultPrefix = "chalk-sbx-"
	DefaultUser   = "root"
	DefaultPort   = 22
)

// Options are the values substituted into the block. All are required;
// Defaults fills in the first three.
type Options struct {
	Prefix string // host name prefix that selects a sandbox
	User   string // remote user
	Port   int    // sshd port inside the sandbox
	Chalk  string // absolute path of the chalk binary
	Dir    string // absolute path of the project directory
}

// Defaults returns Options with the default prefix, user and port, and
// the given chalk binary and project directory.
func Defaults(chalk, dir string) Options {
	return Options{Prefix: DefaultPrefix, User: DefaultUser, Port: DefaultPort, Chalk: chalk, Dir: dir}
}

var (
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	userRE   = regexp.MustCompile(`^[a-z_][a-z0-9_.-]*$`)
)

// Validate reports, as a hint error, the first option that cannot be
// written safely: everything lands in ssh_config, and the paths also inside
// a quoted shell command.
func (o Options) Validate() error {
	if !prefixRE.MatchString(o.Prefix) {
		return hint.Newf("use letters, digits, '.', '_' and '-' only, starting with a letter or digit, e.g. --prefix chalk-sbx-",
			"invalid --prefix %q: it becomes an ssh Host pattern and a shell pattern, so it may not contain spaces, quotes, wildcards or other special characters", o.Prefix)
	}
	if len(o.User) > 64 || !userRE.MatchString(o.User) {
		return hint.Newf("use a plain user name: lower-case letters, digits, '_', '.' and '-', starting with a letter or '_', e.g. --user root",
			"invalid --user %q", o.User)
	}
	if o.Port < 1 || o.Port > 65535 {
		return hint.Newf("pass the port sshd listens on inside the sandbox, between 1 and 65535 (default 22)",
			"invalid --port %d: out of range", o.Port)
	}
	if err := checkPath("chalk binary", o.Chalk, "install chalk in a directory whose path has none of them, e.g. /usr/local/bin"); err != nil {
		return err
	}
	return checkPath("project directory", o.Dir, "move the project, or pass --dir a path (or symlink) without them")
}

// checkPath refuses paths that cannot sit inside the double-quoted,
// single-quoted, %-expanded ProxyCommand.
func checkPath(what, p, fix string) error {
	if p == "" || p[0] != '/' {
		return hint.Newf("pass an absolute path", "the %s path %q is not absolute", what, p)
	}
	for _, r := range p {
		if strings.ContainsRune("\"'$`\\%", r) || r < 0x20 || r == 0x7f {
			return hint.Newf(fix+"; quotes, '$', '`', '\\', '%' and control characters cannot be quoted safely in ssh's ProxyCommand",
				"the %s path %q contains %q", what, p, r)
		}
	}
	return nil
}

// Block renders the managed block, markers included, each line ending in
// "\n". Call Validate first: Block does not check o.
func Block(o Options) string {
	port := ""
	if o.Port != DefaultPort {
		port = " --port " + strconv.Itoa(o.Port)
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("%s", BeginMarker)
	line("# Managed by 'chalk sandbox configure-ssh'. Edits between these markers are")
	line("# overwritten on the next run; delete the markers too to stop managing it.")
	line("#")
	line("# 'ssh %s<sandbox name or id>' tunnels to a Chalk sandbox over the Chalk API.", o.Prefix)
	line("# The sandbox must be host-backed ('--compute-class host') and running an sshd.")
	line("Host %s*", o.Prefix)
	line("  User %s", o.User)
	line(`  ProxyCommand sh -c 'exec "%s" session proxy --dir "%s"%s "${0#%s}"' %%n`, o.Chalk, o.Dir, port, o.Prefix)
	line("  # Sandboxes are ephemeral and regenerate their host keys with them, so")
	line("  # recording those keys would only produce false mismatch warnings. The")
	line("  # connection is authenticated by Chalk before ssh ever sees it.")
	line("  UserKnownHostsFile /dev/null")
	line("  StrictHostKeyChecking no")
	line("  LogLevel ERROR")
	line("%s", EndMarker)
	return b.String()
}
