package memguard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// binaryUnits are the suffixes ParseSize accepts, as the Go runtime's
// GOMEMLIMIT writes them: a budget and the runtime limit it sets read alike.
var binaryUnits = []struct {
	suffix string
	shift  uint
}{
	{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0},
}

// ParseSize reads a size in bytes: a whole number, optionally followed by
// B, KiB, MiB, GiB or TiB ("512MiB", "1GiB", "1073741824"). Decimal and
// one-letter units ("1G", "1GB", "512M") are refused with a hint: tools
// disagree on whether they mean powers of 1000 or 1024, and a memory
// budget off by 7 % is the difference between a refusal and an OOM kill.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty size")
	}
	var shift uint
	for _, u := range binaryUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, shift = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a whole number of bytes, or one with a binary unit such as 512MiB or 2GiB (units: B, KiB, MiB, GiB, TiB)", s)
	}
	if n > (1<<63-1)>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n << shift, nil
}

// FormatSize writes n bytes in the largest binary unit that divides it,
// so that FormatSize's text reads back through ParseSize exactly.
func FormatSize(n int64) string {
	for _, u := range binaryUnits {
		if u.shift > 0 && n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// HumanSize writes n bytes for a person to read, in the largest binary
// unit that keeps a whole part ("700.0 MiB", "1.5 GiB"). Unlike
// FormatSize, it rounds.
func HumanSize(n int64) string {
	for _, u := range binaryUnits {
		if u.shift > 0 && n >= 1<<u.shift {
			return strconv.FormatFloat(float64(n)/float64(int64(1)<<u.shift), 'f', 1, 64) + " " + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}
