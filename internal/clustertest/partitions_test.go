package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	fifoqnode "github.com/fifoq/fifoq/internal/node"
	"github.com/fifoq/fifoq/internal/replog"
)

// node returns nd's running node, or nil.
func (nd *memNode) node() *fifoqnode.Node {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.n
}

// splitHTQueue creates high-throughput FIFO queue name in c (of 3 nodes
// and 3 shards), splits it at 2^31 and moves partition 1 to another shard
// than partition 0's; it returns the queue's URL and key, and the shards
// of partitions 0 and 1. before, if not nil, is called with the URL
// before the split.
func (c *memCluster) splitHTQueue(name string, before func(url string)) (url string, q api.QueueKey, from, to uint32) {
	c.t.Helper()
	c.waitShards(4)
	url = c.createQueue(name, highThroughputFIFO)
	if before != nil {
		before(url)
	}
	q = api.QueueKey{Account: "000000000000", Name: name}
	from = uint32(c.shardOf(name))
	one := q
	one.Part = 1
	to = from%3 + 1
	c.retrying("split", func() error {
		lead := c.leaderOf(0)
		if lead == nil {
			return fmt.Errorf("no leader of the first group")
		}
		n := lead.node()
		if n == nil {
			return fmt.Errorf("%s is not running", lead.id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if n.Shards.Of(one) == 0 {
			if _, err := n.Shards.Split(ctx, q, 1<<31); err != nil {
				return err
			}
		}
		_, err := n.Shards.Move(ctx, one, to)
		return err
	})
	// Every member's copy of the map has the split and the move: a member
	// whose copy lags serves the queue as whole a moment longer.
	for _, nd := range c.nodes {
		c.retrying("the split and move reach "+nd.id, func() error {
			n := nd.node()
			if n == nil {
				return fmt.Errorf("%s is not running", nd.id)
			}
			if parts := n.Shards.Parts(q); len(parts) != 2 || n.Shards.Of(one) != to {
				return fmt.Errorf("%s's map has partitions %v, partition 1 in shard %d", nd.id, parts, n.Shards.Of(one))
			}
			return nil
		})
	}
	return url, q, from, to
}

// TestSplitQueueRoutesByGroup splits a high-throughput FIFO queue of a
// cluster with shards into two partitions, moves one to another shard,
// and sends messages of many groups through every member, one by one and
// in batches over both partitions, then deletes messages by their handles
// the same way: each request that names one group must reach the
// partition holding it, and each batch be carried out in both, wherever
// the member it arrived at is, so that every send and delete succeeds and
// each partition holds exactly its groups' messages.
func TestSplitQueueRoutesByGroup(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := newHandSplitCluster(t, 3, 3, 38)
	c.logTailsOnFailure(30)
	url, q, from, to := c.splitHTQueue("ht.fifo", nil)

	const groups = 40
	var handles []string
	for i := range groups {
		g := "g" + strconv.Itoa(i)
		via := c.nodes[i%len(c.nodes)]
		cl := newClient(via.httpAddr, 10*time.Second)
		c.retrying("send via "+via.id, func() error {
			_, err := cl.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(g),
				MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(g)})
			return err
		})
	}

	// Batches over both partitions, answered as one, entries in order.
	var batched []string
	for b := range 4 {
		var entries []types.SendMessageBatchRequestEntry
		for i := range 10 {
			g := fmt.Sprintf("b%d-%d", b, i)
			batched = append(batched, g)
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String("e" + strconv.Itoa(i)), MessageBody: aws.String(g),
				MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(g)})
		}
		via := c.nodes[b%len(c.nodes)]
		cl := newClient(via.httpAddr, 10*time.Second)
		c.retrying("batch via "+via.id, func() error {
			out, err := cl.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil {
				return err
			}
			if len(out.Failed) != 0 || len(out.Successful) != len(entries) {
				t.Fatalf("batch via %s: %d failed, %d of %d succeeded", via.id, len(out.Failed), len(out.Successful), len(entries))
			}
			for i, e := range out.Successful {
				if *e.Id != "e"+strconv.Itoa(i) {
					t.Fatalf("batch via %s answered entry %s at %d", via.id, *e.Id, i)
				}
			}
			return nil
		})
	}

	// Each partition holds its groups' messages, read at its shard's
	// leader; their handles, received there, carry their group's hash.
	want := map[uint32]int{}
	for i := range groups {
		batched = append(batched, "g"+strconv.Itoa(i))
	}
	for _, g := range batched {
		if api.GroupHash(g) < 1<<31 {
			want[0]++
		} else {
			want[1]++
		}
	}
	for part, shard := range map[uint32]uint32{0: from, 1: to} {
		key := q
		key.Part = part
		var got []api.Message
		c.retrying(fmt.Sprintf("receive in partition %d", part), func() error {
			lead := c.leaderOf(shard)
			if lead == nil || lead.node() == nil {
				return fmt.Errorf("no leader of shard %d", shard)
			}
			l, ok := lead.node().Shards.Shard(shard)
			if !ok {
				return fmt.Errorf("%s holds no replica of shard %d", lead.id, shard)
			}
			got = got[:0]
			for range len(batched) {
				ten, vis := 10, 600
				res, err := l.Apply(context.Background(), &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: key,
					Request: &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &ten, VisibilityTimeout: &vis}})
				if err != nil {
					return err
				}
				msgs := res.(*api.ReceiveMessageResult).Messages
				if len(msgs) == 0 {
					break
				}
				got = append(got, msgs...)
			}
			return nil
		})
		if len(got) != want[part] {
			t.Fatalf("partition %d holds %d messages, want %d", part, len(got), want[part])
		}
		for _, m := range got {
			if h, ok := engine.HandleGroupHash(m.ReceiptHandle); !ok || h != api.GroupHash(m.Body) {
				t.Fatalf("a handle of partition %d carries hash %d (%v), want group %s's", part, h, ok, m.Body)
			}
			handles = append(handles, m.ReceiptHandle)
		}
	}

	// Deletes by handle, through every member, reach the partitions: one
	// by one, and in batches of both partitions' handles.
	rand.New(rand.NewPCG(38, 38)).Shuffle(len(handles), func(i, j int) { handles[i], handles[j] = handles[j], handles[i] })
	single, inBatches := handles[:groups], handles[groups:]
	for i, h := range single {
		via := c.nodes[i%len(c.nodes)]
		cl := newClient(via.httpAddr, 10*time.Second)
		c.retrying("delete via "+via.id, func() error {
			_, err := cl.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h)})
			return err
		})
	}
	for b := 0; b < len(inBatches); b += 10 {
		var entries []types.DeleteMessageBatchRequestEntry
		for i, h := range inBatches[b:min(b+10, len(inBatches))] {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String("d" + strconv.Itoa(i)), ReceiptHandle: aws.String(h)})
		}
		via := c.nodes[b/10%len(c.nodes)]
		cl := newClient(via.httpAddr, 10*time.Second)
		c.retrying("delete batch via "+via.id, func() error {
			out, err := cl.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err == nil && (len(out.Failed) != 0 || len(out.Successful) != len(entries)) {
				t.Fatalf("delete batch via %s: %d failed, %d of %d succeeded", via.id, len(out.Failed), len(out.Successful), len(entries))
			}
			return err
		})
	}
	for part, shard := range map[uint32]uint32{0: from, 1: to} {
		key := q
		key.Part = part
		c.retrying(fmt.Sprintf("count partition %d", part), func() error {
			lead := c.leaderOf(shard)
			if lead == nil || lead.node() == nil {
				return fmt.Errorf("no leader of shard %d", shard)
			}
			l, _ := lead.node().Shards.Shard(shard)
			var n int
			l.Read(func(e *engine.Engine) { n, _ = e.StoredMessages(key) })
			if n != 0 {
				t.Fatalf("partition %d holds %d messages after every delete", part, n)
			}
			return nil
		})
	}
}

