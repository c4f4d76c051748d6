package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Disk is the student's writable space: an ext4 filesystem in a sparse
// file, on a loop device, mounted inside the sandbox. The student's
// directories are bind-mounted from it, so the kernel stops the student
// at the size of the file; the transcript and /out's archive live
// elsewhere and are never starved.
type Disk struct {
	Image string // the backing file
	Mount string // where the filesystem is mounted
	Size  int64
	Dev   string // the loop device

	binds   []string
	madeDev []string
}

// mkfsPaths are where the image's mkfs.ext4 is looked for.
var mkfsPaths = []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"}

// NewDisk makes an ext4 filesystem of size bytes in image, owned at its
// root by uid:gid, and mounts it at mountPoint. It needs CAP_SYS_ADMIN,
// the loop devices (created here if the sandbox's /dev lacks them; the
// device cgroup must allow block 7:* and char 10:237) and mkfs.ext4 in
// the image. The error says which is missing.
func NewDisk(image, mountPoint string, size int64, uid, gid int) (*Disk, error) {
	if size < 4<<20 {
		return nil, fmt.Errorf("a disk budget of %d bytes is too small for a filesystem (at least 4 MiB)", size)
	}
	mkfs := ""
	for _, p := range mkfsPaths {
		if executable(p) == nil {
			mkfs = p
			break
		}
	}
	if mkfs == "" {
		return nil, errors.New("mkfs.ext4 is not in the sandbox's image (install e2fsprogs in the Containerfile)")
	}
	d := &Disk{Image: image, Mount: mountPoint, Size: size}
	made := false
	defer func() {
		if !made {
			d.Remove()
		}
	}()
	f, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("make the disk image: %w", err)
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("size the disk image: %w", err)
	}
	// No journal and lazily initialised tables: made in milliseconds,
	// and the student's data is scratch that does not outlive the run.
	out, err := exec.Command(mkfs, "-q", "-F", "-m", "0", "-O", "^has_journal",
		"-E", fmt.Sprintf("lazy_itable_init=1,lazy_journal_init=1,root_owner=%d:%d", uid, gid), image).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("mkfs.ext4: %v: %s", err, strings.TrimSpace(string(out)))
	}
	dev, loop, err := d.attach(image)
	if err != nil {
		return nil, err
	}
	d.Dev = dev
	defer loop.Close() // the device detaches itself once unmounted
	if err := os.MkdirAll(mountPoint, 0o755); err != nil {
		return nil, err
	}
	if err := unix.Mount(dev, mountPoint, "ext4", unix.MS_NOSUID|unix.MS_NODEV, "noinit_itable"); err != nil {
		return nil, fmt.Errorf("mount the student's disk: %w", err)
	}
	made = true
	return d, nil
}

// attach puts image on a free loop device with autoclear set.
func (d *Disk) attach(image string) (string, *os.File, error) {
	if err := d.node("/dev/loop-control", unix.S_IFCHR, 10, 237); err != nil {
		return "", nil, err
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", nil, fmt.Errorf("open /dev/loop-control: %w (the sandbox's device cgroup must allow c 10:237)", err)
	}
	defer ctl.Close()
	backing, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return "", nil, err
	}
	defer backing.Close()
	for try := 0; try < 10; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", nil, fmt.Errorf("find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		if err := d.node(dev, unix.S_IFBLK, 7, uint32(n)); err != nil {
			return "", nil, err
		}
		loop, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return "", nil, fmt.Errorf("open %s: %w (the sandbox's device cgroup must allow b 7:*)", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(backing.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		err = unix.IoctlLoopConfigure(int(loop.Fd()), &cfg)
		if errors.Is(err, unix.EBUSY) { // another sandbox took it first
			loop.Close()
			continue
		}
		if err != nil {
			loop.Close()
			return "", nil, fmt.Errorf("attach the disk image to %s: %w", dev, err)
		}
		return dev, loop, nil
	}
	return "", nil, errors.New("no free loop device after 10 tries")
}

// node makes the device node path unless it exists.
func (d *Disk) node(path string, kind, major, minor uint32) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := unix.Mknod(path, kind|0o600, int(unix.Mkdev(major, minor))); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make %s: %w", path, err)
	}
	d.madeDev = append(d.madeDev, path)
	return nil
}

// Give moves dir onto the disk: its contents are copied to a directory
// on the disk, which is then bind-mounted over dir. dir is made when
// missing, owned by uid:gid.
func (d *Disk) Give(dir string, uid, gid int) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.Lchown(dir, uid, gid); err != nil {
			return err
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	on := filepath.Join(d.Mount, strings.ReplaceAll(strings.Trim(dir, "/"), "/", "_"))
	if err := os.Mkdir(on, fi.Mode().Perm()); err != nil {
		return err
	}
	if err := copyTree(dir, on); err != nil {
		return fmt.Errorf("copy %s onto the student's disk: %w", dir, err)
	}
	if err := unix.Mount(on, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the student's disk over %s: %w", dir, err)
	}
	d.binds = append(d.binds, dir)
	return nil
}

// Free is how many bytes the student can still write.
func (d *Disk) Free() int64 {
	var st unix.Statfs_t
	if unix.Statfs(d.Mount, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * st.Bsize
}

// Full says whether the student has (all but) filled the disk: ext4
// keeps some blocks back for its own metadata and for writes in flight,
// so a write fails with ENOSPC while statfs still shows a little free.
func (d *Disk) Full() bool {
	free := d.Free()
	return free >= 0 && free < min(4<<20, d.Size/8)
}

// Remove unmounts everything and deletes the image.
func (d *Disk) Remove() error {
	var errs []error
	for _, b := range slices.Backward(d.binds) {
		if err := unmount(b); err != nil {
			errs = append(errs, err)
		}
	}
	d.binds = nil
	if d.Dev != "" {
		if err := unmount(d.Mount); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(d.Mount)
		d.Dev = ""
	}
	if d.Image != "" {
		if err := os.Remove(d.Image); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, n := range d.madeDev {
		_ = os.Remove(n)
	}
	d.madeDev = nil
	return errors.Join(errs...)
}

// unmount unmounts p, waiting out a brief EBUSY, then detaching lazily.
func unmount(p string) error {
	for i := 0; i < 20; i++ {
		err := unix.Unmount(p, 0)
		if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", p, err)
	}
	return nil
}

// copyTree copies the directories, regular files and symlinks under src
// into dst (which exists), keeping modes, owners and times.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case rel == ".":
		case fi.IsDir():
			if err := os.Mkdir(target, fi.Mode().Perm()); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyFile(p, target, fi.Mode().Perm()); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(l, target); err != nil {
				return err
			}
		default:
			return nil // sockets, fifos and devices stay behind
		}
		if st != nil {
			if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
				return err
			}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			_ = os.Chmod(target, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
			_ = os.Chtimes(target, fi.ModTime(), fi.ModTime())
		}
		return nil
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
