package clustertest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testbin"
)

// TestJoinOverHTTPSWithTheClusterCA: a node started with --join asks a
// member's SQS endpoint to add it. Over https that endpoint's certificate
// is often one of the cluster's own CA (fifoq cert node makes a single
// certificate for both ports), which the system does not trust: the
// joining node trusts its --raft-tls-ca too, and joins with no
// SSL_CERT_FILE or AWS_CA_BUNDLE set.
func TestJoinOverHTTPSWithTheClusterCA(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes")
	}
	testbin.Track(t)
	certs := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(binary, args...).CombinedOutput(); err != nil {
			t.Fatalf("fifoq %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("cert", "ca", "--out", certs)
	for _, n := range []string{"n1", "n2"} {
		run("cert", "node", "--ca", certs, "--name", n, "--host", "127.0.0.1", "--out", certs)
	}
	start := func(id, listen, raft string, extra ...string) *exec.Cmd {
		t.Helper()
		args := []string{"serve", "--listen", listen, "--data-dir", t.TempDir(), "--node-id", id, "--raft-addr", raft,
			"--tls-cert", filepath.Join(certs, id+".pem"), "--tls-key", filepath.Join(certs, id+"-key.pem"),
			"--raft-tls-cert", filepath.Join(certs, id+".pem"), "--raft-tls-key", filepath.Join(certs, id+"-key.pem"),
			"--raft-tls-ca", filepath.Join(certs, "ca.pem")}
		cmd := exec.Command(binary, append(args, extra...)...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "FIFOQ_") && !strings.HasPrefix(kv, "SSL_CERT_") && !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		logs, err := os.Create(filepath.Join(t.TempDir(), id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logs.Close() })
		return cmd
	}
	a1, r1 := freeAddr(t), freeAddr(t)
	start("n1", a1, r1, "--peers", "n1="+r1)
	a2 := freeAddr(t)
	n2 := start("n2", a2, freeAddr(t), "--join", "https://"+a1)

	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := exec.Command(binary, "cluster", "status", "--json", "--endpoint", "https://"+a1,
			"--ca-cert", filepath.Join(certs, "ca.pem")).Output()
		var st struct {
			Members []struct {
				ID    string `json:"id"`
				Voter bool   `json:"voter"`
			} `json:"members"`
		}
		if err == nil && json.Unmarshal(out, &st) == nil {
			for _, m := range st.Members {
				if m.ID == "n2" && m.Voter {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(n2.Stdout.(*os.File).Name())
			t.Fatalf("n2 did not become a voting member within 60 s (status: %v %s); its log:\n%s", err, out, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
