package shards

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/testenv"
)

// TestSpreadAndSplitBusyPartitions: a high-throughput FIFO queue created
// in one shard of three and sent to is spread by spreadQueues over all
// three, one partition in each, its messages with it; a plain FIFO queue
// beside it, and a high-throughput one nothing was sent to, are left
// whole. A partition then busier than the split rate in two
// rounds of balancing in a row (not one: a burst) splits in two, and its
// new half moves to another shard.
func TestSpreadAndSplitBusyPartitions(t *testing.T) {
	_, set := openMember(t, t.TempDir(), 3, func(c *Config) {
		// The test spreads and balances by hand: the follow loop's own
		// rounds would race its sends and readings.
		c.QueueBalance, c.Spread, c.SplitRate = -1, time.Hour, 1
	})
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	ht, plain, unused := queue("ht.fifo"), queue("plain.fifo"), queue("unused.fifo")
	for _, q := range []api.QueueKey{ht, plain, unused} {
		if err := set.setOnce(ctx, queueKey(q), "1"); err != nil {
			t.Fatal(err)
		}
		attrs := map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup"}
		if q != plain {
			attrs["FifoThroughputLimit"] = "perMessageGroupId"
		}
		g, _ := set.Shard(1)
		if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Entropy: 1,
			Request: &api.CreateQueueRequest{QueueName: q.Name, Attributes: attrs}}); err != nil {
			t.Fatal(err)
		}
	}
	sends := 0
	sendFIFO := func(q api.QueueKey, group string) {
		t.Helper()
		k := q
		k.Part = set.PartOf(q, api.GroupHash(group))
		g, _ := set.Shard(set.Of(k))
		sends++
		body := group + "-" + strconv.Itoa(sends)
		if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: k, MessageIDs: []string{"m-" + body},
			Request: &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: body, MessageGroupId: group, MessageDeduplicationId: body}}); err != nil {
			t.Fatalf("send to partition %d in shard %d: %v", k.Part, set.Of(k), err)
		}
	}
	for i := range 30 {
		sendFIFO(ht, "g"+strconv.Itoa(i))
	}

	set.spreadQueues(steps)
	l, ok := set.Layout(ht)
	if want := "3 0:0 1431655765:1 2863311530:2"; !ok || l.String() != want {
		t.Fatalf("after spreading, ht.fifo's layout is %q (%v), want %q: three equal shares", l.String(), ok, want)
	}
	per := set.partsPerShard(ht, l)
	if len(per[1]) != 1 || len(per[2]) != 1 || len(per[3]) != 1 {
		t.Fatalf("ht.fifo's partitions by shard: %v, want one in each", per)
	}
	stored := 0
	for _, p := range l.Parts {
		k := ht
		k.Part = p.Part
		g, _ := set.Shard(set.Of(k))
		g.Read(func(e *engine.Engine) { n, _ := e.StoredMessages(k); stored += n })
	}
	if stored != 30 {
		t.Fatalf("the spread partitions hold %d messages, want 30", stored)
	}
	if set.IsSplit(plain) {
		t.Fatal("the plain FIFO queue was split")
	}
	// Nothing was sent to it: it may yet be named a dead-letter queue,
	// which a split queue cannot be.
	if set.IsSplit(unused) {
		t.Fatal("a high-throughput queue nothing was sent to was split")
	}

	// Only partition 0's groups are busy.
	var busy []string
	for i := 0; len(busy) < 5; i++ {
		if g := "b" + strconv.Itoa(i); set.PartOf(ht, api.GroupHash(g)) == 0 {
			busy = append(busy, g)
		}
	}
	round := func() {
		for _, g := range busy {
			sendFIFO(ht, g)
		}
		set.balanceQueues(steps)
	}
	round() // the first reading
	round() // busy once: a burst
	if l, _ := set.Layout(ht); len(l.Parts) != 3 {
		t.Fatalf("a partition busy one round split: layout %q", l.String())
	}
	round() // busy twice in a row
	l, _ = set.Layout(ht)
	if len(l.Parts) != 4 || l.Parts[0].Part != 0 || l.Parts[1].Part != 3 || l.Parts[1].Lo == 0 || l.Parts[1].Lo >= l.Parts[2].Lo {
		t.Fatalf("after partition 0 was busy two rounds, the layout is %q; want it split inside its range", l.String())
	}
	zero, three := ht, ht
	three.Part = 3
	if set.Of(three) == set.Of(zero) {
		t.Fatalf("the busy partition's new half stayed in its shard %d", set.Of(zero))
	}
	for _, k := range []api.QueueKey{zero, three} {
		g, _ := set.Shard(set.Of(k))
		var n int
		g.Read(func(e *engine.Engine) { n, _ = e.StoredMessages(k) })
		if n == 0 {
			t.Fatalf("partition %d holds no message: the split parted no groups", k.Part)
		}
	}

	// A queue whose load is one group is not split: nothing would part.
	one := queue("one.fifo")
	if err := set.setOnce(ctx, queueKey(one), "2"); err != nil {
		t.Fatal(err)
	}
	g2, _ := set.Shard(2)
	if _, err := g2.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: one.Account, Entropy: 1, Request: &api.CreateQueueRequest{QueueName: one.Name,
		Attributes: map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}}}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		for range 5 {
			sendFIFO(one, "the-one")
		}
		set.balanceQueues(steps)
	}
	if set.IsSplit(one) {
		l, _ := set.Layout(one)
		t.Fatalf("a queue busy with one group was split: %q", l.String())
	}
}