// TestSplitQueueReceivesFromEveryPartition: a receive of a split queue,
// through any member, reaches every partition (each in its own shard),
// never returns more than it may, returns again what it returned to a
// retry of its ReceiveRequestAttemptId, and a long poll is woken by a
// message sent to any partition.
func TestSplitQueueReceivesFromEveryPartition(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := newHandSplitCluster(t, 3, 3, 39)
	c.logTailsOnFailure(30)
	url, _, _, _ := c.splitHTQueue("ht.fifo", nil)
	clients := c.memberClients()
	// Two messages in each of 20 groups, of both partitions.
	const groups = 20
	sent := map[string][]string{}
	var inOne, inTwo int
	for i := range groups {
		g := "g" + strconv.Itoa(i)
		if api.GroupHash(g) < 1<<31 {
			inOne++
		} else {
			inTwo++
		}
		for k := range 2 {
			body := fmt.Sprintf("%s-%d", g, k)
			sent[g] = append(sent[g], body)
			c.retrying("send "+body, func() error {
				_, err := clients[i%len(clients)].SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
					MessageBody: aws.String(body), MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(body)})
				return err
			})
		}
	}
	if inOne == 0 || inTwo == 0 {
		t.Fatalf("the groups fall in one partition only (%d and %d)", inOne, inTwo)
	}

	// A receive with an attempt id, and its retry through another
	// member: the same messages.
	receive := func(via int, in *sqs.ReceiveMessageInput) []types.Message {
		t.Helper()
		var out *sqs.ReceiveMessageOutput
		c.retrying(fmt.Sprintf("receive via %s", c.nodes[via].id), func() error {
			var err error
			out, err = clients[via].ReceiveMessage(context.Background(), in)
			return err
		})
		if max := int(in.MaxNumberOfMessages); len(out.Messages) > max || (max == 0 && len(out.Messages) > 1) {
			t.Fatalf("a receive of at most %d returned %d messages", max, len(out.Messages))
		}
		return out.Messages
	}
	withGroup := []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}
	first := receive(0, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 300,
		ReceiveRequestAttemptId: aws.String("attempt-1"), MessageSystemAttributeNames: withGroup})
	again := receive(1, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 300,
		ReceiveRequestAttemptId: aws.String("attempt-1"), MessageSystemAttributeNames: withGroup})
	if len(first) == 0 {
		t.Fatal("a receive of a queue holding 40 messages returned none")
	}
	handles := func(ms []types.Message) map[string]bool {
		out := map[string]bool{}
		for _, m := range ms {
			out[*m.ReceiptHandle] = true
		}
		return out
	}
	for h := range handles(first) {
		if !handles(again)[h] {
			t.Fatalf("the retry of attempt-1 returned %d messages without one of the %d first returned", len(again), len(first))
		}
	}

	// Everything else, through every member, in batches of 10 and one
	// by one: each group's messages in order, each message once.
	got := map[string][]string{}
	take := func(ms []types.Message) {
		for _, m := range ms {
			g := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
			got[g] = append(got[g], *m.Body)
		}
		var entries []types.DeleteMessageBatchRequestEntry
		for i, m := range ms {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if len(entries) > 0 {
			c.retrying("delete", func() error {
				_, err := clients[0].DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				return err
			})
		}
	}
	take(first)
	for i := 0; countAll(got) < 2*groups; i++ {
		if i > 200 {
			t.Fatalf("after 200 receives, got %d of %d messages", countAll(got), 2*groups)
		}
		max := int32(10)
		if i%2 == 1 {
			max = 1
		}
		take(receive(i%len(clients), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: withGroup}))
	}
	for g, want := range sent {
		if fmt.Sprint(got[g]) != fmt.Sprint(want) {
			t.Fatalf("group %s received %v, want %v", g, got[g], want)
		}
	}

	// A long poll of the empty queue is woken by a message sent, a
	// moment later, to a group of either partition.
	for _, g := range []string{firstGroupIn(true), firstGroupIn(false)} {
		done := make(chan []types.Message, 1)
		go func() {
			out, err := clients[2].ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
			if err != nil {
				t.Errorf("long poll: %v", err)
			}
			if out == nil {
				done <- nil
				return
			}
			done <- out.Messages
		}()
		time.Sleep(time.Second)
		c.retrying("send to "+g, func() error {
			_, err := clients[0].SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
				MessageBody: aws.String("late"), MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String("late-" + g)})
			return err
		})
		if ms := <-done; len(ms) != 1 || *ms[0].Body != "late" {
			t.Fatalf("a long poll of the split queue, sent a message of group %s while it waited, returned %d messages", g, len(ms))
		}
	}
}

