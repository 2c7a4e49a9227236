package main

import "testing"

// TestFlagValue reads the image's command line as fifoq's flags allow it.
func TestFlagValue(t *testing.T) {
	args := []string{"/usr/local/bin/fifoq", "serve", "--listen", "0.0.0.0:9324", "--data-dir=/data"}
	if got := flagValue(args, "--listen"); got != "0.0.0.0:9324" {
		t.Errorf("--listen: %q", got)
	}
	if got := flagValue(args, "--data-dir"); got != "/data" {
		t.Errorf("--data-dir: %q", got)
	}
	if got := flagValue(args, "--region"); got != "" {
		t.Errorf("--region: %q", got)
	}
}
