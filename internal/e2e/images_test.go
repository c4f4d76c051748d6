package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The test images, all FROM the local base image: no registry and no
// network are needed, because the programs they carry are this host's
// own, copied in with their shared libraries (the host and the base
// image are the same Debian release).
//
//	sshd  sshd (127.0.0.1:22, key auth for root), socat, rsync, ps, echoserver
//	nc    OpenBSD nc, no socat, no bash
//	bash  bash only (the base image's)
//	none  no socat, nc or bash (sh remains)
//	bare  nothing but echoserver: no shell at all
const dockerfile = `FROM %[1]s AS base
COPY echoserver /usr/local/bin/echoserver
COPY ps/ /
CMD ["/usr/local/bin/echoserver", "127.0.0.1"]

FROM base AS bash

FROM base AS none
RUN rm -f /bin/bash /usr/bin/bash

FROM none AS nc
COPY nc/ /

FROM scratch AS bare
COPY echoserver /echoserver
CMD ["/echoserver", "127.0.0.1"]

FROM base AS sshd
COPY sshd/ /
RUN mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh \
 && chmod 600 /root/.ssh/authorized_keys /etc/ssh/ssh_host_ed25519_key \
 && echo 'sshd:x:100:65534::/run/sshd:/usr/sbin/nologin' >> /etc/passwd
COPY start.sh /start.sh
CMD ["/bin/sh", "/start.sh"]
`

const sshdConfig = `ListenAddress 127.0.0.1
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AuthorizedKeysFile /root/.ssh/authorized_keys
Subsystem sftp /usr/lib/openssh/sftp-server
PidFile /run/sshd.pid
`

// The sshd image's entrypoint: sshd on loopback, and the echo service on
// every address, so the benchmark can also reach it directly.
const startScript = `/usr/sbin/sshd -D -e &
exec /usr/local/bin/echoserver 0.0.0.0
`

func (w *world) buildImages(base string) error {
	ctx := filepath.Join(w.dir, "images")
	// The client's key, and the image's host key: kept across runs, so
	// that the build context, and with it docker's cache, stays the same
	// and reruns leave no dangling images behind.
	keys := filepath.Join(os.TempDir(), "chalk-e2e-keys")
	w.key = filepath.Join(keys, "id_ed25519")
	hostKey := filepath.Join(keys, "ssh_host_ed25519_key")
	for _, k := range []string{w.key, hostKey} {
		if _, err := os.Stat(k + ".pub"); err == nil {
			continue
		}
		if err := os.MkdirAll(keys, 0o700); err != nil {
			return err
		}
		os.Remove(k)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", k).CombinedOutput(); err != nil {
			return fmt.Errorf("ssh-keygen: %v\n%s", err, out)
		}
	}
	hk, err := os.ReadFile(hostKey)
	if err != nil {
		return err
	}
	pub, err := os.ReadFile(w.key + ".pub")
	if err != nil {
		return err
	}
	files := map[string]string{
		"Dockerfile":                        fmt.Sprintf(dockerfile, base),
		"start.sh":                          startScript,
		"sshd/etc/ssh/sshd_config":          sshdConfig,
		"sshd/root/.ssh/authorized_keys":    string(pub),
		"sshd/etc/ssh/ssh_host_ed25519_key": string(hk),
	}
	for name, content := range files {
		p := filepath.Join(ctx, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for dir, bins := range map[string][]string{
		"sshd": {"/usr/sbin/sshd", "/usr/bin/socat", "/usr/lib/openssh/sftp-server", "/usr/bin/rsync"},
		"nc":   {"/usr/bin/nc"},
		"ps":   {"/usr/bin/ps"},
	} {
		for _, b := range bins {
			if err := stage(filepath.Join(ctx, dir), b); err != nil {
				return err
			}
		}
	}
	echo := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(ctx, "echoserver"), "./testdata/echoserver")
	echo.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+goarch)
	if out, err := echo.CombinedOutput(); err != nil {
		return fmt.Errorf("build echoserver: %v\n%s", err, out)
	}
	for _, target := range []string{"sshd", "nc", "bash", "none", "bare"} {
		tag := "chalk-e2e-" + target + ":test"
		out, err := exec.Command("docker", "build", "-q", "--target", target, "-t", tag, ctx).CombinedOutput()
		if err != nil {
			return fmt.Errorf("docker build --target %s: %v\n%s", target, err, out)
		}
		w.images[target] = tag
	}
	return nil
}

// stage copies the host's binary bin into root at the same path, with
// the shared libraries ldd says it needs (except the C library itself,
// which the base image has).
func stage(root, bin string) error {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return fmt.Errorf("stage %s: %w (install it: see scripts/setup.sh)", bin, err)
	}
	if err := copyFile(real, filepath.Join(root, usrPath(bin)), 0o755); err != nil {
		return err
	}
	out, err := exec.Command("ldd", real).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", real, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		_, after, ok := strings.Cut(line, "=>")
		if !ok {
			continue
		}
		f := strings.Fields(after)
		if len(f) == 0 || !strings.HasPrefix(f[0], "/") {
			continue
		}
		lib := f[0]
		if strings.HasPrefix(filepath.Base(lib), "libc.so") {
			continue
		}
		src, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return err
		}
		if err := copyFile(src, filepath.Join(root, usrPath(lib)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// usrPath maps /lib/... to /usr/lib/...: the base image merges /usr, and
// its /lib is a symlink that COPY must not replace.
func usrPath(p string) string {
	for _, d := range []string{"/lib/", "/bin/", "/sbin/"} {
		if strings.HasPrefix(p, d) {
			return "/usr" + p
		}
	}
	return p
}

func copyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, mode)
}
