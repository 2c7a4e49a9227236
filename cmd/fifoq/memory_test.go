package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestServeRefusesBadMemoryBudgets checks that a --max-memory, or a
// FIFOQ_MAX_MEMORY, that is not a size fifoq can keep to stops fifoq serve
// before it starts, saying why.
func TestServeRefusesBadMemoryBudgets(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{args: []string{"--max-memory", "1G"}, want: "binary unit such as 512MiB"},
		{args: []string{"--max-memory", "lots"}, want: `size "lots"`},
		{args: []string{"--max-memory", "-1"}, want: `size "-1"`},
		{args: []string{"--max-memory", "16MiB"}, want: "below the smallest budget"},
		{env: "2GB", want: "FIFOQ_MAX_MEMORY"},
	} {
		if tc.env != "" {
			t.Setenv("FIFOQ_MAX_MEMORY", tc.env)
		}
		var stderr bytes.Buffer
		code := run(append([]string{"serve", "--in-memory"}, tc.args...), &bytes.Buffer{}, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("serve %v (FIFOQ_MAX_MEMORY=%q): exit %d, stderr %q; want exit 2 mentioning %q", tc.args, tc.env, code, stderr.String(), tc.want)
		}
	}
}

func TestMemoryBudget(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want int64
		from string
	}{
		{"0", 0, ""},
		{"64MiB", 64 << 20, "--max-memory"},
		{"2GiB", 2 << 30, "--max-memory"},
	} {
		got, from, err := memoryBudget(tc.flag)
		if err != nil || got != tc.want || from != tc.from {
			t.Errorf("memoryBudget(%q) = %d, %q, %v; want %d, %q", tc.flag, got, from, err, tc.want, tc.from)
		}
	}
}

// TestServeRefusesBadBodyFileSizes checks that a --body-file-size out of
// its bounds, or not a size, stops fifoq serve before it starts.
func TestServeRefusesBadBodyFileSizes(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"1G", "binary unit such as 512MiB"},
		{"4KiB", "not between 64KiB and 1GiB"},
		{"2GiB", "not between 64KiB and 1GiB"},
	} {
		var stderr bytes.Buffer
		code := run([]string{"serve", "--in-memory", "--body-file-size", tc.value}, &bytes.Buffer{}, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "--body-file-size") || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("serve --body-file-size %s: exit %d, stderr %q; want exit 2 mentioning %q", tc.value, code, stderr.String(), tc.want)
		}
	}
	for _, ok := range []string{"64KiB", "64MiB", "1GiB"} {
		if _, err := bodyFileSizeOf(ok); err != nil {
			t.Errorf("--body-file-size %s: %v", ok, err)
		}
	}
}
