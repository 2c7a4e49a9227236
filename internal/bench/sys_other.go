//go:build !linux

package bench

import "errors"

// processCPU is not measured off Linux.
func processCPU() (float64, bool) { return 0, false }

// readDisk is Linux only: it reads /proc/diskstats.
func readDisk(string) (string, diskCounters, error) {
	return "", diskCounters{}, errors.New("disk counters are read from /proc/diskstats, which only Linux has")
}
