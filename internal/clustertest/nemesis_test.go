package clustertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	mrand "math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/testenv"
)

// TestNemesis runs the failover test's workload (producers and consumers
// over every node, the history checked for loss, undone deletes, order,
// groups held twice and linearizability) on three members that talk to
// each other over a real network, while a nemesis breaks it in the ways an
// operator meets, one after another:
//
//  0. every member starts as an older fifoq (the format-capped stand-in of
//     TestRollingUpgrade) and is upgraded in turn, with SIGTERM; the
//     cluster must then write the newer log entry format;
//  1. the leader is cut off from the other members (its clients still
//     reach it): a minority leader, which must acknowledge nothing, and a
//     majority that elects another; then the network heals;
//  2. a follower is cut off, and heals;
//  3. every member is restarted in turn with SIGTERM (a rolling restart);
//  4. a follower is restarted with its clock 3 s ahead: it must not keep
//     the leadership, even when the leader stops twice; then restarted
//     right;
//  5. a follower's log writes fail with EIO (the fifoq_faults build's
//     error-injecting file layer): it must exit non-zero; restarted on a
//     sound disk, it catches up;
//  6. a follower's disk fills (its data dir is a 256 MB tmpfs, filled by
//     another file): it must exit non-zero; its disk is freed and it is
//     restarted, and catches up;
//  7. a follower is killed, its data dir wiped, and started again with its
//     usual flags: it must exit non-zero (fenced), and the other two go on.
//
// Each member runs in a network namespace of its own (needs root): one
// link to a bridge that carries the members' traffic (a partition takes a
// member's port on it down), one to the test for its SQS endpoint. So the
// members listen beyond loopback without TLS, with --insecure and
// --raft-insecure. A longer run repeats faults 1 to 6:
//
//	go test ./internal/clustertest -run TestNemesis -cluster.nemesis-rounds=5
func TestNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "partitions in network namespaces, clock skew, disk faults and upgrades, about a minute")
	lab := newNetLab(t, 3)
	mnt := mountTmpfs(t, "256m")
	bin := faultyBinary(t)
	r := &run{
		// The nemesis takes minutes: producers pace themselves so that
		// consumers keep up and the history stays small enough to check.
		sendGap: 100 * time.Millisecond,
		tweak: func(i int, nd *node) {
			nd.bin = bin
			nd.httpAddr, nd.raftAddr = lab.sqsAddr(i), lab.raftAddr(i)
			nd.wrap = []string{"ip", "netns", "exec", lab.nodeNS(i)}
			nd.args = []string{"--insecure", "--raft-insecure"}
			// Every member starts as the older fifoq (see
			// TestRollingUpgrade), upgraded by the nemesis's first fault.
			nd.env = []string{olderFormat}
			if i == 2 {
				nd.dataDir = mnt
				nd.env = append(nd.env, "FIFOQ_MIN_FREE_DISK_MB=0")
			}
		},
		nemesis: func(t *testing.T, c *cluster, rng *mrand.Rand, pause func()) {
			pause()
			nemesisUpgrade(t, c)
			for round := range *flagNemesisRounds {
				if *flagNemesisRounds > 1 {
					t.Logf("nemesis: round %d", round+1)
				}
				nemesisRound(t, c, lab, mnt, rng, pause)
			}
			pause()
			nemesisWipedMember(t, c, rng)
			pause()
		},
	}
	runFailover(t, r)
	if len(r.problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", r.seed, strings.Join(r.problems, "\n  "))
	}
}

// TestNemesisWithShards runs the failover test's workload on a queue in
// one of three shards (--shards 3), on three members in network
// namespaces as TestNemesis's, while a nemesis cuts the shard's leader off
// from the other members (a minority leader of the shard, which must
// acknowledge nothing, while the majority elects another; the other
// groups lose a replica, or their leader too), then a follower of the
// shard, moves the queue to another shard while a member is cut off
// (-cluster.netns-moves times, the member cut off each time drawn from
// the three), and restarts every member in turn with SIGTERM (each hands
// the leaderships it holds over). The history checker must find nothing
// acknowledged lost, no delete undone, order kept per group and every
// group linearizable.
func TestNemesisWithShards(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "partitions of a shard's leader in network namespaces and a rolling restart, about a minute")
	lab := newNetLab(t, 3)
	r := &run{
		sendGap: 100 * time.Millisecond,
		shards:  3,
		tweak: func(i int, nd *node) {
			nd.httpAddr, nd.raftAddr = lab.sqsAddr(i), lab.raftAddr(i)
			nd.wrap = []string{"ip", "netns", "exec", lab.nodeNS(i)}
			nd.args = []string{"--insecure", "--raft-insecure"}
		},
		movable: true,
		nemesis: func(t *testing.T, c *cluster, rng *mrand.Rand, pause func()) {
			pause()
			nemesisPartitionLeader(t, c, lab)
			pause()
			nemesisCutFollower(t, c, lab, rng)
			for range *flagNetnsMoves {
				pause()
				nemesisMoveWhileCut(t, c, lab, rng)
			}
			pause()
			nemesisRollingRestart(t, c)
			pause()
		},
	}
	runFailover(t, r)
	if len(r.problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", r.seed, strings.Join(r.problems, "\n  "))
	}
}

