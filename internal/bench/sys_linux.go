package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// processCPU is the CPU time, user and system, this process has used.
func processCPU() (float64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	secs := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return secs(ru.Utime) + secs(ru.Stime), true
}

// readDisk finds the block device holding dir and reads its counters from
// /proc/diskstats. For a partition it reads the whole disk, where the
// kernel counts flush requests.
func readDisk(dir string) (string, diskCounters, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return "", diskCounters{}, err
	}
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	if major == 0 {
		return "", diskCounters{}, fmt.Errorf("%s is on a filesystem with no block device (device %d:%d)", dir, major, minor)
	}
	name := ""
	// /sys/dev/block/M:m links to the device; a partition's parent
	// directory is its disk.
	if link, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)); err == nil {
		name = filepath.Base(link)
		if _, err := os.Stat(filepath.Join(link, "partition")); err == nil {
			name = filepath.Base(filepath.Dir(link))
		}
	}
	f, err := os.Open("/proc/diskstats")
	if err != nil {
		return "", diskCounters{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 14 {
			continue
		}
		if name != "" && fields[2] != name ||
			name == "" && (fields[0] != strconv.FormatUint(major, 10) || fields[1] != strconv.FormatUint(minor, 10)) {
			continue
		}
		var c diskCounters
		// After major, minor and name: field 5 is writes completed and,
		// since Linux 5.5, field 16 flush requests completed.
		c.writes, _ = strconv.ParseFloat(fields[7], 64)
		if len(fields) >= 19 {
			c.flushes, _ = strconv.ParseFloat(fields[18], 64)
			c.flushesOK = true
		}
		return fields[2], c, nil
	}
	if err := sc.Err(); err != nil {
		return "", diskCounters{}, err
	}
	return "", diskCounters{}, fmt.Errorf("device %d:%d of %s is not in /proc/diskstats", major, minor, dir)
}
