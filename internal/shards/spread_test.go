package shards

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// TestSpreadAndSplitBusyPartitions: a high-throughput FIFO queue created
// in one shard of three is spread by spreadQueues over all three, one
// partition in each, its messages with it; a plain FIFO queue beside it
// is left whole. A partition then busier than the split rate in two
// rounds of balancing in a row (not one: a burst) splits in two, and its
// new half moves to another shard.
func TestSpreadAndSplitBusyPartitions(t *testing.T) {
	_, set := openMember(t, t.TempDir(), 3, func(c *Config) { c.QueueBalance, c.SplitRate = -1, 1 })
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	ht, plain := queue("ht.fifo"), queue("plain.fifo")
	for _, q := range []api.QueueKey{ht, plain} {
		if err := set.setOnce(ctx, queueKey(q), "1"); err != nil {
			t.Fatal(err)
		}
		attrs := map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup"}
		if q == ht {
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
	if !ok || len(l.Parts) != 3 {
		t.Fatalf("after spreading, ht.fifo's layout is %q (%v), want 3 partitions", l.String(), ok)
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
	if len(l.Parts) != 4 || l.Parts[0].Part != 0 || l.Parts[1].Part != 3 || l.Parts[1].Lo != l.Parts[2].Lo/2 {
		t.Fatalf("after partition 0 was busy two rounds, the layout is %q; want it split at the middle of its range", l.String())
	}
	zero, three := ht, ht
	three.Part = 3
	if set.Of(three) == set.Of(zero) {
		t.Fatalf("the busy partition's new half stayed in its shard %d", set.Of(zero))
	}
}
