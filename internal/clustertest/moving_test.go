package clustertest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// TestSendsWaitOutMovingPartitions sends to a high-throughput FIFO queue
// through every member, one message at a time and in batches over the
// partitions, with clients that never retry, while the first group's
// leader splits the queue and moves its partitions between the shards. A
// send that meets a partition fenced for its move, or one that no longer
// holds its group, changed nothing; the member routes it again as soon as
// its map shows where the group went (serveInShards, doMovingOn), so no
// client sees the retryable moving error. Every message acknowledged is
// then received, once. (Refusals of other kinds are allowed: the
// producers send again, as an SDK's retries would.)
func TestSendsWaitOutMovingPartitions(t *testing.T) {
	t.Parallel()
	c, url, q := handSplitQueue(t, 44, "moving.fifo")
	clients := c.memberClients()

	const groups = 40
	var mu sync.Mutex
	acked := map[string]bool{}
	var moving, others []string // refusals of sends, tried again until they succeed
	// try sends until it succeeds, with the same deduplication ids, as an
	// SDK's retries would; it notes each refusal.
	try := func(send func() error) {
		for {
			err := send()
			if err == nil {
				return
			}
			mu.Lock()
			if strings.Contains(err.Error(), "moving between") {
				moving = append(moving, err.Error())
			} else {
				others = append(others, err.Error())
			}
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond): // a steady load, not a flood to drain
				}
				if k%2 == 0 {
					body := fmt.Sprintf("n%d-%d", i, k)
					g := "g" + strconv.Itoa((i*7+k)%groups)
					try(func() error {
						_, err := cl.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
							MessageBody: aws.String(body), MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(body)})
						return err
					})
					mu.Lock()
					acked[body] = true
					mu.Unlock()
					continue
				}
				var entries []types.SendMessageBatchRequestEntry
				for j := range 10 {
					body := fmt.Sprintf("n%d-%d-%d", i, k, j)
					entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(body),
						MessageGroupId: aws.String("g" + strconv.Itoa((k+j*3)%groups)), MessageDeduplicationId: aws.String(body)})
				}
				try(func() error {
					out, err := cl.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
					if err != nil {
						return err
					}
					if len(out.Failed) > 0 {
						f := out.Failed[0]
						return fmt.Errorf("batch entry %s: %s %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
					}
					return nil
				})
				mu.Lock()
				for _, e := range entries {
					acked[aws.ToString(e.MessageBody)] = true
				}
				mu.Unlock()
			}
		}()
	}

	c.shufflePartitions(q) // while the sends run
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	// Other refusals may come (a shard's leadership handed to the member
	// the map prefers), which a client retries; the moving error is the
	// one the members must have waited out.
	t.Logf("%d messages acknowledged; %d refusals of other kinds: %v", len(acked), len(others), others)
	if len(moving) > 0 {
		t.Fatalf("%d sends were refused while the partitions moved: %s", len(moving), strings.Join(moving[:min(len(moving), 5)], "\n"))
	}
	got := map[string][]string{}
	c.drainGroups(clients, url, got, len(acked), len(acked)+100)
	seen := map[string]bool{}
	for _, bodies := range got {
		for _, b := range bodies {
			if seen[b] || !acked[b] {
				t.Fatalf("message %s received twice, or never sent", b)
			}
			seen[b] = true
		}
	}
	if len(seen) != len(acked) {
		t.Fatalf("received %d of the %d messages acknowledged", len(seen), len(acked))
	}
}

