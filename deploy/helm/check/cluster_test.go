package check

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// clusterValues are those of the cluster tests: 3 nodes with mutual TLS
// between them (baseValues), HTTPS for clients, an admin key, and a queue
// declared by the config file.
func clusterValues() values {
	return baseValues().with(values{
		"tls.secretName": "fifoq-tls",
		"config": map[string]any{"queues": []any{map[string]any{
			"name": "orders.fifo", "attributes": map[string]any{"FifoQueue": true, "ContentBasedDeduplication": true}}}},
	})
}

// podHosts are the addresses the pods' certificates name: the pods' DNS
// names are mapped to them.
func podHosts() []string {
	var out []string
	for i := range 9 {
		out = append(out, podAddr(i))
	}
	return out
}

// testCluster is the pods of one release, and a client of their SQS port.
type testCluster struct {
	t      *testing.T
	k      *kubelet
	pods   map[int]*pod
	scheme string
	client *http.Client
}

// newTestCluster makes the Secrets the values name (certificates made
// for the pods' loopback addresses) and a kubelet to run the pods.
func newTestCluster(t *testing.T, v values) *testCluster {
	secrets := map[string]map[string][]byte{}
	c := &testCluster{t: t, pods: map[int]*pod{}, scheme: scheme(v), client: &http.Client{Timeout: 5 * time.Second}}
	if name, _ := v["cluster.tls.secretName"].(string); name != "" {
		secrets[name] = tlsSecret(t, "fifoq cluster CA", []string{"fifoq"})
	}
	if name, _ := v["tls.secretName"].(string); name != "" {
		secrets[name] = tlsSecret(t, "fifoq API CA", podHosts())
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(secrets[name]["ca.crt"])
		c.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	c.k = newKubelet(t, fullname(v), secrets)
	return c
}

// start starts pod ordinal as rendering r describes it, and waits until
// it is ready.
func (c *testCluster) start(r *rendered, ordinals ...int) {
	c.t.Helper()
	for _, i := range ordinals {
		p := c.k.prepare(r, i)
		c.k.start(p)
		c.pods[i] = p
	}
	for _, i := range ordinals {
		c.waitReady(c.pods[i])
	}
}

// waitReady waits until p's /readyz answers 200, as its readiness probe
// asks.
func (c *testCluster) waitReady(p *pod) {
	c.t.Helper()
	url := fmt.Sprintf("%s://%s:9324/readyz", c.scheme, p.addr)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.exited:
			c.t.Fatalf("%s exited (%v) before it was ready\n%s", p.name, p.exitErr, p.logTail())
		default:
		}
		resp, err := c.client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not ready after 60 s (last: %v %v)\n%s", p.name, resp, err, p.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// clusterStatus is what fifoq cluster status --json prints.
type clusterStatus struct {
	LeaderID string `json:"leader_id"`
	Members  []struct {
		ID     string `json:"id"`
		Voter  bool   `json:"voter"`
		Leader bool   `json:"leader"`
		Lag    uint64 `json:"lag"`
		Error  string `json:"error"`
	} `json:"members"`
}

// waitMembers runs fifoq cluster status --json in pod via (as kubectl
// exec would) until the members are exactly want, all voters and caught
// up, under one leader.
func (c *testCluster) waitMembers(via *pod, want ...string) clusterStatus {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for {
		out, err := c.k.exec(via, nil, "cluster", "status", "--json")
		var st clusterStatus
		if err == nil {
			err = json.Unmarshal([]byte(out), &st)
		}
		if err == nil {
			var ids []string
			ok := st.LeaderID != ""
			for _, m := range st.Members {
				ids = append(ids, m.ID)
				ok = ok && m.Voter && m.Lag == 0 && m.Error == ""
			}
			slices.Sort(ids)
			if ok && slices.Equal(ids, want) {
				return st
			}
			last = out
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the members never became %v, all voting and caught up; last status:\n%s", want, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// names returns the pod names of ordinals.
func (c *testCluster) names(ordinals ...int) []string {
	var out []string
	for _, i := range ordinals {
		out = append(out, fmt.Sprintf("%s-%d", c.k.name, i))
	}
	slices.Sort(out)
	return out
}

// sqs runs a short fifoq bench through p, signed with the pod's access
// key: every message sent is received once, in order, or it fails.
func (c *testCluster) sqs(p *pod, extra ...string) {
	c.t.Helper()
	creds := []string{"AWS_ACCESS_KEY_ID=" + p.getenv("FIFOQ_ACCESS_KEY_ID"), "AWS_SECRET_ACCESS_KEY=" + p.getenv("FIFOQ_SECRET_ACCESS_KEY")}
	args := append([]string{"bench", "--endpoint", fmt.Sprintf("%s://%s:9324", c.scheme, p.addr), "--duration", "2s",
		"--producers", "2", "--consumers", "2", "--metrics", "off", "--quiet"}, extra...)
	// Again while its queue cannot be created for a retryable 503 (for up
	// to 30 s), as after members are removed: the shards they held
	// replicas of move those replicas and elect leaders, one change a
	// second, and a shard in the middle of it answers 503 for a moment.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.k.exec(p, creds, args...)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "create queue") || !strings.Contains(err.Error(), "503") || time.Now().After(deadline) {
			c.t.Fatalf("%v\n%s", err, out)
		}
		c.t.Logf("fifoq bench could not create its queue yet, again in 1 s: %v", err)
		time.Sleep(time.Second)
	}
}

// remove runs fifoq cluster remove id in pod via, again while the answer
// is a retryable 503 (no leader yet: the one that was killed has not been
// replaced), for up to 30 s.
func (c *testCluster) remove(via *pod, id string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.k.exec(via, nil, "cluster", "remove", id)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "503") || time.Now().After(deadline) {
			c.t.Fatalf("%v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// grace is the rendering's terminationGracePeriodSeconds.
func grace(r *rendered) time.Duration {
	return time.Duration(*r.statefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
}

// TestPodsFormAClusterAndGrow starts the 3 pods of a rendering as
// processes: they must elect a leader, declare the config file's queue
// and serve SQS through a follower, over HTTPS, with mutual TLS between
// them. Then it starts pods 3 and 4 as an upgrade to 5 replicas renders
// them (--join): they must become voters. A leader stopped with SIGTERM
// must exit within the grace period and another lead; restarted, it must
// come back. Last, pods 4 and 3 go as the chart's README says: fifoq
// cluster remove first, then the pod.
func TestPodsFormAClusterAndGrow(t *testing.T) {
	v := clusterValues()
	c := newTestCluster(t, v)
	r3 := decode(t, render(t, v))
	c.start(r3, 0, 1, 2)
	st := c.waitMembers(c.pods[0], c.names(0, 1, 2)...)
	t.Logf("3 pods: leader %s", st.LeaderID)
	// The leader declares the config file's queue as it takes over; in a
	// cluster with shards (three pods run three by default) it first waits
	// for the shard map and places the queue in a shard, so the queue
	// comes a moment after the leader does.
	for start, deadline := time.Now(), time.Now().Add(30*time.Second); ; {
		_, err := c.k.exec(c.pods[1], nil, "export", "orders.fifo", "-")
		if err == nil {
			t.Logf("the config file's queue exported through %s %v after the leader", c.pods[1].name, time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the config file's queue, 30 s after the leader: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.sqs(c.pods[2])

	r5 := decode(t, render(t, v.with(values{"replicas": 5, "cluster.initialMembers": 3})))
	c.start(r5, 3, 4)
	st = c.waitMembers(c.pods[0], c.names(0, 1, 2, 3, 4)...)
	t.Logf("5 pods: leader %s", st.LeaderID)

	var leader *pod
	for _, p := range c.pods {
		if p.name == st.LeaderID {
			leader = p
		}
	}
	if leader == nil {
		t.Fatalf("the leader %q is none of the pods", st.LeaderID)
	}
	took := leader.stop(t, grace(r5))
	t.Logf("the leader %s stopped %v after SIGTERM (grace period %v)", leader.name, took.Round(time.Millisecond), grace(r5))
	other := c.pods[(leader.ordinal+1)%5]
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := c.k.exec(other, nil, "cluster", "leader")
		if err == nil && !strings.Contains(out, leader.name) {
			t.Logf("after it: %s", strings.TrimSpace(out))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no other leader 10 s after %s stopped: %v %s", leader.name, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.start(r5, leader.ordinal)
	c.waitMembers(other, c.names(0, 1, 2, 3, 4)...)

	for _, gone := range []int{4, 3} {
		c.remove(c.pods[0], c.pods[gone].name)
		c.pods[gone].stop(t, grace(r5))
		delete(c.pods, gone)
	}
	c.waitMembers(c.pods[0], c.names(0, 1, 2)...)
	c.sqs(c.pods[1])
	c.replaceLostVolume(v, 1)
}

// replaceLostVolume kills pod ordinal and empties its volume, as a node
// and its local disk lost would: started again as it was, it must be
// fenced (exit non-zero); after fifoq cluster remove and an upgrade with
// cluster.rejoin, it must join anew, as the chart's README says.
func (c *testCluster) replaceLostVolume(v values, ordinal int) {
	t := c.t
	t.Helper()
	lost := c.pods[ordinal]
	lost.kill()
	if err := os.RemoveAll(c.k.dataDir(lost)); err != nil {
		t.Fatal(err)
	}
	r3 := decode(t, render(t, v))
	again := c.k.prepare(r3, ordinal)
	c.k.start(again)
	select {
	case <-again.exited:
		if again.exitErr == nil {
			t.Fatalf("%s started on an empty volume exited 0, want it fenced\n%s", again.name, again.logTail())
		}
		if !strings.Contains(again.logTail(), "fenced") {
			t.Fatalf("%s started on an empty volume exited (%v), but not fenced\n%s", again.name, again.exitErr, again.logTail())
		}
		t.Logf("%s on an empty volume: fenced, %v", again.name, again.exitErr)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s started on an empty volume still runs after 60 s, want it fenced\n%s", again.name, again.logTail())
	}
	other := c.pods[(ordinal+1)%3]
	c.remove(other, lost.name)
	if err := os.RemoveAll(c.k.dataDir(lost)); err != nil {
		t.Fatal(err)
	}
	rejoin := decode(t, render(t, v.with(values{"cluster.rejoin": []int{ordinal}})))
	c.start(rejoin, ordinal)
	c.waitMembers(other, c.names(0, 1, 2)...)
}

// TestOneNodeGrowsToThree starts the one pod of a rendering for one
// node, stops it, and starts the 3 pods of the same release upgraded to
// 3 replicas (cluster.initialMembers 1, as the upgrade keeps it): pod 0
// keeps its data dir and becomes the first member, pods 1 and 2 join,
// and a queue made before is there.
func TestOneNodeGrowsToThree(t *testing.T) {
	one := baseValues().with(values{"replicas": 1})
	c := newTestCluster(t, one)
	r1 := decode(t, render(t, one))
	c.start(r1, 0)
	c.sqs(c.pods[0], "--queue", "kept.fifo", "--keep-queue")
	c.pods[0].stop(t, grace(r1))

	r3 := decode(t, render(t, baseValues().with(values{"replicas": 3, "cluster.initialMembers": 1})))
	c.start(r3, 0, 1, 2)
	c.waitMembers(c.pods[2], c.names(0, 1, 2)...)
	if _, err := c.k.exec(c.pods[2], nil, "export", "kept.fifo", "-"); err != nil {
		t.Fatalf("the queue made by the node alone: %v", err)
	}
}
