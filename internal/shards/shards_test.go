package shards

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/testenv"
)

// openMember opens a cluster member of one node in dir with count shards
// beside its first group, and waits until it runs them.
func openMember(t testing.TB, dir string, count int, tweak ...func(*Config)) (*replog.Raft, *Set) {
	t.Helper()
	addr := testenv.FreeAddr(t)
	quiet := slog.New(slog.DiscardHandler)
	host, err := replog.OpenRaft(replog.RaftConfig{Dir: dir, NodeID: "n1", MinFreeBytes: -1, Logger: quiet, Engine: engine.Config{Region: "us-east-1"},
		Cluster: &replog.ClusterConfig{RaftAddr: addr, Peers: []replog.Peer{{ID: "n1", Addr: addr}}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Count: count, Dir: dir, Shard: replog.RaftConfig{MinFreeBytes: -1, Logger: quiet}, Logger: quiet}
	for _, f := range tweak {
		f(&cfg)
	}
	set, err := Open(host, cfg)
	if err != nil {
		host.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		set.Close()
		host.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for len(set.IDs()) < count || !host.Leading() {
		if time.Now().After(deadline) {
			t.Fatalf("the member runs shards %v after 20 s, want %d", set.IDs(), count)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range set.IDs() {
		l, _ := set.Shard(id)
		for !l.Leading() {
			if time.Now().After(deadline) {
				t.Fatalf("shard %d has no leader after 20 s", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return host, set
}

func queue(name string) api.QueueKey { return api.QueueKey{Account: "000000000000", Name: name} }

// create creates q in shard id of set (0: the first group, host).
func create(t *testing.T, host *replog.Raft, set *Set, id uint32, q api.QueueKey) {
	t.Helper()
	var l replog.Log = host
	if id != 0 {
		l, _ = set.Shard(id)
	}
	_, err := l.Apply(context.Background(), &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Entropy: 1,
		Request: &api.CreateQueueRequest{QueueName: q.Name}})
	if err != nil {
		t.Fatal(err)
	}
}

// placeAt records q's shard as id in the map, as a placement would, and
// creates q there.
func placeAt(t *testing.T, host *replog.Raft, set *Set, id uint32, q api.QueueKey) {
	t.Helper()
	if err := set.setOnce(t.Context(), queueKey(q), strconv.Itoa(int(id))); err != nil {
		t.Fatal(err)
	}
	create(t, host, set, id, q)
}

// TestPlaceSpreadsQueuesAndKeepsTheirShard places queues in a member with
// four shards: each new queue goes to the shard with the fewest (the
// lowest of those tied), never to the first group, a queue with a
// dead-letter queue goes beside it, a name keeps its shard, and a queue
// that was in the first group before the shards existed stays there.
func TestPlaceSpreadsQueuesAndKeepsTheirShard(t *testing.T) {
	host, set := openMember(t, t.TempDir(), 4)
	ctx := context.Background()
	old := queue("before-shards")
	create(t, host, set, 0, old)
	var got []uint32
	for i := range 5 {
		q := queue(fmt.Sprintf("q%d", i))
		id, err := set.Place(ctx, q, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		create(t, host, set, id, q)
		got = append(got, id)
	}
	if want := []uint32{1, 2, 3, 4, 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("five new queues went to shards %v, want %v", got, want)
	}
	if id, _ := set.Place(ctx, old, nil, ""); id != 0 {
		t.Fatalf("a queue of the first group was placed in shard %d", id)
	}
	if id, _ := set.Place(ctx, queue("q2"), nil, ""); id != got[2] || set.Of(queue("q2")) != got[2] {
		t.Fatalf("q2 moved from shard %d to %d", got[2], id)
	}
	dlq := queue("q3")
	if id, _ := set.Place(ctx, queue("with-dlq"), &dlq, ""); id != set.Of(dlq) {
		t.Fatalf("a queue went to shard %d, its dead-letter queue is in %d", id, set.Of(dlq))
	}
	if id, _ := set.Place(ctx, queue("with-old-dlq"), &old, ""); id != 0 {
		t.Fatalf("a queue whose dead-letter queue is in the first group went to shard %d", id)
	}
	missing := queue("no-such-queue")
	if id, _ := set.Place(ctx, queue("with-missing-dlq"), &missing, ""); id == 0 {
		t.Fatal("a queue whose dead-letter queue does not exist went to the first group")
	}
}

// TestPlaceOnceUnderRace places one name from many goroutines at once:
// they all get the same shard, the first placement in the log.
func TestPlaceOnceUnderRace(t *testing.T) {
	host, set := openMember(t, t.TempDir(), 2)
	// Fill shards unevenly, so that a placement that read a stale count
	// would choose another shard than the first one in the log.
	for i := range 4 {
		q := queue(fmt.Sprintf("fill%d", i))
		id, err := set.Place(context.Background(), q, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		create(t, host, set, id, q)
	}
	for round := range 20 {
		q := queue(fmt.Sprintf("raced%d", round))
		var wg sync.WaitGroup
		ids := make([]uint32, 8)
		for g := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, err := set.Place(context.Background(), q, nil, "")
				if err != nil {
					t.Error(err)
				}
				ids[g] = id
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("round %d: concurrent placements of one name gave shards %v", round, ids)
			}
		}
		if set.Of(q) != ids[0] {
			t.Fatalf("round %d: placed in %d, the map says %d", round, ids[0], set.Of(q))
		}
	}
}

// TestConcurrentPlacementsSpread places distinct names from many
// goroutines at once, as clients creating their queues together on a new
// cluster do: the shards must end up holding as many queues each, to
// within one, or the balancer would move queues under their first load.
func TestConcurrentPlacementsSpread(t *testing.T) {
	_, set := openMember(t, t.TempDir(), 4)
	for round := range 5 {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := set.Place(context.Background(), queue(fmt.Sprintf("r%d-g%d", round, g)), nil, ""); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		count := map[uint32]int{}
		for r := 0; r <= round; r++ {
			for g := range 4 {
				count[set.Of(queue(fmt.Sprintf("r%d-g%d", r, g)))]++
			}
		}
		for id := uint32(1); id <= 4; id++ {
			if count[id] != round+1 {
				t.Fatalf("after %d rounds of four concurrent placements the shards hold %v; want %d each", round+1, count, round+1)
			}
		}
	}
}

// TestShardsReopenWithTheirQueues closes a member with shards and opens
// its data dir again with no shard count configured: it runs the shards
// its map names, with their queues.
func TestShardsReopenWithTheirQueues(t *testing.T) {
	dir := t.TempDir()
	host, set := openMember(t, dir, 2)
	q := queue("kept")
	id, err := set.Place(context.Background(), q, nil, "")
	if err != nil || id == 0 {
		t.Fatalf("placed in %d (%v), want a shard", id, err)
	}
	create(t, host, set, id, q)
	set.Close()
	host.Close()

	_, set = openMember(t, dir, 0)
	deadline := time.Now().Add(20 * time.Second)
	l, ok := set.Shard(id)
	for !ok || set.Of(q) != id {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after a restart, shard %d is open: %v; the map puts the queue in %d", id, ok, set.Of(q))
		}
		time.Sleep(20 * time.Millisecond)
		l, ok = set.Shard(id)
	}
	for !l.Leading() {
		if time.Now().After(deadline) {
			t.Fatal("the shard has no leader 20 s after a restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	exists := false
	l.Read(func(e *engine.Engine) { _, exists = e.QueuePolicy(q) })
	if !exists {
		t.Fatal("the queue is gone from its shard after a restart")
	}
}

func TestShardKeyID(t *testing.T) {
	for key, want := range map[string]uint32{"shards/1": 1, "shards/12": 12} {
		if id, ok := shardKeyID(key); !ok || id != want {
			t.Errorf("shardKeyID(%q) = %d, %v", key, id, ok)
		}
	}
	for _, key := range []string{"shards/0", "shards/01", "shards/queue/a/b/c", "shards/x", "shards/", "shards/4294967296", "other/1"} {
		if id, ok := shardKeyID(key); ok {
			t.Errorf("shardKeyID(%q) = %d, want no shard", key, id)
		}
	}
}

// TestNoShardsNoLeaderPreference: a cluster without shards keeps its
// leader wherever it is. (A node used to prefer its lowest voter to lead
// the first group even with no shard, and handed that group's leadership
// over every five seconds: the leader of every cluster moved to its
// lowest node, at a moment of nobody's choosing.)
func TestNoShardsNoLeaderPreference(t *testing.T) {
	_, set := openMember(t, t.TempDir(), 0)
	if prefs := set.PreferredLeaders(); len(prefs) != 0 {
		t.Fatalf("a cluster without shards prefers leaders %v; want none", prefs)
	}
}

// TestRoutesByTheMapOnceItNamesShards: a member's map that comes to name
// a shard is routed by at once, not at the member's next periodic look. A
// member restarted reads its map from its log after it opened; one elected
// the first group's leader meanwhile carried out requests in the first
// group for up to half a second, and answered that their queues, placed
// in shards, did not exist.
func TestRoutesByTheMapOnceItNamesShards(t *testing.T) {
	_, set := openMember(t, t.TempDir(), 0)
	if set.Running() {
		t.Fatal("a map that names no shard is routed by")
	}
	// The record of a shard, as the first group's leader writes it and
	// this member applies it.
	if err := set.setMetas(t.Context(), shardPrefix+"1", "n1"); err != nil {
		t.Fatal(err)
	}
	if !set.Running() {
		t.Fatal("a map that names a shard is not routed by")
	}
}

// TestParseRecord reads the map's records of replicas: "ID=HOST:PORT"
// items, and a restored map's bare "ID" (Adopt), which is at its member's
// address, and refused for a node that is no member.
func TestParseRecord(t *testing.T) {
	s := &Set{}
	s.memberAddrs.Store(&map[string]string{"n1": "10.0.0.1:7000", "n2": "10.0.0.2:7000"})
	for _, tc := range []struct {
		rec  string
		want []replog.Peer
	}{
		{"n1=10.0.0.9:7000,n3=10.0.0.3:7000", []replog.Peer{{ID: "n1", Addr: "10.0.0.1:7000"}, {ID: "n3", Addr: "10.0.0.3:7000"}}},
		{"n2", []replog.Peer{{ID: "n2", Addr: "10.0.0.2:7000"}}},
		{"n2, n1", []replog.Peer{{ID: "n2", Addr: "10.0.0.2:7000"}, {ID: "n1", Addr: "10.0.0.1:7000"}}},
	} {
		got, err := s.parseRecord(tc.rec)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseRecord(%q) = %v, %v; want %v", tc.rec, got, err, tc.want)
		}
	}
	for _, bad := range []string{"n3", "n1=nowhere", "a b"} {
		if got, err := s.parseRecord(bad); err == nil {
			t.Errorf("parseRecord(%q) = %v, want an error", bad, got)
		}
	}
}

// TestReplacedMemberDoesNotBootstrap checks who bootstraps a shard: its
// first replicas' data dirs, whose incarnations the map records with the
// shard; a member replaced since (another incarnation under the same id)
// waits to be added, and a shard made before the incarnations were
// recorded is opened as before.
func TestReplacedMemberDoesNotBootstrap(t *testing.T) {
	host, set := openMember(t, t.TempDir(), 2)
	self := replog.Peer{ID: "n1", Addr: "a1"}
	other := replog.Peer{ID: "n2", Addr: "a2"}
	if v := set.meta(firstKey(1)); v != "n1="+host.Incarnation() {
		t.Fatalf("shard 1's first replicas' incarnations recorded as %q, want n1=%s", v, host.Incarnation())
	}
	for _, c := range []struct {
		rec  string
		boot bool
	}{
		{"", true}, // a shard from before the record
		{"n1=" + host.Incarnation() + ",n2=x", true}, // this data dir
		{"n1=,n2=x", true},                           // an incarnation unknown then
		{"n1=another,n2=x", false},                   // a data dir replaced since
	} {
		if err := set.setMeta(t.Context(), firstKey(7), c.rec); err != nil {
			t.Fatal(err)
		}
		got := set.bootReplicas(7, []replog.Peer{self, other})
		if boots := slices.ContainsFunc(got, func(p replog.Peer) bool { return p.ID == "n1" }); boots != c.boot || !slices.Contains(got, other) {
			t.Fatalf("record %q: boot replicas %v, want n1 among them: %v", c.rec, got, c.boot)
		}
	}
}