// flagNetnsMoves is how many times TestNemesisWithShards moves its queue
// with a member cut off.
var flagNetnsMoves = flag.Int("cluster.netns-moves", 3, "how many times TestNemesisWithShards moves its queue between shards with a member cut off")

// nemesisMoveWhileCut cuts one of the members off from the others (the
// queue's shard's leader, one of its followers, or the first group's
// leader, which drives moves), moves the FIFO queue under test to the next
// shard through one of the others, heals the cut, and waits until only
// the new shard holds the queue. A move the cut member began before it
// was cut off is finished by the majority's leader, or abandoned and
// asked again.
func nemesisMoveWhileCut(t *testing.T, c *cluster, lab *netLab, rng *mrand.Rand) {
	const name = "failover.fifo"
	from := placedShards(c)[name]
	to := from%3 + 1
	cut := c.nodes[rng.Intn(len(c.nodes))]
	t.Logf("nemesis: cut %s off, move the queue from shard %d to shard %d", cut.id, from, to)
	lab.cut(indexOf(c, cut))
	via := &cluster{t: t, nodes: []*node{c.other(cut)}}
	url := "http://" + via.nodes[0].httpAddr + "/000000000000/" + name
	start := time.Now()
	retrying(t, "fifoq cluster move", func() error {
		err := moveQueue(via, url, to)
		if err != nil {
			t.Logf("nemesis: the move answered, after %v: %v", time.Since(start).Round(time.Millisecond), err)
		}
		return err
	})
	t.Logf("nemesis: moved in %v with %s cut off", time.Since(start).Round(time.Millisecond), cut.id)
	lab.heal(indexOf(c, cut))
	waitQueueIn(t, c, name, to)
}

// shardsOrNone is a node's groups as its /cluster/shards shows them, or
// none if it did not answer.
func shardsOrNone(nd *node) []server.ShardStatus {
	if st := shardsOf(nd); st != nil {
		return st.Shards
	}
	return nil
}

// flagNemesisRounds repeats TestNemesis's faults, but the last, for a
// longer run.
var flagNemesisRounds = flag.Int("cluster.nemesis-rounds", 1, "how many times TestNemesis runs its faults before it wipes a member (≥ 5 for a soak)")

// nemesisRound runs every fault of TestNemesis but the wiped member, which
// ends a run.
func nemesisRound(t *testing.T, c *cluster, lab *netLab, mnt string, rng *mrand.Rand, pause func()) {
	pause()
	nemesisPartitionLeader(t, c, lab)
	pause()
	nemesisCutFollower(t, c, lab, rng)
	pause()
	nemesisRollingRestart(t, c)
	pause()
	nemesisSkewedClock(t, c, rng)
	pause()
	nemesisFailingDisk(t, c, rng)
	pause()
	nemesisFullDisk(t, c, mnt)
}

// nemesisFailingDisk restarts a follower whose log segments' writes and
// syncs fail with EIO 2 s after it starts (the fifoq_faults build's
// FIFOQ_TEST_WAL_EIO_AFTER): it must exit non-zero; restarted on a sound
// disk, it catches up.
func nemesisFailingDisk(t *testing.T, c *cluster, rng *mrand.Rand) {
	nd := follower(c, rng)
	t.Logf("nemesis: restart %s on a disk that fails with EIO after 2 s", nd.id)
	restore := c.restartWithEnv(nd, "FIFOQ_TEST_WAL_EIO_AFTER=2s")
	select {
	case <-nd.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s still runs 60 s after its disk began to fail; its log ends:\n%s", nd.id, nd.tail(10))
	}
	if code := nd.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("%s exited 0 when its disk failed; want non-zero", nd.id)
	}
	if log := nd.tail(20); !strings.Contains(log, "storage fault") {
		t.Errorf("%s's log does not name the storage fault; it ends:\n%s", nd.id, log)
	}
	restore()
	c.restart(nd)
	waitReady(t, nd)
	t.Logf("nemesis: %s stopped on EIO, and is back", nd.id)
}

