package main

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The nodes of examples/compose-cluster speak mutual TLS with certificates
// that one-shot services of the compose file make with fifoq cert before
// the nodes start. The helpers below run those services as compose would
// and check what the nodes do with their files.

// shareVolumes makes the named volumes of svc's mounts m (as mounts made
// them, a fresh directory each) the directories of dirs, one per volume:
// compose gives every service that mounts a volume the same volume. A
// volume not yet in dirs is entered with m's directory.
func shareVolumes(svc composeService, m, dirs map[string]string) {
	for _, v := range svc.Volumes {
		src, rest, _ := strings.Cut(v, ":")
		dst, _, _ := strings.Cut(rest, ":")
		if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
			continue // a bind mount
		}
		if dir, ok := dirs[src]; ok {
			m[dst] = dir
		} else {
			dirs[src] = m[dst]
		}
	}
}

// certServices returns the services of compose that run fifoq cert, each
// after those it depends on, which must be cert services too and be waited
// for until they complete successfully, as one-shot services are.
func certServices(t *testing.T, compose composeFile) []string {
	t.Helper()
	var pending, order []string
	for name, svc := range compose.Services {
		if len(svc.Command) > 0 && svc.Command[0] == "cert" {
			pending = append(pending, name)
		}
	}
	slices.Sort(pending)
	for len(pending) > 0 {
		progress := false
		for i, name := range pending {
			ready := true
			for dep, d := range compose.Services[name].DependsOn {
				if !slices.Contains(pending, dep) && !slices.Contains(order, dep) {
					t.Fatalf("%s depends on %s, which runs no fifoq cert", name, dep)
				}
				if d.Condition != "service_completed_successfully" {
					t.Fatalf("%s depends on %s with condition %q, want service_completed_successfully", name, dep, d.Condition)
				}
				ready = ready && slices.Contains(order, dep)
			}
			if ready {
				order = append(order, name)
				pending = slices.Delete(pending, i, i+1)
				progress = true
				break
			}
		}
		if !progress {
			t.Fatalf("the fifoq cert services %v depend on each other in a circle", pending)
		}
	}
	return order
}

// runComposeCerts runs the compose file's fifoq cert services in their
// order, twice, as a first and a second "docker compose up" would: the
// second run must keep the files of the first and succeed (--if-missing).
// The nodes' volumes are shared with them. Each node must wait for the
// service that makes the certificate it presents, whose hosts name the
// node's service; the certificate must verify against the node's CA for
// that name, as a server and as a client.
func runComposeCerts(t *testing.T, fifoq string, compose composeFile, nodes []*clusterNode) {
	t.Helper()
	dirs := map[string]string{}
	for _, nd := range nodes {
		shareVolumes(nd.svc, nd.m, dirs)
	}
	order := certServices(t, compose)
	if len(order) == 0 {
		t.Fatal("examples/compose-cluster has no service that runs fifoq cert")
	}
	for run := range 2 {
		for _, name := range order {
			svc := compose.Services[name]
			m := mounts(t, composeClusterDir, compose, svc)
			shareVolumes(svc, m, dirs)
			cmd := exec.Command(fifoq, rewriteAll(svc.Command, m, 0)...)
			cmd.Env = containerEnv(svc.Environment, m, 0)
			out, err := cmd.CombinedOutput()
			if err != nil || (run == 1 && !strings.Contains(string(out), "kept")) {
				t.Fatalf("run %d of %s (%q): %v\n%s", run+1, name, svc.Command, err, out)
			}
		}
	}
	for _, nd := range nodes {
		certArg := flagValue(nd.svc.Command, "--raft-tls-cert")
		want := strings.TrimSuffix(filepath.Base(certArg), ".pem")
		maker := ""
		for dep, d := range nd.svc.DependsOn {
			cmd := compose.Services[dep].Command
			if slices.Contains(order, dep) && flagValue(cmd, "--name") == want && d.Condition == "service_completed_successfully" {
				maker = dep
				if !slices.Contains(strings.Split(flagValue(cmd, "--host"), ","), nd.name) {
					t.Fatalf("%s makes %s's certificate for --host %q, which does not name the service", dep, nd.name, flagValue(cmd, "--host"))
				}
			}
		}
		if maker == "" {
			t.Fatalf("%s presents %s, but waits for no fifoq cert service that makes it", nd.name, certArg)
		}
		cert := readCert(t, rewrite(certArg, nd.m, 0))
		for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: nodeCA(t, nd), DNSName: nd.name, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
				t.Fatalf("%s's certificate, for use %v: %v", nd.name, use, err)
			}
		}
	}
}

// nodeCA is the pool of the CA certificates of nd's --raft-tls-ca.
func nodeCA(t *testing.T, nd *clusterNode) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(rewrite(flagValue(nd.svc.Command, "--raft-tls-ca"), nd.m, 0))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatalf("%s's --raft-tls-ca holds no certificate", nd.name)
	}
	return pool
}

// checkPeerTLS checks each running node's Raft port the way its peers
// reach it: a TLS handshake that presents the next node's certificate
// succeeds, with a server certificate good for the node's service name;
// a plain HTTP request gets no answer.
func checkPeerTLS(t *testing.T, nodes []*clusterNode, addrs clusterAddrs) {
	t.Helper()
	for i, nd := range nodes {
		here := addrs[flagValue(nd.svc.Command, "--raft-addr")]
		peer := nodes[(i+1)%len(nodes)]
		pair, err := tls.LoadX509KeyPair(rewrite(flagValue(peer.svc.Command, "--raft-tls-cert"), peer.m, 0),
			rewrite(flagValue(peer.svc.Command, "--raft-tls-key"), peer.m, 0))
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.Dial("tcp", here, &tls.Config{RootCAs: nodeCA(t, nd), ServerName: nd.name, Certificates: []tls.Certificate{pair}})
		if err != nil {
			t.Fatalf("a TLS handshake with %s's Raft port as %s: %v", nd.name, peer.name, err)
		}
		conn.Close()
		plain := &http.Client{Timeout: 5 * time.Second}
		if resp, err := plain.Get("http://" + here + "/cluster/node"); err == nil {
			resp.Body.Close()
			t.Errorf("%s's Raft port answered a plain HTTP request (%s): want mutual TLS only", nd.name, resp.Status)
		}
	}
}
