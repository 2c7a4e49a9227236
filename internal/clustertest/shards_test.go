package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/server"
)

// shardsOf is a node's GET /cluster/shards, or nil if it did not answer.
func shardsOf(nd *node) *server.ShardsStatus {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + nd.httpAddr + "/cluster/shards")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st server.ShardsStatus
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	return &st
}

// waitShards waits until every running node runs n groups, each with a
// leader, and the leaders are spread: no node leads two while another
// leads none. It returns the groups as the first node sees them.
func waitShards(t *testing.T, c *cluster, n int) *server.ShardsStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last *server.ShardsStatus
	for time.Now().Before(deadline) {
		ok := true
		for _, nd := range c.nodes {
			st := shardsOf(nd)
			if st == nil || len(st.Shards) != n {
				ok = false
				break
			}
			led := map[string]int{}
			for _, sh := range st.Shards {
				if sh.LeaderID == "" {
					ok = false
				}
				led[sh.LeaderID]++
			}
			if len(led) < min(n, len(c.nodes)) {
				ok = false
			}
			last = st
		}
		if ok {
			return last
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the cluster does not run %d shards with spread leaders within 60 s; last seen: %+v", n, last)
	return nil
}

// shardOfQueue returns the shard a node's /cluster/shards says holds the
// queue named name (of the default account), or -1.
func shardOfQueue(st *server.ShardsStatus, name string) int {
	for _, sh := range st.Shards {
		if slices.Contains(sh.Queues, "000000000000/"+name) {
			return int(sh.Shard)
		}
	}
	return -1
}

// waitPlaced waits until nd's /cluster/shards shows every queue named
// (a node's replica of a shard it follows applies a new queue a moment
// after the leader), and returns it.
func waitPlaced(t *testing.T, nd *node, names ...string) *server.ShardsStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := shardsOf(nd)
		all := st != nil
		for _, name := range names {
			if all && shardOfQueue(st, name) < 0 {
				all = false
			}
		}
		if all {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's /cluster/shards does not show every queue of %v within 10 s: %+v", nd.id, names, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shardLeader returns the node that leads the shard holding the queue
// named name, as a majority of the running nodes see it.
func (c *cluster) shardLeader(name string) *node {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		votes := map[string]int{}
		for _, nd := range c.nodes {
			st := shardsOf(nd)
			if st == nil {
				continue
			}
			if s := shardOfQueue(st, name); s >= 0 && st.Shards[s].LeaderID != "" {
				votes[st.Shards[s].LeaderID]++
			}
		}
		for _, nd := range c.nodes {
			if votes[nd.id] > len(c.nodes)/2 {
				return nd
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader of %s's shard agreed on within 30 s", name)
	return nil
}

// retrying calls fn until it succeeds or 30 s pass: the SDK clients of
// these tests make one attempt each, and a shard's leadership may be
// handed over (to spread the leaders) while the test runs.
func retrying(t *testing.T, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestShardsSpreadQueuesAndLeaders runs three nodes with --shards 3
// through the AWS SDK for Go: the three groups are led by three nodes,
// new queues spread over them, every request works through every node
// (served where its queue's shard is led, forwarded there otherwise),
// ListQueues sees the queues of every shard, page by page, a queue goes
// beside its dead-letter queue and its messages are moved there, and the
// loss of a shard's leader (SIGKILL) loses nothing acknowledged.
func TestShardsSpreadQueuesAndLeaders(t *testing.T) {
	c := newClusterWith(t, 3, func(_ int, nd *node) { nd.args = []string{"--shards", "3"} })
	waitShards(t, c, 3)
	ctx := context.Background()

	// Six FIFO queues, each created through another node.
	var urls []string
	for i := range 6 {
		nd := c.nodes[i%3]
		var url string
		retrying(t, "create a queue", func() error {
			out, err := newClient(nd.httpAddr, 5*time.Second).CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName:  aws.String(fmt.Sprintf("q%d.fifo", i)),
				Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
			if err == nil {
				url = aws.ToString(out.QueueUrl)
			}
			return err
		})
		urls = append(urls, url)
	}
	st := waitPlaced(t, c.nodes[0], "q0.fifo", "q1.fifo", "q2.fifo", "q3.fifo", "q4.fifo", "q5.fifo")
	perShard := map[int]int{}
	for i := range 6 {
		s := shardOfQueue(st, fmt.Sprintf("q%d.fifo", i))
		if s < 0 {
			t.Fatalf("q%d.fifo is in no shard: %+v", i, st)
		}
		perShard[s]++
	}
	for s := range 3 {
		if perShard[s] != 2 {
			t.Fatalf("queues per shard %v, want 2 in each of the 3 (the shard with the fewest takes the next)", perShard)
		}
	}

	// Every queue takes 20 numbered messages, sent in batches through one
	// node and received through another, in order, each once.
	for i, url := range urls {
		in := c.nodes[i%3]
		for b := range 2 {
			var entries []types.SendMessageBatchRequestEntry
			for k := range 10 {
				n := b*10 + k
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)),
					MessageBody: aws.String(fmt.Sprintf("%d of q%d", n, i)), MessageGroupId: aws.String("g")})
			}
			retrying(t, "send a batch", func() error {
				out, err := newClient(in.httpAddr, 5*time.Second).SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
				}
				return err
			})
		}
	}
	for i, url := range urls {
		got := drainNumberedRetrying(t, c.nodes[(i+1)%3], url)
		if want := numbers(20); !slices.Equal(got, want) {
			t.Fatalf("q%d.fifo gave %v, want %v", i, got, want)
		}
	}

	// ListQueues through each node sees all six, whole and page by page.
	for _, nd := range c.nodes {
		var all []string
		retrying(t, "list queues", func() error {
			out, err := newClient(nd.httpAddr, 5*time.Second).ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("q")})
			if err == nil {
				all = out.QueueUrls
			}
			return err
		})
		if len(all) != 6 {
			t.Fatalf("ListQueues through %s: %v, want the 6 queues", nd.id, all)
		}
		var paged []string
		var token *string
		for {
			var out *sqs.ListQueuesOutput
			retrying(t, "list a page of queues", func() (err error) {
				out, err = newClient(nd.httpAddr, 5*time.Second).ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("q"), MaxResults: aws.Int32(4), NextToken: token})
				return err
			})
			paged = append(paged, out.QueueUrls...)
			if out.NextToken == nil {
				break
			}
			token = out.NextToken
		}
		if !slices.Equal(paged, all) {
			t.Fatalf("ListQueues through %s by pages of 4: %v, want %v", nd.id, paged, all)
		}
	}

	// A queue with a redrive policy goes beside its dead-letter queue,
	// and a message received twice moves there.
	dlq := c.createQueue("dead.fifo", map[string]string{"FifoQueue": "true"})
	var dlqArn string
	retrying(t, "get the dead-letter queue's ARN", func() error {
		out, err := newClient(c.nodes[1].httpAddr, 5*time.Second).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq), AttributeNames: []types.QueueAttributeName{"QueueArn"}})
		if err == nil {
			dlqArn = out.Attributes["QueueArn"]
		}
		return err
	})
	src := c.createQueue("source.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "1",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqArn + `","maxReceiveCount":"1"}`})
	st = waitPlaced(t, c.nodes[2], "dead.fifo", "source.fifo")
	if a, b := shardOfQueue(st, "dead.fifo"), shardOfQueue(st, "source.fifo"); a < 0 || a != b {
		t.Fatalf("dead.fifo is in shard %d and source.fifo in shard %d: a queue goes beside its dead-letter queue", a, b)
	}
	retrying(t, "send to the source queue", func() error {
		_, err := newClient(c.nodes[2].httpAddr, 5*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src),
			MessageBody: aws.String("0 poisoned"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")})
		return err
	})
	for i := 0; i < 2; i++ {
		retrying(t, "receive from the source queue", func() error {
			_, err := newClient(c.nodes[i].httpAddr, 5*time.Second).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), WaitTimeSeconds: 2})
			return err
		})
		time.Sleep(1100 * time.Millisecond)
	}
	if got := drainNumberedRetrying(t, c.nodes[0], dlq); !slices.Equal(got, []int{0}) {
		t.Fatalf("the dead-letter queue holds %v, want the message received beyond its limit", got)
	}

	// The leader of the shard holding q1.fifo is killed with 20 messages
	// acknowledged in it: another node leads the shard, and every one is
	// received from it.
	st = shardsOf(c.nodes[0])
	s := shardOfQueue(st, "q1.fifo")
	victim := c.nodes[0]
	for _, nd := range c.nodes {
		if nd.id == st.Shards[s].LeaderID {
			victim = nd
		}
	}
	var rest []*node
	for _, nd := range c.nodes {
		if nd != victim {
			rest = append(rest, nd)
		}
	}
	for n := range 20 {
		retrying(t, "send before the kill", func() error {
			_, err := newClient(rest[n%2].httpAddr, 5*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls[1]),
				MessageBody: aws.String(fmt.Sprintf("%d before", n)), MessageGroupId: aws.String("g")})
			return err
		})
	}
	c.kill(victim)
	got := drainNumberedRetrying(t, rest[0], urls[1])
	if want := numbers(20); !slices.Equal(got, want) {
		t.Fatalf("after its shard's leader was killed, q1.fifo gave %v, want %v", got, want)
	}
	c.restart(victim)
	waitShards(t, c, 3)
}

// numbers returns 0..n-1.
func numbers(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// drainNumberedRetrying is drainNumbered through a node while its
// cluster may still be electing a leader: a receive or delete that fails
// is retried (a receive through a new leader is answered by it).
func drainNumberedRetrying(t *testing.T, nd *node, queueURL string) []int {
	t.Helper()
	ctx := context.Background()
	client := newClient(nd.httpAddr, 10*time.Second)
	var got []int
	deadline := time.Now().Add(60 * time.Second)
	// A receive whose answer was lost is retried with its attempt id, so
	// that a FIFO queue gives the same messages again rather than hold
	// them invisible; a new receive gets a new id.
	attempt := 0
	for empty := 0; empty < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("draining %s took over 60 s; got %v", queueURL, got)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			ReceiveRequestAttemptId: aws.String(fmt.Sprintf("drain-%d", attempt))})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		attempt++
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range out.Messages {
			n, err := strconv.Atoi(strings.SplitN(aws.ToString(m.Body), " ", 2)[0])
			if err != nil {
				t.Fatalf("a message not of the test's: %.40q", aws.ToString(m.Body))
			}
			got = append(got, n)
			retrying(t, "delete", func() error {
				_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle})
				return err
			})
		}
	}
	return got
}