// TestSpreadQueueDeletedInPartitionZeroAlone: a split queue deleted
// through a member whose map did not have the split yet is deleted in
// partition 0 alone. The first group's leader finds the partitions it
// left, drops them with their messages, and forgets the layout, so that
// a queue created again by the name starts whole.
func TestSpreadQueueDeletedInPartitionZeroAlone(t *testing.T) {
	_, set := openMember(t, t.TempDir(), 3, func(c *Config) { c.QueueBalance, c.Spread = -1, time.Hour })
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	q := queue("gone.fifo")
	if err := set.setOnce(ctx, queueKey(q), "1"); err != nil {
		t.Fatal(err)
	}
	g1, _ := set.Shard(1)
	if _, err := g1.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Entropy: 1, Request: &api.CreateQueueRequest{QueueName: q.Name,
		Attributes: map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		grp := "g" + strconv.Itoa(i)
		if _, err := g1.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: q, MessageIDs: []string{"m-" + grp},
			Request: &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: grp, MessageGroupId: grp, MessageDeduplicationId: grp}}); err != nil {
			t.Fatal(err)
		}
	}
	set.spreadQueues(steps)
	l, _ := set.Layout(q)
	if len(l.Parts) != 3 {
		t.Fatalf("layout %q, want 3 partitions", l.String())
	}
	// Spreading again changes nothing.
	set.spreadQueues(steps)
	if again, _ := set.Layout(q); again.String() != l.String() {
		t.Fatalf("a second round changed the layout %q to %q", l.String(), again.String())
	}

	g, _ := set.Shard(set.Of(q))
	if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: q, Request: &api.DeleteQueueRequest{QueueUrl: q.Path()}}); err != nil {
		t.Fatal(err)
	}
	set.spreadQueues(steps)
	if set.IsSplit(q) {
		l, _ := set.Layout(q)
		t.Fatalf("the deleted queue's layout is still %q", l.String())
	}
	for _, p := range l.Parts[1:] {
		k := q
		k.Part = p.Part
		for _, id := range set.Named() {
			if queueIn(set, id, k) {
				t.Fatalf("partition %d of the deleted queue is still in shard %d", p.Part, id)
			}
		}
	}
}

// TestSpreadSaysWhyAQueueStaysWhole: a high-throughput FIFO queue that
// another queue names as its dead-letter queue is not split, which its
// operator learns from the log, once, with the engine's reason.
func TestSpreadSaysWhyAQueueStaysWhole(t *testing.T) {
	var logs testenv.SyncBuffer
	_, set := openMember(t, t.TempDir(), 3, func(c *Config) {
		c.QueueBalance, c.Spread, c.SplitRate = -1, time.Hour, 1
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	dlq, src := queue("dead.fifo"), queue("src.fifo")
	g, _ := set.Shard(1)
	for _, q := range []api.QueueKey{dlq, src} {
		if err := set.setOnce(ctx, queueKey(q), "1"); err != nil {
			t.Fatal(err)
		}
		attrs := map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}
		if q == src {
			attrs["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dead.fifo","maxReceiveCount":"1"}`
		}
		if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Entropy: 1,
			Request: &api.CreateQueueRequest{QueueName: q.Name, Attributes: attrs}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: dlq.Account, Queue: dlq, MessageIDs: []string{"m-1"},
		Request: &api.SendMessageRequest{QueueUrl: dlq.Path(), MessageBody: "b", MessageGroupId: "g", MessageDeduplicationId: "d"}}); err != nil {
		t.Fatal(err)
	}
	set.spreadQueues(steps)
	set.spreadQueues(steps)
	if set.IsSplit(dlq) {
		t.Fatal("the dead-letter queue was split")
	}
	said := strings.Count(logs.String(), "cannot be split")
	if said != 1 || !strings.Contains(logs.String(), "dead-letter queue") || !strings.Contains(logs.String(), "dead.fifo") {
		t.Fatalf("the log said %d times why dead.fifo stays whole, want once with the reason:\n%s", said, logs.String())
	}
}
