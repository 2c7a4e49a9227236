package memguard

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

// files is a fake file system of limit files.
type files map[string]string

func (f files) read(name string) ([]byte, error) {
	if s, ok := f[name]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

// A host with cgroup v1's memory controller beside an empty unified
// hierarchy, as systemd's hybrid mode (and this project's CI) mounts them.
const hybridMountinfo = `25 30 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate
31 25 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev shared:14 - cgroup cgroup rw,memory
32 25 0:30 / /sys/fs/cgroup/cpu,cpuacct rw shared:15 - cgroup cgroup rw,cpu,cpuacct
`

const hybridSelf = `5:cpu,cpuacct:/
4:memory:/jobs/app
0::/jobs/app
`

// A container with its own cgroup namespace on a cgroup v2 host.
const v2Mountinfo = `700 600 0:40 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw
`

func TestCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo, self string
		files                 files
		want                  int64
		wantDir               string
		wantOK                bool
	}{
		{
			name: "v1, smallest of the cgroup and its ancestors", mountinfo: hybridMountinfo, self: hybridSelf,
			files: files{
				"/sys/fs/cgroup/memory/jobs/app/memory.limit_in_bytes": "9223372036854771712\n",
				"/sys/fs/cgroup/memory/jobs/memory.limit_in_bytes":     "1073741824\n",
				"/sys/fs/cgroup/memory/memory.limit_in_bytes":          "9223372036854771712\n",
				"/sys/fs/cgroup/unified/jobs/app/memory.max":           "1\n", // no controller here: never read
			},
			want: 1 << 30, wantDir: "/sys/fs/cgroup/memory/jobs", wantOK: true,
		},
		{
			name: "v1, no limit anywhere", mountinfo: hybridMountinfo, self: hybridSelf,
			files: files{"/sys/fs/cgroup/memory/jobs/app/memory.limit_in_bytes": "9223372036854771712\n"},
		},
		{
			name: "v2 in a namespace", mountinfo: v2Mountinfo, self: "0::/\n",
			files: files{"/sys/fs/cgroup/memory.max": "536870912\n"},
			want:  512 << 20, wantDir: "/sys/fs/cgroup", wantOK: true,
		},
		{
			name: "v2, max", mountinfo: v2Mountinfo, self: "0::/\n",
			files: files{"/sys/fs/cgroup/memory.max": "max\n"},
		},
		{
			name: "v2 mount showing a subtree", self: "0::/system.slice/fifoq.service\n",
			mountinfo: `40 30 0:26 /system.slice /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw` + "\n",
			files: files{
				"/sys/fs/cgroup/fifoq.service/memory.max": "268435456\n",
				"/sys/fs/cgroup/memory.max":               "max\n",
			},
			want: 256 << 20, wantDir: "/sys/fs/cgroup/fifoq.service", wantOK: true,
		},
		{
			name: "no cgroup file system", mountinfo: "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", self: "0::/\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got int64
			var dir string
			cg, ok := ownCgroup([]byte(tc.mountinfo), []byte(tc.self))
			if ok {
				got, dir, ok = cg.limit(tc.files.read)
			}
			if got != tc.want || dir != tc.wantDir || ok != tc.wantOK {
				t.Fatalf("cgroupLimit = %d, %q, %v; want %d, %q, %v", got, dir, ok, tc.want, tc.wantDir, tc.wantOK)
			}
		})
	}
}

func TestUnescape(t *testing.T) {
	if got := unescape(`/mnt/with\040space\134x`); got != `/mnt/with space\x` {
		t.Fatalf("unescape = %q", got)
	}
}

// TestCgroupLimitOfThisProcess reads this machine's real files: whatever
// it finds must be a limit a budget can use, and a machine with a memory
// cgroup file system must be read without error.
func TestCgroupLimitOfThisProcess(t *testing.T) {
	limit, dir, ok := CgroupLimit()
	if !ok {
		if _, err := os.Stat("/proc/self/mountinfo"); errors.Is(err, fs.ErrNotExist) {
			t.Skip("no /proc on this system")
		}
		t.Logf("no memory limit on this process's cgroup")
		return
	}
	if limit <= 0 || dir == "" {
		t.Fatalf("CgroupLimit = %d, %q", limit, dir)
	}
	t.Logf("memory limit %s from %s", FormatSize(limit), dir)
}
