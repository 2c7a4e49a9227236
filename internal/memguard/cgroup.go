package memguard

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
)

// Cgroup is the cgroup whose memory controller governs this process.
type Cgroup struct {
	// Dir is its directory in the cgroup file system.
	Dir string
	// Mount is where its hierarchy is mounted: Dir or an ancestor of it.
	Mount string
	// V2 is true in the unified hierarchy (memory.max), false in cgroup
	// v1's memory hierarchy (memory.limit_in_bytes).
	V2 bool
}

// OwnCgroup returns the cgroup whose memory controller governs this
// process, from /proc/self/mountinfo and /proc/self/cgroup; ok is false
// where there is none (no cgroup file system mounted, not Linux).
func OwnCgroup() (cg Cgroup, ok bool) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Cgroup{}, false
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Cgroup{}, false
	}
	return ownCgroup(mountinfo, self)
}

// CgroupLimit returns the memory limit of the cgroup this process runs in:
// the smallest limit set on its cgroup or any ancestor, in the cgroup v2
// hierarchy (memory.max) or in cgroup v1's memory controller
// (memory.limit_in_bytes). ok is false when there is none: no cgroup file
// system, no memory controller, or no limit set. dir is the cgroup
// directory whose limit it is.
func CgroupLimit() (limit int64, dir string, ok bool) {
	cg, ok := OwnCgroup()
	if !ok {
		return 0, "", false
	}
	return cg.limit(os.ReadFile)
}

// unlimited is the value from which a cgroup v1 limit counts as none: the
// kernel writes "no limit" as the largest page-aligned int64.
const unlimited = 1 << 62

// ownCgroup is OwnCgroup over the contents of /proc/self/mountinfo and
// /proc/self/cgroup.
func ownCgroup(mountinfo, self []byte) (Cgroup, bool) {
	v1, v2 := memoryMounts(mountinfo)
	// On a hybrid host the memory controller sits in v1 and the unified
	// hierarchy holds no controller: where v1 has it, v1 is the one.
	var m mount
	var cgPath string
	switch {
	case v1.point != "":
		m, cgPath = v1, selfPath(self, true)
	case v2.point != "":
		m, cgPath = v2, selfPath(self, false)
	default:
		return Cgroup{}, false
	}
	if cgPath == "" {
		return Cgroup{}, false
	}
	// Inside a cgroup namespace the process's path is relative to the
	// mount's root, which is then "/"; outside one the mount may show a
	// subtree (a container's), whose root is cut off the path.
	rel := cgPath
	if m.root != "/" {
		rel = strings.TrimPrefix(cgPath, m.root)
	}
	return Cgroup{Dir: path.Join(m.point, rel), Mount: m.point, V2: m == v2}, true
}

// limit returns the smallest memory limit of the cgroup and its
// ancestors up to the mount, reading the limit files through readFile.
func (cg Cgroup) limit(readFile func(string) ([]byte, error)) (int64, string, bool) {
	file := "memory.limit_in_bytes"
	if cg.V2 {
		file = "memory.max"
	}
	best, bestDir, found := int64(0), "", false
	for d := cg.Dir; ; d = path.Dir(d) {
		if b, err := readFile(path.Join(d, file)); err == nil {
			if n, ok := parseLimit(b); ok && (!found || n < best) {
				best, bestDir, found = n, d, true
			}
		}
		if d == cg.Mount || d == "/" || d == "." {
			break
		}
	}
	return best, bestDir, found
}

// parseLimit reads a limit file's value; "max" and v1's huge values mean
// no limit.
func parseLimit(b []byte) (int64, bool) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= unlimited {
		return 0, false
	}
	return n, true
}

// mount is one cgroup file system: where it is mounted, and which path of
// the hierarchy its root shows.
type mount struct{ root, point string }

// memoryMounts finds, in /proc/self/mountinfo, the cgroup v1 file system
// of the memory controller and the cgroup v2 one.
func memoryMounts(mountinfo []byte) (v1, v2 mount) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 6 || len(f) < sep+2 {
			continue
		}
		m := mount{root: unescape(f[3]), point: unescape(f[4])}
		fstype := f[sep+1]
		super := ""
		if sep+3 < len(f) {
			super = f[sep+3]
		}
		switch {
		case fstype == "cgroup2" && v2.point == "":
			v2 = m
		case fstype == "cgroup" && v1.point == "" && hasOption(super, "memory"):
			v1 = m
		}
	}
	return v1, v2
}

// selfPath returns this process's path in the v1 memory hierarchy or the
// v2 one, from /proc/self/cgroup ("ID:CONTROLLERS:PATH" lines).
func selfPath(self []byte, v1 bool) string {
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v1 && hasOption(parts[1], "memory") || !v1 && parts[0] == "0" && parts[1] == "" {
			return parts[2]
		}
	}
	return ""
}

// hasOption reports whether a comma-separated list holds opt.
func hasOption(list, opt string) bool {
	for _, o := range strings.Split(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash in paths.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
