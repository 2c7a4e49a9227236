package clustertest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testbin"
	"github.com/fifoq/fifoq/internal/testenv"
)

// The documentation's recipes for a cluster are run here as a reader runs
// them: each shell block marked "<!-- test: NAME ... -->" is run whole by
// bash, with the built fifoq first on PATH, in a network namespace of its
// own (so that its fixed ports, 9324 and up, cannot clash with anything),
// and what it started is then checked.

// recipe returns the shell block of the document at path (from the
// repository's root) that follows the marker "<!-- test: name".
func recipe(t *testing.T, path, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "<!-- test: "+name+" ")
	if !ok {
		t.Fatalf("%s has no recipe marked %q", path, name)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("%s: no ```sh block after the marker %q", path, name)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("%s: the block of %q does not end", path, name)
	}
	return block
}

// recipeNS is a network namespace for a recipe, with its loopback up;
// every process left in it is killed, and it is removed, when the test
// ends.
type recipeNS struct {
	t    *testing.T
	name string
	dir  string // the recipe's working directory
}

func newRecipeNS(t *testing.T) *recipeNS {
	t.Helper()
	testbin.Track(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	ns := &recipeNS{t: t, name: "fqdoc" + hex.EncodeToString(b[:]), dir: t.TempDir()}
	if err := exec.Command("ip", "netns", "add", ns.name).Run(); err != nil {
		needRoot(t, "cannot make a network namespace: "+err.Error())
	}
	t.Cleanup(ns.remove)
	if out, err := exec.Command("ip", "-n", ns.name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v: %s", err, out)
	}
	return ns
}

// run runs a shell script in the namespace and the recipe's directory,
// failing the test if it fails.
func (ns *recipeNS) run(script string) string {
	ns.t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns.name, "bash", "-e", "-c", script)
	cmd.Dir = ns.dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "AWS_PAGER=",
		"HOME="+ns.dir, "AWS_CONFIG_FILE="+filepath.Join(ns.dir, "aws-config"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		ns.t.Fatalf("the recipe failed: %v\n%s\n--- logs:\n%s", err, out.String(), ns.logs())
	}
	return out.String()
}

// logs returns the tail of the recipe's node logs.
func (ns *recipeNS) logs() string {
	var b strings.Builder
	paths, _ := filepath.Glob(filepath.Join(ns.dir, "*.log"))
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		b.WriteString("== " + filepath.Base(p) + "\n" + strings.Join(lines[max(0, len(lines)-15):], "\n") + "\n")
	}
	return b.String()
}

// remove kills what the recipe left running and deletes the namespace.
func (ns *recipeNS) remove() {
	out, _ := exec.Command("ip", "netns", "pids", ns.name).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	_ = exec.Command("ip", "netns", "del", ns.name).Run()
}

// waitForCluster asks `fifoq cluster status --json` (with the extra
// flags) until three members answer and one leads.
func (ns *recipeNS) waitForCluster(flags string) {
	ns.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cmd := exec.Command("ip", "netns", "exec", ns.name, filepath.Join(binDir, "fifoq"), "cluster", "status", "--json")
		cmd.Args = append(cmd.Args, strings.Fields(flags)...)
		cmd.Dir = ns.dir
		out, err := cmd.Output()
		var st struct {
			Leader  string `json:"leader_id"`
			Members []struct {
				ID     string          `json:"id"`
				Status json.RawMessage `json:"status"`
			} `json:"members"`
		}
		answering := 0
		if err == nil && json.Unmarshal(out, &st) == nil {
			for _, m := range st.Members {
				if len(m.Status) > 0 && string(m.Status) != "null" {
					answering++
				}
			}
			if st.Leader != "" && answering == 3 {
				return
			}
		}
		if time.Now().After(deadline) {
			ns.t.Fatalf("no leader with 3 members answering after 60 s: %v\n%s\n--- logs:\n%s", err, out, ns.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDocsOneMachineCluster runs docs/operations.md's three nodes on one
// machine, then fifoq bench through a node that need not lead, which
// verifies every message came back once and in order.
func TestDocsOneMachineCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a cluster of real processes")
	}
	ns := newRecipeNS(t)
	out := ns.run(recipe(t, "docs/operations.md", "one-machine-cluster"))
	if !strings.Contains(out, "n1") || !strings.Contains(out, "n3") || !strings.Contains(out, "INCARNATION") {
		t.Fatalf("fifoq cluster status in the recipe does not list the members:\n%s", out)
	}
	ns.waitForCluster("--endpoint http://127.0.0.1:9324")
	ns.run("fifoq bench --endpoint http://127.0.0.1:9325 --duration 2s --quiet --producers 2 --consumers 2")
}

// TestDocsCertificatesAndTLSCluster runs docs/security.md's certificate
// recipe (fifoq cert), checks each node's certificate with openssl verify
// against the CA, then runs its three nodes with HTTPS for clients and
// mutual TLS between them, whose own last steps ask the cluster's status
// trusting the CA (--ca-cert) and create a queue with the AWS CLI
// (--ca-bundle). A queue created through one node must then be listed
// through another, over HTTPS.
func TestDocsCertificatesAndTLSCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a cluster of real processes")
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		testenv.ClientMissing(t, "openssl is not installed")
	}
	if _, err := exec.LookPath("aws"); err != nil {
		testenv.ClientMissing(t, "the aws CLI is not installed")
	}
	ns := newRecipeNS(t)
	ns.run(recipe(t, "docs/security.md", "certificates"))
	for _, f := range []string{"ca.pem", "n1.pem", "n1-key.pem", "n3.pem", "n3-key.pem"} {
		if _, err := os.Stat(filepath.Join(ns.dir, f)); err != nil {
			t.Fatalf("the certificate recipe made no %s: %v", f, err)
		}
	}
	// OpenSSL, not fifoq, judges the certificates: each for a TLS server
	// (--tls-cert) and a TLS client (a node dialling its peers).
	for _, n := range []string{"n1", "n2", "n3"} {
		for _, purpose := range []string{"sslserver", "sslclient"} {
			cmd := exec.Command("openssl", "verify", "-CAfile", "ca.pem", "-purpose", purpose, n+".pem")
			cmd.Dir = ns.dir
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), n+".pem: OK") {
				t.Fatalf("openssl verify -CAfile ca.pem -purpose %s %s.pem: %v\n%s", purpose, n, err, out)
			}
		}
	}
	out := ns.run(recipe(t, "docs/security.md", "tls-cluster"))
	if !strings.Contains(out, "https://127.0.0.1:9325/000000000000/q") {
		t.Fatalf("the recipe's create-queue did not answer the queue's https URL:\n%s", out)
	}
	ns.waitForCluster("--endpoint https://127.0.0.1:9326 --ca-cert ca.pem")
	listed := ns.run("AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 " +
		"aws --endpoint-url https://127.0.0.1:9326 --ca-bundle ca.pem sqs list-queues")
	if !strings.Contains(listed, "https://127.0.0.1:9326/000000000000/q") {
		t.Fatalf("list-queues through n3 does not show the queue made through n2:\n%s\n--- logs:\n%s", listed, ns.logs())
	}
	// Without the CA, a client refuses the nodes' certificates.
	cmd := exec.Command("ip", "netns", "exec", ns.name, filepath.Join(binDir, "fifoq"), "cluster", "status", "--endpoint", "https://127.0.0.1:9324")
	cmd.Env = append(os.Environ(), "AWS_CA_BUNDLE=", "SSL_CERT_FILE=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "certificate") {
		t.Fatalf("fifoq cluster status without the CA: %v, want a certificate error:\n%s", err, out)
	}
}
