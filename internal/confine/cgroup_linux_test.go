package confine

import (
	"strings"
	"testing"
)

// Where the student's cgroup goes, read from what a sandbox sees, for the
// layouts Chalk meets: cgroup v1 in a container that shares the host's
// cgroup namespace, cgroup v2 in a private one, and v2 on a host, in a
// systemd slice.
func TestCgroupLayouts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mountinfo string
		cgroup    string
		v2        bool
		dirs      map[string]string // controller ("" for v2) → the process's cgroup dir
		readOnly  bool
	}{
		{
			name: "v1, docker, host cgroup namespace",
			mountinfo: `1380 1376 0:99 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755
1385 1380 0:30 /docker/0a1b2c /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:13 - cgroup cgroup rw,memory
1386 1380 0:31 /docker/0a1b2c /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime master:14 - cgroup cgroup rw,pids
1387 1380 0:32 /docker/0a1b2c /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime master:15 - cgroup cgroup rw,cpu,cpuacct
`,
			cgroup:   "9:memory:/docker/0a1b2c\n8:pids:/docker/0a1b2c\n4:cpu,cpuacct:/docker/0a1b2c\n0::/docker/0a1b2c\n",
			dirs:     map[string]string{"memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids"},
			readOnly: true,
		},
		{
			name: "v1 hybrid host, own cgroup below the root",
			mountinfo: `30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
35 25 0:30 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory
36 25 0:31 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,pids
`,
			cgroup: "9:memory:/user.slice/session-3.scope\n8:pids:/user.slice/session-3.scope\n0::/user.slice/session-3.scope\n",
			dirs:   map[string]string{"memory": "/sys/fs/cgroup/memory/user.slice/session-3.scope", "pids": "/sys/fs/cgroup/pids/user.slice/session-3.scope"},
		},
		{
			name:      "v2, docker, private cgroup namespace",
			mountinfo: "1385 1376 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate\n",
			cgroup:    "0::/\n",
			v2:        true,
			dirs:      map[string]string{"": "/sys/fs/cgroup"},
			readOnly:  true,
		},
		{
			name:      "v2 host, systemd slice",
			mountinfo: "28 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			cgroup:    "0::/system.slice/ci.service\n",
			v2:        true,
			dirs:      map[string]string{"": "/sys/fs/cgroup/system.slice/ci.service"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mounts, err := parseMountinfo(strings.NewReader(tc.mountinfo))
			if err != nil {
				t.Fatal(err)
			}
			own := parseProcCgroup([]byte(tc.cgroup))
			v2 := findV2(mounts)
			if (v2 != nil && len(mountsWith(mounts, "memory")) == 0) != tc.v2 {
				t.Fatalf("cgroup v2: got %v, want %v", v2 != nil, tc.v2)
			}
			for ctl, want := range tc.dirs {
				var m cgroupMount
				var path string
				if ctl == "" {
					m, path = *v2, own[""]
				} else {
					ms := mountsWith(mounts, ctl)
					if len(ms) != 1 {
						t.Fatalf("%s: %d mounts", ctl, len(ms))
					}
					m, path = ms[0], ownPath(own, ctl)
				}
				got, err := dirOf(m, path)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s: %s, want %s", ctl, got, want)
				}
				if m.readOnly != tc.readOnly {
					t.Errorf("%s: read-only %v, want %v", ctl, m.readOnly, tc.readOnly)
				}
			}
		})
	}
}

func TestDirOfRefusesAPathOutsideTheMount(t *testing.T) {
	if _, err := dirOf(cgroupMount{point: "/sys/fs/cgroup/memory", root: "/docker/a"}, "/docker/b"); err == nil {
		t.Fatal("a cgroup outside the mount was taken")
	}
}

func TestKeyedValue(t *testing.T) {
	dir := t.TempDir()
	if err := writeFile(dir, "memory.events", "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\n"); err != nil {
		t.Fatal(err)
	}
	if n := keyedValue(dir+"/memory.events", "oom_kill"); n != 1 {
		t.Fatalf("oom_kill %d", n)
	}
	if n := keyedValue(dir+"/memory.events", "max"); n != 12 {
		t.Fatalf("max %d", n)
	}
	if n := keyedValue(dir+"/missing", "max"); n != 0 {
		t.Fatalf("missing file: %d", n)
	}
}
