package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/auth"
)

const composeClusterDir = "../../examples/compose-cluster"

// flagValue returns the value given to flag name in args, or "".
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// clusterNode is one fifoq service of examples/compose-cluster, run here
// as a process.
type clusterNode struct {
	name     string
	svc      composeService
	m        map[string]string // container paths to paths here
	port     int               // its SQS port here (9324 in its container)
	endpoint string
	cmd      *exec.Cmd
	logs     bytes.Buffer
	exited   chan error
}

// TestContainerClusterWithComposeSettings runs the one-shot fifoq cert
// services of examples/compose-cluster, then its three fifoq nodes, as the
// image's ENTRYPOINT would with each service's command, environment,
// mounts and volumes (a volume services share is one directory here;
// service names on the compose network become loopback ports), waits for
// each node's health check, checks that the nodes speak mutual TLS with
// the certificates made, then runs the example app against a follower
// with the app's compose environment and checks the cluster agrees
// afterwards.
func TestContainerClusterWithComposeSettings(t *testing.T) {
	if !dockerAvailable() {
		t.Log("Docker is not available: testing examples/compose-cluster's settings with the binary instead")
	}
	fifoq, app := builtBinaries(t)
	img := readDockerfile(t)
	compose := readCompose(t, composeClusterDir)

	nodes := composeNodes(t, compose)
	addrs := checkComposeCluster(t, nodes, img, compose)
	runComposeCerts(t, fifoq, compose, nodes)
	startClusterNodes(t, fifoq, nodes, addrs)
	defer stopClusterNodes(t, nodes)
	waitClusterHealthy(t, fifoq, img, nodes, addrs)
	checkPeerTLS(t, nodes, addrs)

	appSvc := compose.Services["app"]
	cred := auth.Credential{AccessKeyID: appSvc.Environment["AWS_ACCESS_KEY_ID"], SecretAccessKey: appSvc.Environment["AWS_SECRET_ACCESS_KEY"], Account: "000000000000"}
	ctx := context.Background()
	follower := appFollower(t, ctx, nodes, appSvc, cred)

	// A key not in the mounted credentials file is refused by the
	// follower too: forwarding does not skip the signature check.
	other := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(follower.endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIAOTHER", "other", "")})
	if _, err := other.ListQueues(ctx, &sqs.ListQueuesInput{}); err == nil || !strings.Contains(err.Error(), "InvalidClientTokenId") {
		t.Errorf("a request to a follower signed with a key not in the credentials file: %v, want InvalidClientTokenId", err)
	}

	runExampleApp(t, app, appSvc, follower)
	checkClusterAgrees(t, ctx, nodes, appSvc, cred)
	// A backup through a follower, with the key of the mounted file.
	backupComposeStack(t, fifoq, follower.endpoint, follower.m["/run/secrets/fifoq_credentials"])
	stopClusterCleanly(t, nodes, img)
}

// composeNodes returns the services of compose that run fifoq serve,
// sorted by name; there must be three.
func composeNodes(t *testing.T, compose composeFile) []*clusterNode {
	t.Helper()
	var nodes []*clusterNode
	for name, svc := range compose.Services {
		if len(svc.Command) > 0 && svc.Command[0] == "serve" {
			nodes = append(nodes, &clusterNode{name: name, svc: svc})
		}
	}
	slices.SortFunc(nodes, func(a, b *clusterNode) int { return strings.Compare(a.name, b.name) })
	if len(nodes) != 3 {
		t.Fatalf("examples/compose-cluster runs %d fifoq nodes, want 3", len(nodes))
	}
	return nodes
}

// clusterAddrs maps the HOST:PORT addresses of the compose network (raft
// and SQS) to the loopback addresses that stand for them here.
type clusterAddrs map[string]string

// here rewrites a container's argument or variable for nd on this machine:
// compose network addresses, then mounts and its SQS port.
func (addrs clusterAddrs) here(nd *clusterNode, s string) string {
	for from, to := range addrs {
		s = strings.ReplaceAll(s, from, to)
	}
	return rewrite(s, nd.m, nd.port)
}

// checkComposeCluster checks that the compose file's cluster settings hang
// together: each node is a member under its own id at a raft address named
// after its service, every node is given the same peers, each keeps its
// data in a volume of its own, and the app waits until all are healthy. It
// gives each node its mounts and ports here, and returns the compose
// network's addresses mapped to those ports.
func checkComposeCluster(t *testing.T, nodes []*clusterNode, img image, compose composeFile) clusterAddrs {
	t.Helper()
	addrs := clusterAddrs{}
	peers := flagValue(nodes[0].svc.Command, "--peers")
	volumes := map[string]bool{}
	for _, nd := range nodes {
		args := nd.svc.Command
		id, raftAddr := flagValue(args, "--node-id"), flagValue(args, "--raft-addr")
		if id == "" || !strings.HasPrefix(raftAddr, nd.name+":") {
			t.Fatalf("%s: --node-id %q, --raft-addr %q: want an id and an address of this service", nd.name, id, raftAddr)
		}
		if p := flagValue(args, "--peers"); p != peers || !slices.Contains(strings.Split(p, ","), id+"="+raftAddr) {
			t.Fatalf("%s: --peers %q, want the same list on every node, with %s=%s", nd.name, p, id, raftAddr)
		}
		// On the compose network the raft address is beyond loopback,
		// where the example speaks mutual TLS, with the certificates of
		// its fifoq cert services (runComposeCerts), and not
		// --raft-insecure's plain TCP.
		if flagValue(args, "--raft-tls-cert") == "" || flagValue(args, "--raft-tls-key") == "" || flagValue(args, "--raft-tls-ca") == "" ||
			slices.Contains(args, "--raft-insecure") {
			t.Fatalf("%s: want --raft-tls-cert, --raft-tls-key and --raft-tls-ca, and no --raft-insecure", nd.name)
		}
		if u := flagValue(args, "--advertise-url"); u != "http://"+nd.name+":9324" {
			t.Fatalf("%s: --advertise-url %q, want the service's SQS endpoint on the compose network", nd.name, u)
		}
		if d := flagValue(args, "--data-dir"); len(img.volumes) == 0 || d != img.volumes[0] {
			t.Fatalf("%s: --data-dir %q, want the image's volume %q", nd.name, d, img.volumes)
		}
		for _, v := range nd.svc.Volumes {
			if src, dst, _ := strings.Cut(v, ":"); dst == img.volumes[0] {
				if volumes[src] {
					t.Fatalf("%s shares the volume %s with another node", nd.name, src)
				}
				volumes[src] = true
			}
		}
		if len(nd.svc.Healthcheck.Test) < 2 {
			t.Fatalf("%s has no health check", nd.name)
		}
		if dep := compose.Services["app"].DependsOn[nd.name]; dep.Condition != "service_healthy" {
			t.Fatalf("the app does not wait for %s to be healthy (depends_on %+v)", nd.name, dep)
		}
		nd.m = mounts(t, composeClusterDir, compose, nd.svc)
		nd.port = freePort(t)
		nd.endpoint = "http://127.0.0.1:" + strconv.Itoa(nd.port)
		addrs[raftAddr] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		addrs[nd.name+":9324"] = "127.0.0.1:" + strconv.Itoa(nd.port)
	}
	if len(volumes) != len(nodes) {
		t.Fatalf("the nodes' data volumes %v: want one each", volumes)
	}
	return addrs
}

// startClusterNodes starts each node as the binary fifoq with its
// service's command and environment rewritten for this machine; a node's
// exit is sent on its exited channel.
func startClusterNodes(t *testing.T, fifoq string, nodes []*clusterNode, addrs clusterAddrs) {
	t.Helper()
	for _, nd := range nodes {
		args := make([]string, len(nd.svc.Command))
		for i, a := range nd.svc.Command {
			args[i] = addrs.here(nd, a)
		}
		nd.cmd = exec.Command(fifoq, args...)
		nd.cmd.Env = containerEnv(nil, nil, nd.port)
		for k, v := range nd.svc.Environment {
			nd.cmd.Env = append(nd.cmd.Env, k+"="+addrs.here(nd, v))
		}
		nd.cmd.Stdout, nd.cmd.Stderr = &nd.logs, &nd.logs
		if err := nd.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		nd.exited = make(chan error, 1)
		go func() { nd.exited <- nd.cmd.Wait() }()
	}
}

// stopClusterNodes stops the nodes with SIGTERM and waits for them to
// exit, logging each node's log if the test failed.
func stopClusterNodes(t *testing.T, nodes []*clusterNode) {
	for _, nd := range nodes {
		nd.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, nd := range nodes {
		<-nd.exited
		if t.Failed() {
			t.Logf("%s's log:\n%s", nd.name, nd.logs.String())
		}
	}
}

// waitClusterHealthy runs each node's health checks as Docker would run
// them, the image's and then the compose file's, until they pass; it fails
// if a node exits first or a check still fails after 30 s.
func waitClusterHealthy(t *testing.T, fifoq string, img image, nodes []*clusterNode, addrs clusterAddrs) {
	t.Helper()
	for _, nd := range nodes {
		for _, check := range [][]string{img.healthcheck, nd.svc.Healthcheck.Test[1:]} {
			for tries := 0; ; tries++ {
				args := make([]string, 0, len(check)-1)
				for _, a := range check[1:] {
					args = append(args, addrs.here(nd, a))
				}
				out, err := exec.Command(fifoq, args...).CombinedOutput()
				if err == nil {
					break
				}
				select {
				case err := <-nd.exited:
					nd.exited <- err
					t.Fatalf("%s exited (%v) before it was healthy", nd.name, err)
				default:
				}
				if tries == 300 {
					t.Fatalf("%s: health check %q still failing: %v: %s", nd.name, check, err, out)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
}

// appFollower returns the follower the app runs against: the node compose
// points the app at if it does not lead, else another.
func appFollower(t *testing.T, ctx context.Context, nodes []*clusterNode, appSvc composeService, cred auth.Credential) *clusterNode {
	t.Helper()
	leaderID := ""
	for tries := 0; leaderID == ""; tries++ {
		status, body, err := adminRequest(ctx, http.DefaultClient, http.MethodGet, nodes[0].endpoint+"/cluster/leader", nil, cred, "us-east-1")
		var info struct {
			LeaderID string `json:"leader_id"`
		}
		if err == nil && status == http.StatusOK && json.Unmarshal(body, &info) == nil {
			leaderID = info.LeaderID
		} else if tries == 100 {
			t.Fatalf("GET /cluster/leader: %d %s %v", status, body, err)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	var follower *clusterNode
	for _, nd := range nodes {
		if flagValue(nd.svc.Command, "--node-id") == leaderID {
			continue
		}
		if follower == nil || strings.Contains(appSvc.Environment["FIFOQ_ENDPOINT"], "//"+nd.name+":") {
			follower = nd
		}
	}
	t.Logf("%s leads; the app runs against %s", leaderID, follower.name)
	return follower
}

// runExampleApp runs the example app with its compose environment, its
// endpoint being follower's, and fails if the app does.
func runExampleApp(t *testing.T, app string, appSvc composeService, follower *clusterNode) {
	t.Helper()
	appCmd := exec.Command(app)
	appCmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	for k, v := range appSvc.Environment {
		if k == "FIFOQ_ENDPOINT" {
			v = follower.endpoint
		}
		appCmd.Env = append(appCmd.Env, k+"="+v)
	}
	if out, err := appCmd.CombinedOutput(); err != nil {
		t.Fatalf("the example app against %s failed: %v\n%s", follower.name, err, out)
	} else {
		t.Logf("%s", bytes.TrimSpace(out))
	}
}

// checkClusterAgrees checks that every node answers the same
// (linearizable) view: the queue the app emptied, and its dead-letter
// queue, exist through each.
func checkClusterAgrees(t *testing.T, ctx context.Context, nodes []*clusterNode, appSvc composeService, cred auth.Credential) {
	t.Helper()
	for _, nd := range nodes {
		client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(nd.endpoint),
			Credentials: credentials.NewStaticCredentialsProvider(cred.AccessKeyID, cred.SecretAccessKey, "")})
		url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(appSvc.Environment["QUEUE_NAME"])})
		if err != nil {
			t.Fatalf("%s: GetQueueUrl: %v", nd.name, err)
		}
		attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("%s: GetQueueAttributes: %v", nd.name, err)
		}
		if n := attrs.Attributes["ApproximateNumberOfMessages"]; n != "0" {
			t.Errorf("%s: %s holds %s messages after the app received and deleted them all", nd.name, *url.QueueUrl, n)
		}
		if _, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders-dlq.fifo")}); err != nil {
			t.Errorf("%s: the config file's dead-letter queue: %v", nd.name, err)
		}
	}
}

// stopClusterCleanly checks that a SIGTERM (docker stop) stops each node
// cleanly, with its data in its volume. It puts each exit back on the
// node's channel for stopClusterNodes, which runs after it.
func stopClusterCleanly(t *testing.T, nodes []*clusterNode, img image) {
	t.Helper()
	for _, nd := range nodes {
		nd.cmd.Process.Signal(syscall.SIGTERM)
		if err := <-nd.exited; err != nil {
			t.Errorf("%s's exit after SIGTERM: %v", nd.name, err)
		}
		nd.exited <- nil
		if entries, _ := os.ReadDir(nd.m[img.volumes[0]]); len(entries) == 0 {
			t.Errorf("nothing was written to %s's volume", nd.name)
		}
	}
}