// olderFormat makes a fifoq_faults build stand in for the fifoq before log
// entry format 5 (TestRollingUpgrade).
const olderFormat = "FIFOQ_TEST_MAX_ENTRY_FORMAT=4"

// nemesisUpgrade upgrades every member in turn from the older fifoq, with
// SIGTERM, and waits until the cluster writes the newer format.
func nemesisUpgrade(t *testing.T, c *cluster) {
	expectFormats(t, c, 4, 5*time.Second)
	for _, nd := range c.nodes {
		t.Logf("nemesis: upgrade %s", nd.id)
		c.sigterm(nd)
		var env []string
		for _, kv := range nd.env {
			if kv != olderFormat {
				env = append(env, kv)
			}
		}
		nd.env = env
		c.restart(nd)
		waitReady(t, nd)
	}
	expectFormats(t, c, newestFormat, 15*time.Second)
}

// restartWithEnv stops nd with SIGTERM and starts it again with kv added
// to its environment; restore gives it back its environment for its next
// start.
func (c *cluster) restartWithEnv(nd *node, kv string) (restore func()) {
	env := nd.env
	c.sigterm(nd)
	nd.env = append(append([]string(nil), env...), kv)
	c.restart(nd)
	return func() { nd.env = env }
}

// follower returns a member that does not lead what the test strikes
// (cluster.target: the cluster, or the test queue's shard).
func follower(c *cluster, rng *mrand.Rand) *node {
	return c.nodes[(indexOf(c, c.target())+1+rng.Intn(2))%len(c.nodes)]
}

// nemesisCutFollower cuts a follower off from the other members for 3 s.
func nemesisCutFollower(t *testing.T, c *cluster, lab *netLab, rng *mrand.Rand) {
	f := follower(c, rng)
	t.Logf("nemesis: cut follower %s off for 3 s", f.id)
	lab.cut(indexOf(c, f))
	time.Sleep(3 * time.Second)
	lab.heal(indexOf(c, f))
}

// nemesisRollingRestart restarts every member in turn with SIGTERM.
func nemesisRollingRestart(t *testing.T, c *cluster) {
	for _, nd := range c.nodes {
		t.Logf("nemesis: SIGTERM and restart %s", nd.id)
		c.sigterm(nd)
		c.restart(nd)
		waitReady(t, nd)
	}
}

