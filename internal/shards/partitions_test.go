package shards

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// TestLayoutRecords reads and writes layout records and partition record
// keys, and refuses malformed ones.
func TestLayoutRecords(t *testing.T) {
	l, ok := parseLayout("4 0:0 1073741824:3 2147483648:1")
	if !ok || l.Next != 4 || len(l.Parts) != 3 {
		t.Fatalf("parseLayout = %+v, %v", l, ok)
	}
	if got := l.String(); got != "4 0:0 1073741824:3 2147483648:1" {
		t.Fatalf("String = %q", got)
	}
	for h, want := range map[uint32]uint32{0: 0, 1<<30 - 1: 0, 1 << 30: 3, 1<<31 - 1: 3, 1 << 31: 1, 1<<32 - 1: 1} {
		if got := l.PartOf(h); got != want {
			t.Fatalf("PartOf(%d) = %d, want %d", h, got, want)
		}
	}
	for _, bad := range []string{"", "4", "4 5:0", "4 0:0 0:1", "4 0:0 9:3 8:1", "4 0:0 9:4", "4 0:0 9:0", "x 0:0", "4 0:0 4294967296:1", "4 0-0"} {
		if _, ok := parseLayout(bad); ok {
			t.Fatalf("parseLayout(%q) accepted", bad)
		}
	}
	q := api.QueueKey{Account: "000000000000", Region: "eu-west-1", Name: "jobs.fifo", Part: 12}
	if got := queueKey(q); got != "shards/queue/000000000000/eu-west-1/jobs.fifo#12" {
		t.Fatalf("queueKey = %q", got)
	}
	if back, ok := parseQueueRecordKey(recordName(q)); !ok || back != q {
		t.Fatalf("parseQueueRecordKey(%q) = %+v, %v", recordName(q), back, ok)
	}
	if got := partsKey(q); got != "shards/parts/000000000000/eu-west-1/jobs.fifo" {
		t.Fatalf("partsKey = %q", got)
	}
	for _, bad := range []string{"a//q#0", "a//q#x", "a//#1", "a//q#10000"} {
		if _, ok := parseQueueRecordKey(bad); ok {
			t.Fatalf("parseQueueRecordKey(%q) accepted", bad)
		}
	}
	for _, r := range []splitRecord{{part: 3, at: 99}, {merge: true, part: 3}} {
		if back, ok := parseSplit(r.String()); !ok || back != r {
			t.Fatalf("parseSplit(%q) = %+v, %v", r.String(), back, ok)
		}
	}
}