// TestQueueWideRequestsWaitOutMovingPartitions changes, reads, tags and
// grants on a high-throughput FIFO queue as a whole through every member,
// with clients that never retry, while the first group's leader splits
// the queue and moves its partitions between the shards. A partition that
// answers that it is moving changed nothing; the member asks it again
// once its map shows where it went (changeEveryPart, readEveryPart), so
// no client sees the moving error, and a partition that answered is not
// asked again: a permission added and then removed under a label of its
// own is neither refused as already there nor as not found. (The
// retryable refusal of a change while a split is under way is allowed,
// as a client retries it.)
func TestQueueWideRequestsWaitOutMovingPartitions(t *testing.T) {
	t.Parallel()
	c, url, q := handSplitQueue(t, 45, "wide.fifo")
	clients := c.memberClients()

	var mu sync.Mutex
	var moving, twice, others []string
	done := 0
	note := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch msg := what + ": " + err.Error(); {
		case engine.IsQueueMoving(err) || strings.Contains(msg, "moving between"):
			moving = append(moving, msg)
		case strings.Contains(msg, "Already exists") || strings.Contains(msg, "can't find label"):
			twice = append(twice, msg)
		default:
			others = append(others, msg)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				label := fmt.Sprintf("l%d-%d", i, k)
				if _, err := cl.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
					Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(30 + k%7)}}); err != nil {
					note("SetQueueAttributes", err)
				}
				if _, err := cl.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{fmt.Sprintf("t%d", i): label}}); err != nil {
					note("TagQueue", err)
				}
				if _, err := cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
					AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}}); err != nil {
					note("GetQueueAttributes", err)
				}
				if _, err := cl.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: aws.String(url), Label: aws.String(label),
					AWSAccountIds: []string{"111122223333"}, Actions: []string{"SendMessage"}}); err != nil {
					note("AddPermission "+label, err)
					continue // some partitions may hold it: not removed
				}
				if _, err := cl.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: aws.String(url), Label: aws.String(label)}); err != nil {
					note("RemovePermission "+label, err)
					continue
				}
				mu.Lock()
				done++
				mu.Unlock()
			}
		}()
	}
	c.shufflePartitions(q) // while the requests run
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	t.Logf("%d rounds whose permission was added and removed; %d refusals of other kinds, the first: %v", done, len(others), others[:min(len(others), 3)])
	if len(moving) > 0 {
		t.Fatalf("%d requests were refused while the partitions moved: %s", len(moving), strings.Join(moving[:min(len(moving), 5)], "\n"))
	}
	if len(twice) > 0 {
		t.Fatalf("%d permissions were refused as added or removed already, a partition asked twice: %s", len(twice), strings.Join(twice[:min(len(twice), 5)], "\n"))
	}
	if done == 0 {
		t.Fatal("no permission was added and removed")
	}
}

// handSplitQueue starts three in-process members with three shards that
// spread no queue by themselves, and creates high-throughput FIFO queue
// name in them, for a test to split and move by hand (shufflePartitions).
func handSplitQueue(t *testing.T, seed int64, name string) (*memCluster, string, api.QueueKey) {
	t.Helper()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := newHandSplitCluster(t, 3, 3, seed)
	c.logTailsOnFailure(30)
	c.waitShards(4)
	return c, c.createQueue(name, highThroughputFIFO), api.QueueKey{Account: "000000000000", Name: name}
}

// shufflePartitions has the first group's leader split partition 0 of
// high-throughput queue q twice and move the new partitions about, and
// partition 0, between the three shards of c (a hand-split cluster), a
// few hundred milliseconds apart.
func (c *memCluster) shufflePartitions(q api.QueueKey) {
	c.t.Helper()
	from := uint32(c.shardOf(q.Name))
	other, third := from%3+1, (from+1)%3+1
	step := func(what string, fn func(ctx context.Context, n *memNode) error) {
		c.t.Helper()
		c.retrying(what, func() error {
			lead := c.leaderOf(0)
			if lead == nil || lead.node() == nil {
				return fmt.Errorf("no leader of the first group")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return fn(ctx, lead)
		})
		time.Sleep(300 * time.Millisecond)
	}
	part := func(p uint32) api.QueueKey {
		k := q
		k.Part = p
		return k
	}
	split := func(at uint32, p uint32) func(context.Context, *memNode) error {
		return func(ctx context.Context, n *memNode) error {
			if n.node().Shards.Of(part(p)) != 0 {
				return nil // made by a try that failed after it
			}
			_, err := n.node().Shards.Split(ctx, q, at)
			return err
		}
	}
	move := func(p, to uint32) func(context.Context, *memNode) error {
		return func(ctx context.Context, n *memNode) error {
			if n.node().Shards.Of(part(p)) == to {
				return nil
			}
			_, err := n.node().Shards.Move(ctx, part(p), to)
			return err
		}
	}
	time.Sleep(500 * time.Millisecond)
	step("split off partition 1", split(1<<31, 1))
	step("move partition 1", move(1, other))
	step("split off partition 2", split(1<<30, 2))
	step("move partition 2", move(2, third))
	step("move partition 1 again", move(1, third))
	step("move partition 2 again", move(2, other))
	step("move partition 0", move(0, other))
}
