package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestServeRefusesBadClusterFlags checks that flag combinations that
// cannot make a sound cluster member stop fifoq serve before it starts.
func TestServeRefusesBadClusterFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--peers", "a=127.0.0.1:1"}, "need --raft-addr"},
		{[]string{"--join", "http://127.0.0.1:1"}, "need --raft-addr"},
		{[]string{"--raft-addr", "127.0.0.1:7000", "--in-memory"}, "--in-memory"},
		{[]string{"--raft-addr", "0.0.0.0:7000"}, "unspecified"},
		{[]string{"--raft-addr", "127.0.0.1"}, "HOST:PORT"},
		{[]string{"--raft-addr", "127.0.0.1:7000", "--peers", "a=127.0.0.1:1", "--join", "http://x"}, "give one"},
		{[]string{"--raft-addr", "127.0.0.1:7000", "--peers", "a=127.0.0.1:1,a=127.0.0.1:2"}, "twice"},
		{[]string{"--raft-addr", "127.0.0.1:7000", "--raft-tls-cert", "c.pem"}, "go together"},
		{[]string{"--node-id", "a=b"}, "--node-id"},
	} {
		var stderr bytes.Buffer
		code := run(append([]string{"serve", "--data-dir", t.TempDir()}, tc.args...), &bytes.Buffer{}, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestClusterCommandUsage(t *testing.T) {
	for _, args := range [][]string{{"cluster"}, {"cluster", "nope"}, {"cluster", "add", "n4"}, {"cluster", "remove"}} {
		if code := run(args, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