// TestSplitAndMergeInTheMap splits a queue's partitions and merges them
// back through the map: the engine of the shard holds the partitions the
// layout names, each partition's record names its shard, numbers are
// never reused, a split left half done by a deposed leader is finished
// from its record, and a partition neither moves while it splits nor
// merges with one in another shard.
func TestSplitAndMergeInTheMap(t *testing.T) {
	_, set := openMember(t, t.TempDir(), 3)
	ctx := context.Background()
	q, shard, g := createHighThroughput(t, set)
	for i := range 20 {
		grp := "g" + strconv.Itoa(i)
		if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: q, MessageIDs: []string{"m-" + grp},
			Request: &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: grp, MessageGroupId: grp, MessageDeduplicationId: grp}}); err != nil {
			t.Fatal(err)
		}
	}
	// stored returns the messages each partition of q holds in the shard.
	stored := func(parts ...uint32) []int {
		var out []int
		g.Read(func(e *engine.Engine) {
			for _, p := range parts {
				k := q
				k.Part = p
				n, _ := e.StoredMessages(k)
				out = append(out, n)
			}
		})
		return out
	}
	check := func(want string) {
		t.Helper()
		l, ok := set.Layout(q)
		if !ok || l.String() != want {
			t.Fatalf("layout %q (%v), want %q", l.String(), ok, want)
		}
		for _, p := range l.Parts {
			k := q
			k.Part = p.Part
			if set.Of(k) != shard {
				t.Fatalf("partition %d's record names shard %d, want %d", p.Part, set.Of(k), shard)
			}
		}
	}

	p1, err := set.Split(ctx, q, 1<<31)
	if err != nil || p1 != 1 {
		t.Fatalf("Split = %d, %v", p1, err)
	}
	check("2 0:0 2147483648:1")
	half := q
	half.Part = 1
	p2, err := set.Split(ctx, half, 3<<30)
	if err != nil || p2 != 2 {
		t.Fatalf("Split of partition 1 = %d, %v", p2, err)
	}
	check("3 0:0 2147483648:1 3221225472:2")
	if n := stored(0, 1, 2); n[0]+n[1]+n[2] != 20 || n[0] == 0 || n[1] == 0 || n[2] == 0 {
		t.Fatalf("partitions hold %v messages, want 20 spread over the three", n)
	}
	if _, err := set.Split(ctx, half, 1<<30); !errors.Is(err, ErrNoPartition) {
		t.Fatalf("Split of partition 1 outside its range: %v", err)
	}
	if err := set.Merge(ctx, q, 2); !errors.Is(err, ErrNoPartition) {
		t.Fatalf("Merge of partitions that do not touch: %v", err)
	}

	// A leader deposed in the middle of a split left its record: the next
	// one finishes it, with the number the record took.
	two := q
	two.Part = 2
	if err := set.setOnce(ctx, splitKey(two), splitRecord{part: 3, at: 7 << 29}.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Move(ctx, two, shard%3+1); !errors.Is(err, ErrSplitUnderWay) {
		t.Fatalf("Move of a partition while it splits: %v", err)
	}
	set.resumeSplits()
	check("4 0:0 2147483648:1 3221225472:2 3758096384:3")
	if v := set.meta(splitKey(two)); v != "" {
		t.Fatalf("the split's record is left: %q", v)
	}

	// Merged back, one by one, into partition 0: whole again, and the
	// next split takes a new number.
	for _, c := range []struct {
		into api.QueueKey
		part uint32
	}{{two, 3}, {half, 2}, {q, 1}} {
		if err := set.Merge(ctx, c.into, c.part); err != nil {
			t.Fatalf("Merge of %d into %d: %v", c.part, c.into.Part, err)
		}
		k := q
		k.Part = c.part
		if set.Of(k) != 0 {
			t.Fatalf("partition %d merged away keeps its record", c.part)
		}
	}
	check("4 0:0")
	if n := stored(0); n[0] != 20 {
		t.Fatalf("the merged queue holds %d messages, want 20", n[0])
	}
	if p, err := set.Split(ctx, q, 1<<31); err != nil || p != 4 {
		t.Fatalf("Split after the merges = %d, %v; want partition 4", p, err)
	}

	// Partitions in two shards do not merge.
	four := q
	four.Part = 4
	if _, err := set.Move(ctx, four, shard%3+1); err != nil {
		t.Fatal(err)
	}
	if err := set.Merge(ctx, q, 4); !errors.Is(err, ErrNotBeside) {
		t.Fatalf("Merge of partitions in two shards: %v", err)
	}

	// A queue the engine does not split leaves no record behind.
	plain := queue("plain")
	at, err := set.Place(ctx, plain, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	create(t, nil, set, at, plain)
	var ae *api.Error
	if _, err := set.Split(ctx, plain, 1<<31); !errors.As(err, &ae) || ae.Code != "UnsupportedOperation" {
		t.Fatalf("Split of a standard queue: %v", err)
	}
	one := plain
	one.Part = 1
	// A record cached before the refusal, under the epoch that is
	// still the map's, would be read from the cache.
	if v := set.meta(splitKey(plain)); v != "" || set.Of(one) != 0 {
		t.Fatalf("a refused split left its record %q, or a record of partition 1 (shard %d)", v, set.Of(one))
	}
}

// TestCacheFollowsTheEpochAtOnce changes a split queue's layout, a
// partition's record and the map's epoch as a merge driven by another
// member does, which this member only applies: the records and layouts it
// cached are not used a moment longer. A member that noted the epoch only
// now and then went on routing by the layout from before the merge while
// reading the records from after it, and sent requests for the partition
// merged away to the first group, which answered that the queue does not
// exist.
func TestCacheFollowsTheEpochAtOnce(t *testing.T) {
	set, q, shard := splitInTwo(t)
	ctx := context.Background()
	one := q
	one.Part = 1
	if parts := set.Parts(q); len(parts) != 2 || set.Of(one) != shard || set.PartOf(q, 3<<30) != 1 {
		t.Fatalf("after the split: partitions %v, partition 1 in shard %d, hash 3<<30 in partition %d", parts, set.Of(one), set.PartOf(q, 3<<30))
	}
	// Cached now. What the merge's driver writes, applied here as a
	// member applies the first group's log:
	if err := set.setMetas(ctx, partsKey(q), "2 0:0", queueKey(one), "", epochKey, newMoveID()); err != nil {
		t.Fatal(err)
	}
	if parts, p, at := set.Parts(q), set.PartOf(q, 3<<30), set.Of(one); parts != nil || p != 0 || at != 0 {
		t.Fatalf("right after the merge's records: partitions %v, hash 3<<30 in partition %d, partition 1 in shard %d; want whole, 0, none", parts, p, at)
	}
}

// BenchmarkRouteLookup is what routing a request of a split queue asks
// this node's map, from its caches: the partition holding the request's
// group, then that partition's shard. Each lookup checks the map's epoch
// in the first group's state (Epoch).
func BenchmarkRouteLookup(b *testing.B) {
	set, q, _ := splitInTwo(b)
	time.Sleep(600 * time.Millisecond) // a member's periodic work has run since the split
	var unplaced atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		h := uint32(0)
		for pb.Next() {
			h += 0x9e3779b9
			k := q
			k.Part = set.PartOf(q, h)
			if set.Of(k) == 0 {
				unplaced.Add(1)
			}
		}
	})
	if n := unplaced.Load(); n != 0 {
		b.Fatalf("%d lookups found no shard", n)
	}
}

// splitInTwo opens a member with three shards that neither spreads nor
// merges back on its own, and places, creates and splits a high-throughput
// FIFO queue there at hash 1<<31: the queue, whose two partitions are in
// the shard returned.
func splitInTwo(tb testing.TB) (*Set, api.QueueKey, uint32) {
	tb.Helper()
	_, set := openMember(tb, tb.TempDir(), 3, func(c *Config) { c.Spread, c.MergeIdle = -1, -1 })
	q, shard, _ := createHighThroughput(tb, set)
	if _, err := set.Split(context.Background(), q, 1<<31); err != nil {
		tb.Fatal(err)
	}
	return set, q, shard
}

// createHighThroughput gives set steps carried out in this process, and
// places and creates the high-throughput FIFO queue ht.fifo: the queue,
// its shard and that shard's log.
func createHighThroughput(tb testing.TB, set *Set) (api.QueueKey, uint32, *replog.Raft) {
	tb.Helper()
	set.SetSteps(&localSteps{set: set})
	ctx := context.Background()
	q := api.QueueKey{Account: "000000000000", Name: "ht.fifo"}
	shard, err := set.Place(ctx, q, nil, "")
	if err != nil {
		tb.Fatal(err)
	}
	g, _ := set.Shard(shard)
	if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Entropy: 1, Request: &api.CreateQueueRequest{QueueName: q.Name,
		Attributes: map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}}}); err != nil {
		tb.Fatal(err)
	}
	return q, shard, g
}
