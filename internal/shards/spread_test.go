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
	ht, plain, unused := queue("ht.fifo"), queue("plain.fifo"), queue("unused.fifo")
	for _, q := range []api.QueueKey{ht, plain, unused} {
		createFIFOInShard(t, set, q, 1, q != plain)
	}
	f := &fifoSender{t: t, set: set}
	sendFIFO := f.send
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
	if stored := storedInParts(set, ht); stored != 30 {
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
	createFIFOInShard(t, set, one, 2, true)
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

// createFIFOInShard creates FIFO queue q (deduplicating by group, and in
// high-throughput mode if ht) in shard id, as placed there by the map.
func createFIFOInShard(t *testing.T, set *Set, q api.QueueKey, id uint32, ht bool) {
	t.Helper()
	ctx := context.Background()
	if err := set.setOnce(ctx, queueKey(q), strconv.Itoa(int(id))); err != nil {
		t.Fatal(err)
	}
	attrs := map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup"}
	if ht {
		attrs["FifoThroughputLimit"] = "perMessageGroupId"
	}
	g, _ := set.Shard(id)
	if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Entropy: 1,
		Request: &api.CreateQueueRequest{QueueName: q.Name, Attributes: attrs}}); err != nil {
		t.Fatal(err)
	}
}

// fifoSender sends messages to FIFO queues of set, each straight to the
// partition and shard the map gives its group, each body distinct.
type fifoSender struct {
	t     *testing.T
	set   *Set
	sends int
}

// send sends one message of group to q.
func (f *fifoSender) send(q api.QueueKey, group string) {
	f.t.Helper()
	k := q
	k.Part = f.set.PartOf(q, api.GroupHash(group))
	g, _ := f.set.Shard(f.set.Of(k))
	f.sends++
	body := group + "-" + strconv.Itoa(f.sends)
	if _, err := g.Apply(context.Background(), &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: k, MessageIDs: []string{"m-" + body},
		Request: &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: body, MessageGroupId: group, MessageDeduplicationId: body}}); err != nil {
		f.t.Fatalf("send to partition %d in shard %d: %v", k.Part, f.set.Of(k), err)
	}
}

// storedInParts returns the messages q's partitions hold, each read in
// the shard the map places it in.
func storedInParts(set *Set, q api.QueueKey) int {
	stored := 0
	for _, p := range set.layoutOrWhole(q).Parts {
		k := q
		k.Part = p.Part
		g, _ := set.Shard(set.Of(k))
		g.Read(func(e *engine.Engine) { n, _ := e.StoredMessages(k); stored += n })
	}
	return stored
}

// TestQuietPartitionsMergeBack: a high-throughput queue that its load
// split past the spread (more partitions than shards) merges the extra
// partitions back once it has been quiet for MergeIdle, with every
// message kept, and stays spread one partition per shard; a busy round
// starts the quiet over, and a queue at its spread merges nothing.
func TestQuietPartitionsMergeBack(t *testing.T) {
	_, set := openMember(t, t.TempDir(), 3, func(c *Config) {
		c.QueueBalance, c.Spread, c.SplitRate, c.MergeIdle = -1, time.Hour, 1, time.Nanosecond
	})
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ht := queue("ht.fifo")
	createFIFOInShard(t, set, ht, 1, true)
	f := &fifoSender{t: t, set: set}
	for i := range 30 {
		f.send(ht, "g"+strconv.Itoa(i))
	}
	set.spreadQueues(steps)
	parts := func() int { l, _ := set.Layout(ht); return len(l.Parts) }
	if parts() != 3 {
		t.Fatalf("after spreading, ht.fifo has %d partitions, want 3", parts())
	}
	// At its spread, quiet rounds merge nothing.
	for range 3 {
		set.balanceQueues(steps)
	}
	if parts() != 3 {
		t.Fatalf("a queue at its spread merged: %d partitions", parts())
	}
	// Partition 0 busy two rounds in a row: split past the spread.
	var busy []string
	for i := 0; len(busy) < 5; i++ {
		if g := "b" + strconv.Itoa(i); set.PartOf(ht, api.GroupHash(g)) == 0 {
			busy = append(busy, g)
		}
	}
	for range 3 {
		for _, g := range busy {
			f.send(ht, g)
		}
		set.balanceQueues(steps)
	}
	if parts() != 4 {
		t.Fatalf("after two busy rounds ht.fifo has %d partitions, want 4", parts())
	}
	want := f.sends
	// Quiet is noted from the first round every partition is quiet, and
	// a busy round starts it over.
	quietRound := func() { set.balanceQueues(steps) }
	quietRound()
	if parts() != 4 {
		t.Fatalf("merged in the first quiet round: %d partitions", parts())
	}
	f.send(ht, busy[0])
	want++
	set.balanceQueues(steps)
	if parts() != 4 {
		t.Fatalf("merged while busy: %d partitions", parts())
	}
	quietRound()
	if parts() != 4 {
		t.Fatalf("merged in the first quiet round after a busy one: %d partitions", parts())
	}
	quietRound()
	if parts() != 3 {
		l, _ := set.Layout(ht)
		t.Fatalf("after two quiet rounds ht.fifo's layout is %q; want the extra partition merged", l.String())
	}
	l, _ := set.Layout(ht)
	if l.Parts[0].Lo != 0 {
		t.Fatalf("the merged layout %q does not start at hash 0", l.String())
	}
	for i := 1; i < len(l.Parts); i++ {
		if l.Parts[i].Lo <= l.Parts[i-1].Lo {
			t.Fatalf("the merged layout %q is out of order", l.String())
		}
	}
	per := set.partsPerShard(ht, l)
	if len(per[1]) != 1 || len(per[2]) != 1 || len(per[3]) != 1 {
		t.Fatalf("after the merge ht.fifo's partitions by shard are %v, want one in each", per)
	}
	if got := storedInParts(set, ht); got != want {
		t.Fatalf("the partitions hold %d messages after the merge, want %d", got, want)
	}
	for range 3 {
		quietRound()
	}
	if parts() != 3 {
		t.Fatalf("merged past the spread: %d partitions", parts())
	}
}
