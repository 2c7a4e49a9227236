package memguard

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1073741824", 1 << 30},
		{"512MiB", 512 << 20},
		{"1GiB", 1 << 30},
		{" 2 GiB ", 2 << 30},
		{"64KiB", 64 << 10},
		{"3TiB", 3 << 40},
		{"100B", 100},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "1G", "1GB", "512M", "1.5GiB", "-1", "GiB", "9999999TiB", "1gib"} {
		if n, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, n)
		} else if in != "" && !strings.Contains(err.Error(), in) {
			t.Errorf("ParseSize(%q): error %q does not name the input", in, err)
		}
	}
}

func TestFormatSizeReadsBack(t *testing.T) {
	for _, n := range []int64{0, 1, 1000, 1 << 10, 3 << 20, 1<<30 + 1, 5 << 40} {
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, s, got, err)
		}
	}
	if got := FormatSize(1 << 30); got != "1GiB" {
		t.Errorf("FormatSize(1<<30) = %q, want 1GiB", got)
	}
}