// nemesisPartitionLeader cuts the leader of what the test strikes (the
// cluster, or the test queue's shard: cluster.target) off from the other
// members until they have elected another, holds the partition a while
// longer, and heals it.
func nemesisPartitionLeader(t *testing.T, c *cluster, lab *netLab) {
	old := c.target()
	t.Logf("nemesis: cut leader %s off from the other members", old.id)
	cut := time.Now()
	lab.cut(indexOf(c, old))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if l := majorityLeader(c, old); l != nil {
			t.Logf("nemesis: %s elected %v after the cut", l.id, time.Since(cut).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the majority elected no leader within 30 s of cutting %s off", old.id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	lab.heal(indexOf(c, old))
	t.Logf("nemesis: healed %s", old.id)
}

// majorityLeader returns the leader of what the test strikes that the
// members other than cut agree on.
func majorityLeader(c *cluster, cut *node) *node {
	votes := map[string]int{}
	for _, nd := range c.nodes {
		if nd != cut {
			if id := c.leaderSeenBy(nd); id != "" && id != cut.id {
				votes[id]++
			}
		}
	}
	for _, nd := range c.nodes {
		if votes[nd.id] >= len(c.nodes)/2+1 {
			return nd
		}
	}
	return nil
}

// nemesisSkewedClock restarts a follower with its clock 3 s ahead (more
// than --max-clock-offset's 500ms) and stops the leader twice: the skewed
// member must not keep the leadership. It is then restarted right.
func nemesisSkewedClock(t *testing.T, c *cluster, rng *mrand.Rand) {
	skewed := follower(c, rng)
	t.Logf("nemesis: restart %s with its clock 3 s ahead", skewed.id)
	restore := c.restartWithEnv(skewed, "FIFOQ_TEST_CLOCK_SKEW=3s")
	// Let it measure the others' clocks.
	time.Sleep(3 * time.Second)
	for range 2 {
		l := c.leader()
		if l == skewed {
			t.Fatalf("%s, whose clock is 3 s ahead, leads", skewed.id)
		}
		c.sigterm(l)
		// Raft may elect it (nothing stops a member from standing), but
		// it hands the leadership over at once and serves nothing as
		// leader meanwhile (the history check would see it).
		var since time.Time
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
			switch {
			case skewed.leaderOf() != skewed.id:
				since = time.Time{}
			case since.IsZero():
				since = time.Now()
			case time.Since(since) > time.Second:
				t.Fatalf("%s, whose clock is 3 s ahead, has led for over a second", skewed.id)
			}
			time.Sleep(20 * time.Millisecond)
		}
		c.restart(l)
		waitReady(t, l)
	}
	c.sigterm(skewed)
	restore()
	c.restart(skewed)
	waitReady(t, skewed)
}

// nemesisFullDisk fills the tmpfs that holds node 3's data dir with
// another file: the member must stop, exiting non-zero. The file is then
// removed and the member restarted; it must catch up.
func nemesisFullDisk(t *testing.T, c *cluster, mnt string) {
	nd := c.nodes[2]
	if nd.dataDir != mnt {
		t.Fatalf("%s's data dir is not the tmpfs", nd.id)
	}
	t.Logf("nemesis: fill %s's disk", nd.id)
	fill := filepath.Join(mnt, "..fill")
	// dd stops at ENOSPC and says so; that is the point.
	_ = exec.Command("dd", "if=/dev/zero", "of="+fill, "bs=1M").Run()
	// The member may have room left in files it made before (a log
	// segment is allocated whole, and one made as it restarted from an
	// earlier fault is empty): messages of almost 1 MiB to a queue of
	// their own, from four senders at once, make it need more within
	// seconds even on a slow machine (one sender of 256 KiB messages
	// once took longer than the deadline).
	ballast := c.createQueue("ballast", nil)
	big := strings.Repeat("b", 1000<<10)
	via := c.nodes[(indexOf(c, nd)+1)%len(c.nodes)]
	deadline := time.Now().Add(60 * time.Second)
	stop := make(chan struct{})
	var senders sync.WaitGroup
	for range 4 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			client := newClient(via.httpAddr, 5*time.Second)
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = client.SendMessage(context.Background(),
					&sqs.SendMessageInput{QueueUrl: aws.String(ballast), MessageBody: aws.String(big)})
			}
		}()
	}
	select {
	case <-nd.done:
		close(stop)
		senders.Wait()
	case <-time.After(time.Until(deadline)):
		close(stop)
		senders.Wait()
		t.Fatalf("%s still runs 60 s after its disk filled; its log ends:\n%s", nd.id, nd.tail(10))
	}
	if _, err := newClient(via.httpAddr, 5*time.Second).DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(ballast)}); err != nil {
		t.Logf("delete the ballast queue: %v", err)
	}
	if code := nd.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("%s exited 0 when its disk filled; want non-zero", nd.id)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	c.restart(nd)
	waitReady(t, nd)
	t.Logf("nemesis: %s stopped on the full disk, and is back", nd.id)
}

// nemesisWipedMember kills a follower, wipes its data dir and starts it
// with its usual flags: it must exit non-zero, fenced. It stays down.
func nemesisWipedMember(t *testing.T, c *cluster, rng *mrand.Rand) {
	nd := follower(c, rng)
	t.Logf("nemesis: kill %s, wipe its data dir, start it again", nd.id)
	c.kill(nd)
	entries, err := os.ReadDir(nd.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(nd.dataDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	c.start(nd, "")
	select {
	case <-nd.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the wiped member %s still runs 30 s after its start; its log ends:\n%s", nd.id, nd.tail(10))
	}
	if code := nd.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the wiped member exited 0; want non-zero")
	}
	if log := nd.tail(20); !strings.Contains(log, "fifoq cluster remove "+nd.id) {
		t.Errorf("the wiped member's log does not say to remove it; it ends:\n%s", log)
	}
}

// mountTmpfs mounts a tmpfs of the given size for the test (needs root).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).Run(); err != nil {
		needRoot(t, fmt.Sprintf("cannot mount a tmpfs: %v", err))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// needRoot skips the test, or fails it where CI says root tests must run
// (FIFOQ_REQUIRE_ROOT_TESTS), so that it cannot pass there by skipping.
func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("FIFOQ_REQUIRE_ROOT_TESTS") != "" {
		t.Fatalf("%s, and FIFOQ_REQUIRE_ROOT_TESTS is set", why)
	}
	t.Skipf("%s (needs root)", why)
}

