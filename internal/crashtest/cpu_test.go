package crashtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGOMAXPROCSFollowsTheCPULimit starts fifoq in a cgroup whose CPU
// quota is 30 % of a core: it runs on one P (GOMAXPROCS 1, which its
// /metrics report), where Go's own default would be 2, and says so at
// start; so too at exactly one core. GOMAXPROCS set in its environment
// is kept as given; and a limit of one and a half cores gives what Go's
// default would (the limit rounded up, no more than the CPUs there are).
func TestGOMAXPROCSFollowsTheCPULimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	for _, tc := range []struct {
		name  string
		quota float64 // cores
		env   []string
		want  int
		logs  bool // whether fifoq says it chose one P
	}{
		// On a machine of one CPU, Go's default is one P already, and
		// fifoq has nothing to say.
		{name: "below one core", quota: 0.3, want: 1, logs: runtime.NumCPU() > 1},
		{name: "one core", quota: 1, want: 1, logs: runtime.NumCPU() > 1},
		{name: "GOMAXPROCS set", quota: 0.3, env: []string{"GOMAXPROCS=2"}, want: 2},
		{name: "above one core", quota: 1.5, want: min(2, runtime.NumCPU())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := newCPUCgroup(t, tc.quota)
			addr := freeAddr(t)
			proc := startInCPUCgroup(t, cg.dir, tc.env, "serve", "--listen", addr, "--in-memory")
			if got := gomaxprocs(t, addr); got != tc.want {
				t.Fatalf("GOMAXPROCS %d under a limit of %.1f cores (env %v), want %d\n%s", got, tc.quota, tc.env, tc.want, proc.out)
			}
			if line := logLine(proc.out.String(), "GOMAXPROCS 1"); (line != "") != tc.logs {
				t.Fatalf("fifoq's start, which should say it chose one P: %v:\n%s", tc.logs, proc.out)
			}
		})
	}
}

// TestGOMAXPROCSFollowsALimitChangedWhileRunning changes the CPU quota of
// a running fifoq's cgroup, as a pod resized in place has it changed:
// from 30 % of a core to one and a half cores, and back. GOMAXPROCS
// follows each change within a few seconds (the server reads its limit
// every 5 s), from 1 to Go's default for the larger limit and back to 1,
// and the server logs each change. A server that chose only at start
// stays at 1 throughout.
func TestGOMAXPROCSFollowsALimitChangedWhileRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	cg := newCPUCgroup(t, 0.3)
	addr := freeAddr(t)
	proc := startInCPUCgroup(t, cg.dir, nil, "serve", "--listen", addr, "--in-memory")
	if got := gomaxprocs(t, addr); got != 1 {
		t.Fatalf("GOMAXPROCS %d under a limit of 0.3 cores, want 1\n%s", got, proc.out)
	}
	for _, step := range []struct {
		cores float64
		want  int
	}{
		{1.5, min(2, runtime.NumCPU())},
		{0.3, 1},
	} {
		cg.setQuota(t, step.cores)
		deadline := time.Now().Add(20 * time.Second)
		got := gomaxprocs(t, addr)
		for got != step.want && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			got = gomaxprocs(t, addr)
		}
		if got != step.want {
			t.Fatalf("GOMAXPROCS %d 20 s after the limit became %.1f cores, want %d\n%s", got, step.cores, step.want, proc.out)
		}
	}
	if runtime.NumCPU() > 1 {
		if n := strings.Count(proc.out.String(), "GOMAXPROCS follows a changed CPU limit"); n != 2 {
			t.Fatalf("the server logged %d changes of GOMAXPROCS, want 2:\n%s", n, proc.out)
		}
	}
}

// gomaxprocs reads go_sched_gomaxprocs_threads from the server's /metrics.
func gomaxprocs(t *testing.T, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_sched_gomaxprocs_threads "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("go_sched_gomaxprocs_threads %q", v)
			}
			return n
		}
	}
	t.Fatalf("/metrics has no go_sched_gomaxprocs_threads:\n%s", body)
	return 0
}