// getJSON decodes the JSON answer of a GET of url into v, or says why it
// could not.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// countAll counts the messages of every group.
func countAll(m map[string][]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// firstGroupIn returns a group name whose hash falls in the first half
// (low) or the second.
func firstGroupIn(low bool) string {
	for i := 0; ; i++ {
		g := "late" + strconv.Itoa(i)
		if (api.GroupHash(g) < 1<<31) == low {
			return g
		}
	}
}

// TestSplitQueueWideActions: what acts on a split queue as a whole reaches
// every partition, through any member: GetQueueAttributes sums the
// partitions' counts, receipt handles from before the split delete their
// messages wherever they went, SetQueueAttributes and TagQueue change
// every partition, PurgeQueue empties them all (and is refused as in
// progress right after), and DeleteQueue deletes them all.
func TestSplitQueueWideActions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := newHandSplitCluster(t, 3, 3, 40)
	c.logTailsOnFailure(30)
	clients := c.memberClients()
	// Before the split: 2 messages in each of 10 groups, the first of
	// each received (its handle carries no group's hash).
	const groups = 10
	var early []string
	url, q, from, to := c.splitHTQueue("wide.fifo", func(url string) {
		for i := range groups {
			g := "g" + strconv.Itoa(i)
			for k := range 2 {
				body := fmt.Sprintf("%s-%d", g, k)
				c.retrying("send "+body, func() error {
					_, err := clients[0].SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
						MessageBody: aws.String(body), MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(body)})
					return err
				})
			}
		}
		for len(early) < groups {
			var out *sqs.ReceiveMessageOutput
			c.retrying("receive before the split", func() error {
				var err error
				out, err = clients[0].ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 600})
				return err
			})
			for _, m := range out.Messages {
				if _, hashed := engine.HandleGroupHash(*m.ReceiptHandle); hashed {
					t.Fatal("a handle of a queue never split carries a group's hash")
				}
				early = append(early, *m.ReceiptHandle)
			}
		}
	})
	partsOf := map[uint32]uint32{0: from, 1: to}
	// atPart carries req out on partition part at its shard's leader.
	atPart := func(part uint32, req api.Request) (api.Response, error) {
		key := q
		key.Part = part
		var resp api.Response
		var err error
		c.retrying(fmt.Sprintf("ask partition %d", part), func() error {
			lead := c.leaderOf(partsOf[part])
			if lead == nil || lead.node() == nil {
				return fmt.Errorf("no leader of shard %d", partsOf[part])
			}
			l, ok := lead.node().Shards.Shard(partsOf[part])
			if !ok {
				return fmt.Errorf("%s holds no replica of shard %d", lead.id, partsOf[part])
			}
			resp, err = l.Apply(context.Background(), &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: key, Request: req})
			// A partition moving, or a leadership the balancer hands
			// over between leaderOf and Apply, refuses the command
			// unapplied: ask again.
			if engine.IsQueueMoving(err) || replog.IsNotLeading(err) {
				return err
			}
			return nil
		})
		return resp, err
	}
	counts := func(via int) (visible, inflight int) {
		t.Helper()
		var out *sqs.GetQueueAttributesOutput
		c.retrying("get attributes", func() error {
			var err error
			out, err = clients[via].GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
			return err
		})
		visible, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
		inflight, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
		return visible, inflight
	}
	for via := range clients {
		if v, f := counts(via); v != groups || f != groups {
			t.Fatalf("GetQueueAttributes via %s: %d visible, %d in flight; want %d and %d", c.nodes[via].id, v, f, groups, groups)
		}
	}
	// Each member's metrics show the queue once, its counts the sums of
	// the partitions it holds a replica of: here, with every shard on
	// every member, all of them.
	for _, nd := range c.nodes {
		c.retrying("metrics of "+nd.id, func() error {
			series := queueSeries(nd.httpAddr, "wide.fifo")
			if len(series["fifoq_queue_messages_visible"]) != 1 || series["fifoq_queue_messages_visible"][0] != groups ||
				len(series["fifoq_queue_messages_not_visible"]) != 1 || series["fifoq_queue_messages_not_visible"][0] != groups {
				return fmt.Errorf("%s's metrics of the queue: %v", nd.id, series)
			}
			return nil
		})
	}
	// So does the web console's list of queues.
	for _, nd := range c.nodes {
		c.retrying("the console's queues on "+nd.id, func() error {
			resp, err := http.Get("http://" + nd.httpAddr + "/console/api/queues")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var list struct {
				Queues []struct {
					Name       string `json:"name"`
					Visible    int    `json:"visible"`
					NotVisible int    `json:"notVisible"`
				} `json:"queues"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
				return err
			}
			for _, q := range list.Queues {
				if q.Name == "wide.fifo" {
					if q.Visible != groups || q.NotVisible != groups {
						// Until this member's replica of each shard
						// has applied what its leader did.
						return fmt.Errorf("%s's console shows %d visible, %d in flight; want %d and %d", nd.id, q.Visible, q.NotVisible, groups, groups)
					}
					return nil
				}
			}
			return fmt.Errorf("%s's console does not list wide.fifo: %+v", nd.id, list.Queues)
		})
	}
	// And its pages of the queue's groups, a page at a time, and of its
	// messages, all or one group's: every partition's.
	for _, nd := range c.nodes {
		c.retrying("the console's groups and messages on "+nd.id, func() error {
			var peek struct {
				Messages []struct {
					Body    string `json:"body"`
					GroupID string `json:"groupId"`
					State   string `json:"state"`
				} `json:"messages"`
			}
			if err := getJSON("http://"+nd.httpAddr+"/console/api/queues/wide.fifo/messages?limit=100", &peek); err != nil {
				return err
			}
			if len(peek.Messages) != 2*groups {
				return fmt.Errorf("%s's console peeks %d messages, want %d", nd.id, len(peek.Messages), 2*groups)
			}
			held := map[string]bool{} // the groups with a message in flight
			for _, m := range peek.Messages {
				if m.State == "inflight" {
					held[m.GroupID] = true
				}
			}
			for i := range groups {
				g := "g" + strconv.Itoa(i)
				if err := getJSON("http://"+nd.httpAddr+"/console/api/queues/wide.fifo/messages?group="+g, &peek); err != nil {
					return err
				}
				if len(peek.Messages) != 2 || peek.Messages[0].Body != g+"-0" || peek.Messages[1].Body != g+"-1" {
					return fmt.Errorf("%s's console peeks %+v of group %s, want its two messages", nd.id, peek.Messages, g)
				}
			}
			seen := map[string]bool{}
			var last uint64
			for after, pages := "", 0; pages == 0 || after != ""; pages++ {
				var page struct {
					Total, InFlight int
					Groups          []struct {
						ID           string `json:"id"`
						Messages     int    `json:"messages"`
						HeadSequence string `json:"headSequence"`
					} `json:"groups"`
					Next string `json:"next"`
				}
				if err := getJSON("http://"+nd.httpAddr+"/console/api/queues/wide.fifo/groups?limit=4&after="+after, &page); err != nil {
					return err
				}
				if page.Total != groups || page.InFlight != len(held) || pages > groups {
					return fmt.Errorf("%s's console's groups page %d: %d groups, %d in flight; want %d and %d", nd.id, pages, page.Total, page.InFlight, groups, len(held))
				}
				for _, g := range page.Groups {
					seq, _ := strconv.ParseUint(g.HeadSequence, 10, 64)
					if seen[g.ID] || g.Messages != 2 || seq <= last {
						return fmt.Errorf("%s's console's groups page %d: group %s (seen before: %v) with %d messages, head %d after %d", nd.id, pages, g.ID, seen[g.ID], g.Messages, seq, last)
					}
					seen[g.ID], last = true, seq
				}
				after = page.Next
			}
			if len(seen) != groups {
				return fmt.Errorf("%s's console's groups pages showed %d groups, want %d", nd.id, len(seen), groups)
			}
			return nil
		})
	}
	// So does a request a node makes for itself (the console's, Do).
	c.retrying("Do's GetQueueAttributes", func() error {
		n := c.nodes[1].node()
		if n == nil {
			return fmt.Errorf("%s is not running", c.nodes[1].id)
		}
		resp, err := n.Server.Do(context.Background(), q.Account, &api.GetQueueAttributesRequest{QueueUrl: q.Path(), AttributeNames: []string{api.AttrApproximateNumberOfMessages}})
		if err != nil {
			return err
		}
		if got := resp.(*api.GetQueueAttributesResult).Attributes[api.AttrApproximateNumberOfMessages]; got != strconv.Itoa(groups) {
			t.Fatalf("Do's GetQueueAttributes counts %s visible, want %d", got, groups)
		}
		return nil
	})
	perPart := map[uint32]int{}
	for part := range partsOf {
		resp, err := atPart(part, &api.GetQueueAttributesRequest{QueueUrl: q.Path(), AttributeNames: []string{api.AttrApproximateNumberOfMessages}})
		if err != nil {
			t.Fatalf("partition %d's attributes: %v", part, err)
		}
		perPart[part], _ = strconv.Atoi(resp.(*api.GetQueueAttributesResult).Attributes[api.AttrApproximateNumberOfMessages])
	}
	if perPart[0] == 0 || perPart[1] == 0 {
		t.Fatalf("the groups' messages fall in one partition only: %v", perPart)
	}

	// The handles from before the split delete their messages, in
	// whichever partition they are now, through every member; a second
	// delete by one succeeds too, and a visibility change by it is
	// refused as of a message gone.
	for i, h := range early[:groups/2] {
		c.retrying("delete by an early handle", func() error {
			_, err := clients[i%len(clients)].DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h)})
			return err
		})
	}
	// The others in one batch, beside a handle of a message gone.
	var entries []types.DeleteMessageBatchRequestEntry
	for i, h := range early[groups/2:] {
		entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String("e" + strconv.Itoa(i)), ReceiptHandle: aws.String(h)})
	}
	entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String("gone"), ReceiptHandle: aws.String(early[0])})
	c.retrying("delete a batch of early handles", func() error {
		out, err := clients[1].DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err == nil && (len(out.Failed) != 0 || len(out.Successful) != len(entries)) {
			t.Fatalf("a batch of handles from before the split: %d failed (%v), %d of %d succeeded", len(out.Failed), out.Failed, len(out.Successful), len(entries))
		}
		return err
	})
	// A retryable 503 (a leadership handed over) is retried, as the SDK
	// would; any other failure is the test's.
	c.retrying("a second delete by a handle from before the split", func() error {
		_, err := clients[1].DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(early[0])})
		if err != nil && !isServiceUnavailable(err) {
			t.Fatalf("a second delete by a handle from before the split: %v", err)
		}
		return err
	})
	c.retrying("a visibility change by the handle of a message deleted", func() error {
		_, err := clients[2].ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(early[0]), VisibilityTimeout: 5})
		if isServiceUnavailable(err) {
			return err
		}
		if err == nil || !strings.Contains(err.Error(), "InvalidParameterValue") {
			t.Fatalf("a visibility change by the handle of a message deleted: %v, want InvalidParameterValue", err)
		}
		return nil
	})
	if v, f := counts(2); v != groups || f != 0 {
		t.Fatalf("after deleting the received: %d visible, %d in flight; want %d and 0", v, f, groups)
	}

	// Attributes and tags reach every partition.
	c.retrying("set attributes", func() error {
		_, err := clients[1].SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
			Attributes: map[string]string{"VisibilityTimeout": "77"}})
		return err
	})
	c.retrying("tag", func() error {
		_, err := clients[2].TagQueue(context.Background(), &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{"team": "blue"}})
		return err
	})
	for part := range partsOf {
		resp, err := atPart(part, &api.GetQueueAttributesRequest{QueueUrl: q.Path(), AttributeNames: []string{api.AttrVisibilityTimeout}})
		if err != nil || resp.(*api.GetQueueAttributesResult).Attributes[api.AttrVisibilityTimeout] != "77" {
			t.Fatalf("partition %d's VisibilityTimeout after SetQueueAttributes: %v %v", part, resp, err)
		}
		resp, err = atPart(part, &api.ListQueueTagsRequest{QueueUrl: q.Path()})
		if err != nil || resp.(*api.ListQueueTagsResult).Tags["team"] != "blue" {
			t.Fatalf("partition %d's tags after TagQueue: %v %v", part, resp, err)
		}
	}

	// A purge empties every partition; another right after is refused.
	// Either may meet a shard's leadership handed over by the balancer,
	// answered with a retryable 503 (ServiceUnavailable); a retry of a
	// purge that was carried out before a failed answer is refused as in
	// progress, which is the purge done.
	retried := false
	c.retrying("purge", func() error {
		_, err := clients[0].PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
		if err != nil && retried && strings.Contains(err.Error(), "PurgeQueueInProgress") {
			return nil
		}
		retried = true
		return err
	})
	if v, f := counts(1); v != 0 || f != 0 {
		t.Fatalf("after a purge: %d visible, %d in flight", v, f)
	}
	c.retrying("a purge right after a purge", func() error {
		_, err := clients[1].PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
		if isServiceUnavailable(err) {
			return err
		}
		if err == nil || !strings.Contains(err.Error(), "PurgeQueueInProgress") {
			t.Fatalf("a purge right after a purge: %v, want PurgeQueueInProgress", err)
		}
		return nil
	})

	// Deletion reaches every partition.
	// A delete whose partitions are all deleted but whose layout could
	// not be forgotten (a partition moving) answers a retryable error;
	// its retry then answers that the queue does not exist, as a retried
	// delete does, and forgets the layout.
	failed := false
	c.retrying("delete the queue", func() error {
		_, err := clients[2].DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		if err != nil && failed && strings.Contains(err.Error(), "NonExistentQueue") {
			return nil
		}
		if err != nil {
			t.Logf("DeleteQueue: %v", err)
			failed = true
		}
		return err
	})
	for part := range partsOf {
		if _, err := atPart(part, &api.GetQueueAttributesRequest{QueueUrl: q.Path()}); !isQueueDoesNotExist(err) {
			t.Fatalf("partition %d after DeleteQueue: %v, want QueueDoesNotExist", part, err)
		}
	}
	// The map forgets its partitions: a queue created again by the name
	// starts whole.
	for _, nd := range c.nodes {
		c.retrying("the map forgets the partitions on "+nd.id, func() error {
			n := nd.node()
			if n == nil {
				return fmt.Errorf("%s is not running", nd.id)
			}
			if parts := n.Shards.Parts(q); parts != nil {
				return fmt.Errorf("%s's map still has partitions %v", nd.id, parts)
			}
			return nil
		})
	}
	one := q
	one.Part = 1
	if n := c.nodes[0].node(); n == nil || n.Shards.Of(one) != 0 {
		t.Fatal("the map still names a shard for the deleted queue's partition 1")
	}
}

// isQueueDoesNotExist reports whether err is the engine's QueueDoesNotExist.
func isQueueDoesNotExist(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == "QueueDoesNotExist"
}

// queueSeries returns the values of every fifoq_queue_* series of queue
// name on the /metrics of the node at httpAddr, by metric name.
func queueSeries(httpAddr, name string) map[string][]float64 {
	out := map[string][]float64{}
	for series, v := range scrapeMetrics(httpAddr, func(series string) bool {
		return strings.HasPrefix(series, "fifoq_queue_") && strings.Contains(series, `queue="`+name+`"`)
	}) {
		metric, _, _ := strings.Cut(series, "{")
		out[metric] = append(out[metric], v)
	}
	return out
}