// netLab is a network for the members: each in a network namespace of its
// own, linked to a bridge (in a namespace of its own too) for the
// members' traffic, and linked directly to the test's namespace for its
// SQS endpoint.
type netLab struct {
	t      *testing.T
	prefix string // of every namespace and link name
	subnet int    // the third byte of every address
	n      int
}

// newNetLab makes a network for n members and removes it when the test
// ends.
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	var b [3]byte
	_, _ = rand.Read(b[:])
	lab := &netLab{t: t, prefix: "fq" + hex.EncodeToString(b[:2]), subnet: 1 + int(b[2])%250, n: n}
	if err := exec.Command("ip", "netns", "add", lab.switchNS()).Run(); err != nil {
		needRoot(t, fmt.Sprintf("cannot make a network namespace: %v", err))
	}
	t.Cleanup(lab.remove)
	lab.ip("-n", lab.switchNS(), "link", "add", "br0", "type", "bridge")
	lab.ip("-n", lab.switchNS(), "link", "set", "br0", "up")
	for i := range n {
		ns := lab.nodeNS(i)
		lab.ip("netns", "add", ns)
		lab.ip("-n", ns, "link", "set", "lo", "up")
		// The members' network: node side "p", bridge side "s".
		p, s := fmt.Sprintf("%s-%dp", lab.prefix, i), lab.switchPort(i)
		lab.ip("link", "add", p, "type", "veth", "peer", "name", s)
		lab.ip("link", "set", p, "netns", ns)
		lab.ip("link", "set", s, "netns", lab.switchNS())
		lab.ip("-n", lab.switchNS(), "link", "set", s, "master", "br0")
		lab.ip("-n", lab.switchNS(), "link", "set", s, "up")
		lab.ip("-n", ns, "addr", "add", fmt.Sprintf("10.231.%d.%d/24", lab.subnet, i+1), "dev", p)
		lab.ip("-n", ns, "link", "set", p, "up")
		// The test's link to its SQS endpoint: test side "c", node side "d".
		cl, d := fmt.Sprintf("%s-%dc", lab.prefix, i), fmt.Sprintf("%s-%dd", lab.prefix, i)
		lab.ip("link", "add", cl, "type", "veth", "peer", "name", d)
		lab.ip("link", "set", d, "netns", ns)
		lab.ip("addr", "add", fmt.Sprintf("10.%d.%d.1/24", 232+i, lab.subnet), "dev", cl)
		lab.ip("link", "set", cl, "up")
		lab.ip("-n", ns, "addr", "add", fmt.Sprintf("10.%d.%d.2/24", 232+i, lab.subnet), "dev", d)
		lab.ip("-n", ns, "link", "set", d, "up")
	}
	return lab
}

func (lab *netLab) switchNS() string        { return lab.prefix + "-sw" }
func (lab *netLab) nodeNS(i int) string     { return fmt.Sprintf("%s-n%d", lab.prefix, i) }
func (lab *netLab) switchPort(i int) string { return fmt.Sprintf("%s-%ds", lab.prefix, i) }

// raftAddr is member i's address on the members' network.
func (lab *netLab) raftAddr(i int) string { return fmt.Sprintf("10.231.%d.%d:9325", lab.subnet, i+1) }

// sqsAddr is member i's SQS endpoint, on its link to the test.
func (lab *netLab) sqsAddr(i int) string { return fmt.Sprintf("10.%d.%d.2:9324", 232+i, lab.subnet) }

// cut takes member i off the members' network; heal puts it back.
func (lab *netLab) cut(i int) {
	lab.ip("-n", lab.switchNS(), "link", "set", lab.switchPort(i), "down")
}

func (lab *netLab) heal(i int) {
	lab.ip("-n", lab.switchNS(), "link", "set", lab.switchPort(i), "up")
}

// ip runs ip(8), failing the test if it fails.
func (lab *netLab) ip(args ...string) {
	lab.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		lab.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the namespaces, and with them every link.
func (lab *netLab) remove() {
	for i := range lab.n {
		_ = exec.Command("ip", "netns", "del", lab.nodeNS(i)).Run()
	}
	_ = exec.Command("ip", "netns", "del", lab.switchNS()).Run()
}