// startInCPUCgroup starts fifoq with args in the cgroup at dir, with the
// test's environment less its FIFOQ_ variables and GOMAXPROCS, plus env,
// and waits until it answers on the address after --listen.
func startInCPUCgroup(t *testing.T, dir string, env []string, args ...string) *fifoqProc {
	t.Helper()
	addr := args[slices.Index(args, "--listen")+1]
	return startJoined(t, dir, []string{"FIFOQ_", "GOMAXPROCS="}, env, nil, addr, args...)
}

// newCPUCgroup makes a cgroup whose CPU quota is cores of a core (over a
// period of 100 ms), beside this process's: in cgroup v1's cpu hierarchy,
// or in v2 where cgroupParent finds room for the cpu controller. The test
// ends through unavailable if it cannot. The cgroup is removed when the
// test ends, after the processes in it.
func newCPUCgroup(t *testing.T, cores float64) *cpuCgroup {
	t.Helper()
	parent, v2, err := ownCPUCgroup()
	if err != nil {
		unavailable(t, "no CPU cgroup to put fifoq in: %v", err)
	}
	dir, err := os.MkdirTemp(parent, "fifoq-cputest-")
	if err != nil {
		unavailable(t, "cannot make a CPU cgroup (needs root): %v", err)
	}
	removeCgroupAtCleanup(t, dir)
	cg := &cpuCgroup{dir: dir, v2: v2}
	cg.setQuota(t, cores)
	return cg
}

// cpuCgroup is a cgroup made by newCPUCgroup.
type cpuCgroup struct {
	dir string
	v2  bool // in cgroup v2, whose quota is in cpu.max
}

// setQuota sets the cgroup's CPU quota to cores of a core, over a period
// of 100 ms.
func (cg *cpuCgroup) setQuota(t *testing.T, cores float64) {
	t.Helper()
	dir := cg.dir
	const period = 100000
	quota := strconv.Itoa(int(cores * period))
	write := func(name, value string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0); err != nil {
			unavailable(t, "cannot set the CPU quota of cgroup %s: write %s to %s: %v", dir, value, name, err)
		}
	}
	if cg.v2 {
		write("cpu.max", quota+" "+strconv.Itoa(period))
	} else {
		write("cpu.cfs_period_us", strconv.Itoa(period))
		write("cpu.cfs_quota_us", quota)
	}
}

// ownCPUCgroup returns where to make a cgroup with the cpu controller
// beside this process's, from /proc/self/mountinfo and /proc/self/cgroup:
// in cgroup v1's cpu hierarchy where one is mounted, else in v2.
func ownCPUCgroup() (dir string, v2 bool, err error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, err
	}
	var v1Root, v1Point, v2Root, v2Point string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+3 {
			continue
		}
		switch {
		case f[sep+1] == "cgroup2" && v2Point == "":
			v2Root, v2Point = f[3], f[4]
		case f[sep+1] == "cgroup" && v1Point == "" && len(f) > sep+3 && slices.Contains(strings.Split(f[sep+3], ","), "cpu"):
			v1Root, v1Point = f[3], f[4]
		}
	}
	pathOf := func(v1 bool) string {
		sc := bufio.NewScanner(bytes.NewReader(self))
		for sc.Scan() {
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) == 3 && (v1 && slices.Contains(strings.Split(parts[1], ","), "cpu") || !v1 && parts[0] == "0" && parts[1] == "") {
				return parts[2]
			}
		}
		return ""
	}
	join := func(root, point, p string) string {
		if root != "/" {
			p = strings.TrimPrefix(p, root)
		}
		return path.Join(point, p)
	}
	if v1Point != "" {
		if p := pathOf(true); p != "" {
			return join(v1Root, v1Point, p), false, nil
		}
	}
	if v2Point != "" {
		if p := pathOf(false); p != "" {
			parent, err := cgroupParent(v2Point, join(v2Root, v2Point, p), "cpu")
			return parent, true, err
		}
	}
	return "", false, fmt.Errorf("no cgroup file system with the cpu controller in /proc/self/mountinfo")
}
