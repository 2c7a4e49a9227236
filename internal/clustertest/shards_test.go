package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/testenv"
)

// shardsOf is a node's GET /cluster/shards, or nil if it did not answer.
func shardsOf(nd *node) *server.ShardsStatus { return shardsAt(nd.httpAddr) }

// shardsAt is the /cluster/shards of the node serving at httpAddr, or nil
// if it did not answer.
func shardsAt(httpAddr string) *server.ShardsStatus {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + httpAddr + "/cluster/shards")
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

// queueHolders returns the shards that hold the default account's queue
// name, as the answers (nil for a node that did not answer) show them.
func queueHolders(name string, answers ...*server.ShardsStatus) map[int]bool {
	holders := map[int]bool{}
	for _, st := range answers {
		if st == nil {
			continue
		}
		for _, sh := range st.Shards {
			for _, q := range sh.Queues {
				if strings.TrimPrefix(q, "000000000000/") == name {
					holders[int(sh.Shard)] = true
				}
			}
		}
	}
	return holders
}

// waitShards waits until every running node knows n groups (the first
// and its shards), each held by
// the replicas the map wants (every node, in a cluster of three) and led,
// where the map prefers a running node, by that node: the leaders spread
// as the map spreads its preferences. It returns the groups as the first
// running node sees them.
func waitShards(t *testing.T, c *cluster, n int) *server.ShardsStatus {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last *server.ShardsStatus
	running := map[string]bool{}
	for _, nd := range c.nodes {
		running[nd.id] = nd.running()
	}
	for time.Now().Before(deadline) {
		ok := true
		leaders := map[uint32]string{}
		held := map[uint32]map[string]bool{}
		var wanted [][]string
		var preferred []string
		first := true
		for _, nd := range c.nodes {
			if !running[nd.id] {
				continue
			}
			st := shardsOf(nd)
			if st == nil || len(st.Shards) != n {
				ok = false
				break
			}
			if first {
				last, first = st, false
				for _, sh := range st.Shards {
					wanted = append(wanted, sh.Wanted)
					preferred = append(preferred, sh.PreferredLeader)
				}
			}
			for _, sh := range st.Shards {
				if !sh.Held {
					continue
				}
				if held[sh.Shard] == nil {
					held[sh.Shard] = map[string]bool{}
				}
				held[sh.Shard][nd.id] = true
				if sh.LeaderID == "" || (leaders[sh.Shard] != "" && leaders[sh.Shard] != sh.LeaderID) {
					ok = false
				}
				leaders[sh.Shard] = sh.LeaderID
			}
		}
		for id := 0; ok && id < n; id++ {
			live := 0
			for _, w := range wanted[id] {
				if running[w] {
					live++
				}
			}
			l := leaders[uint32(id)]
			if l == "" || !held[uint32(id)][l] || len(held[uint32(id)]) != live {
				ok = false
			}
			if p := preferred[id]; p != "" && running[p] && l != p {
				ok = false
			}
		}
		if ok {
			return last
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the cluster does not run %d shards, each held where the map wants it and led where it prefers, within 90 s; last seen: %+v", n, last)
	return nil
}

// placedShards returns the shard of every queue some running node's
// /cluster/shards shows (a node shows the queues of the shards it holds
// a replica of), by name.
func placedShards(c *cluster) map[string]int {
	out := map[string]int{}
	for _, nd := range c.nodes {
		if !nd.running() {
			continue
		}
		st := shardsOf(nd)
		if st == nil {
			continue
		}
		for _, sh := range st.Shards {
			for _, q := range sh.Queues {
				out[strings.TrimPrefix(q, "000000000000/")] = int(sh.Shard)
			}
		}
	}
	return out
}

// waitPlaced waits until the running nodes' /cluster/shards show every
// queue named (a replica applies a new queue a moment after its leader),
// and returns the shard of each.
func waitPlaced(t *testing.T, c *cluster, names ...string) map[string]int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		placed := placedShards(c)
		all := true
		for _, name := range names {
			if _, ok := placed[name]; !ok {
				all = false
			}
		}
		if all {
			return placed
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes' /cluster/shards do not show every queue of %v within 10 s: %v", names, placed)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shardLeader returns the node that leads the shard holding the queue
// named name, as a majority of the replicas that answer see it.
func (c *cluster) shardLeader(name string) *node {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		shard, placed := placedShards(c)[name]
		votes, held := map[string]int{}, 0
		for _, nd := range c.nodes {
			st := shardsOf(nd)
			if st == nil || !placed {
				continue
			}
			for _, sh := range st.Shards {
				if int(sh.Shard) == shard && sh.Held {
					held++
					if sh.LeaderID != "" {
						votes[sh.LeaderID]++
					}
				}
			}
		}
		for _, nd := range c.nodes {
			if votes[nd.id] > held/2 && held > 0 {
				return nd
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader of %s's shard agreed on within 30 s", name)
	return nil
}

// shardMetrics returns the fifoq_shard_* series a node's /metrics
// shows, by series (name and labels, as written), or none if it did not
// answer.
func shardMetrics(nd *node) map[string]float64 {
	return scrapeMetrics(nd.httpAddr, func(series string) bool { return strings.HasPrefix(series, "fifoq_shard_") })
}

// scrapeMetrics returns the series of the /metrics of the node at
// httpAddr that keep takes, by series (name and labels, as written), or
// none if it did not answer.
func scrapeMetrics(httpAddr string, keep func(series string) bool) map[string]float64 {
	out := map[string]float64{}
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(series, "#") || !keep(series) {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[series] = v
		}
	}
	return out
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
// through the AWS SDK for Go: the three shards are led by three nodes,
// new queues spread over them, every request works through every node
// (served where its queue's shard is led, forwarded there otherwise),
// ListQueues sees the queues of every shard, page by page, a queue goes
// beside its dead-letter queue and its messages are moved there (also
// when the redrive policy and a move task join queues of other shards,
// which then move beside each other), and the
// loss of a shard's leader (SIGKILL) loses nothing acknowledged.
func TestShardsSpreadQueuesAndLeaders(t *testing.T) {
	testenv.Long(t, "three real nodes with three shards, about 70 s under -race")
	t.Parallel()
	c := newClusterWith(t, 3, func(_ int, nd *node) { nd.args = []string{"--shards", "3"} })
	waitShards(t, c, 4)
	ctx := context.Background()

	// Six FIFO queues, each created through another node.
	urls := createNumberedQueues(t, c, 6)
	placed := waitPlaced(t, c, "q0.fifo", "q1.fifo", "q2.fifo", "q3.fifo", "q4.fifo", "q5.fifo")
	perShard := map[int]int{}
	for i := range 6 {
		perShard[placed[fmt.Sprintf("q%d.fifo", i)]]++
	}
	for s := 1; s <= 3; s++ {
		if perShard[s] != 2 {
			t.Fatalf("queues per shard %v, want 2 in each of shards 1 to 3 (the shard with the fewest takes the next; the first group none)", perShard)
		}
	}

	// The web console shows each queue's shard.
	retrying(t, "the console's queues", func() error {
		resp, err := http.Get("http://" + c.nodes[1].httpAddr + "/console/api/queues")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var list struct {
			Queues []struct {
				Name  string  `json:"name"`
				Shard *uint32 `json:"shard"`
			} `json:"queues"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			return err
		}
		if len(list.Queues) != 6 {
			return fmt.Errorf("the console lists %d queues, want 6", len(list.Queues))
		}
		for _, q := range list.Queues {
			if q.Shard == nil || int(*q.Shard) != placed[q.Name] {
				return fmt.Errorf("the console shows %s in shard %v, the map has it in %d", q.Name, q.Shard, placed[q.Name])
			}
		}
		return nil
	})

	// fifoq cluster status shows every shard with its leader and its
	// three replicas' lag.
	retrying(t, "fifoq cluster status's shards", func() error {
		out := runVia(t, c.nodes[0], "cluster", "status")
		t.Logf("fifoq cluster status:\n%s", out)
		_, table, ok := strings.Cut(out, "SHARD")
		if !ok {
			return fmt.Errorf("no shard table in:\n%s", out)
		}
		rows := strings.Split(strings.TrimSpace(table), "\n")[1:]
		if len(rows) != 3 {
			return fmt.Errorf("%d shard rows, want 3:\n%s", len(rows), out)
		}
		for _, row := range rows {
			f := strings.Fields(row)
			if len(f) != 8 || f[1] == "none" {
				return fmt.Errorf("a shard's row is %q: want its number, its leader and three replicas with their lag", row)
			}
		}
		return nil
	})

	// The per-shard metrics: each group led by one node, whose replica
	// holds the group's queues.
	retrying(t, "per-shard metrics", func() error {
		leaders, queues := map[string]int{}, map[string]float64{}
		for _, nd := range c.nodes {
			for series, v := range shardMetrics(nd) {
				if shard, ok := strings.CutPrefix(series, `fifoq_shard_role{role="Leader",shard="`); ok && v == 1 {
					leaders[strings.TrimSuffix(shard, `"}`)]++
				}
				if shard, ok := strings.CutPrefix(series, `fifoq_shard_queues{shard="`); ok {
					queues[strings.TrimSuffix(shard, `"}`)] = v
				}
			}
		}
		for _, shard := range []string{"0", "1", "2", "3"} {
			if leaders[shard] != 1 {
				return fmt.Errorf("fifoq_shard_role says shards are led %v times, want each once", leaders)
			}
			if want := map[bool]float64{true: 0, false: 2}[shard == "0"]; queues[shard] != want {
				return fmt.Errorf("fifoq_shard_queues: %v, want 2 in each of shards 1 to 3", queues)
			}
		}
		return nil
	})

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
		got := drainNumberedRetrying(t, c.nodes[(i+1)%3], url, 20)
		if want := numbers(20); !slices.Equal(got, want) {
			t.Fatalf("q%d.fifo gave %v, want %v", i, got, want)
		}
	}

	// ListQueues through each node sees all six, whole and page by page.
	for _, nd := range c.nodes {
		all := listQueuesVia(t, nd, "q")
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

	// A queue is listed as soon as its creation is answered, through
	// every node: ListQueues is answered by the first group's leader,
	// whose replica of a shard another node leads learns that the
	// creation committed only with that leader's next append, up to two
	// of a shard's CommitTimeout (1 s) later.
	for i, via := range c.nodes {
		name := fmt.Sprintf("fresh%d", i)
		retrying(t, "create "+name+" through "+via.id, func() error {
			_, err := newClient(via.httpAddr, 5*time.Second).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
			return err
		})
		for _, nd := range c.nodes {
			if got := listQueuesVia(t, nd, name); len(got) != 1 {
				t.Fatalf("ListQueues through %s right after %s was created through %s: %v, want it", nd.id, name, via.id, got)
			}
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
	placed = waitPlaced(t, c, "dead.fifo", "source.fifo")
	if a, b := placed["dead.fifo"], placed["source.fifo"]; a != b {
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
	if got := drainNumberedRetrying(t, c.nodes[0], dlq, 1); !slices.Equal(got, []int{0}) {
		t.Fatalf("the dead-letter queue holds %v, want the message received beyond its limit", got)
	}

	// A redrive policy set on a queue in another shard than its
	// dead-letter queue moves the queue beside it first, and a move task
	// to a queue of a third shard moves that one too.
	dest := c.createQueue("late-dest.fifo", map[string]string{"FifoQueue": "true"})
	c.createQueue("late-dead.fifo", map[string]string{"FifoQueue": "true"})
	lateSrc := c.createQueue("late-source.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "1"})
	placed = waitPlaced(t, c, "late-dead.fifo", "late-source.fifo", "late-dest.fifo")
	t.Logf("before the redrive policy: %v", placed)
	if placed["late-dead.fifo"] == placed["late-source.fifo"] || placed["late-dead.fifo"] == placed["late-dest.fifo"] {
		t.Fatalf("late-dead.fifo shares a shard with late-source.fifo or late-dest.fifo (%v): the test needs them apart", placed)
	}
	lateArn := "arn:aws:sqs:us-east-1:000000000000:late-dead.fifo"
	retrying(t, "set a redrive policy naming a queue of another shard", func() error {
		_, err := newClient(c.nodes[2].httpAddr, 20*time.Second).SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(lateSrc),
			Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + lateArn + `","maxReceiveCount":"1"}`}})
		return err
	})
	waitQueueIn(t, c, "late-source.fifo", placed["late-dead.fifo"])
	retrying(t, "send to late-source.fifo", func() error {
		_, err := newClient(c.nodes[0].httpAddr, 5*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(lateSrc),
			MessageBody: aws.String("0 poisoned"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")})
		return err
	})
	for i := 0; i < 2; i++ {
		retrying(t, "receive from late-source.fifo", func() error {
			_, err := newClient(c.nodes[i].httpAddr, 5*time.Second).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(lateSrc), WaitTimeSeconds: 2})
			return err
		})
		time.Sleep(1100 * time.Millisecond)
	}
	retrying(t, "start a move task to a queue of another shard", func() error {
		_, err := newClient(c.nodes[1].httpAddr, 20*time.Second).StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(lateArn),
			DestinationArn: aws.String("arn:aws:sqs:us-east-1:000000000000:late-dest.fifo")})
		return err
	})
	waitQueueIn(t, c, "late-dest.fifo", placed["late-dead.fifo"])
	if got := drainNumberedRetrying(t, c.nodes[0], dest, 1); !slices.Equal(got, []int{0}) {
		t.Fatalf("the move task's destination holds %v, want the dead-lettered message", got)
	}

	// The leader of the shard holding q1.fifo is killed with 20 messages
	// acknowledged in it: another node leads the shard, and every one is
	// received from it.
	victim := c.shardLeader("q1.fifo")
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
	got := drainNumberedRetrying(t, rest[0], urls[1], 20)
	if want := numbers(20); !slices.Equal(got, want) {
		t.Fatalf("after its shard's leader was killed, q1.fifo gave %v, want %v", got, want)
	}
	c.restart(victim)
	waitShards(t, c, 4)
}

// createNumberedQueues creates the FIFO queues q0.fifo to q<n-1>.fifo
// (content-based deduplication), each through the next node, and returns
// their URLs.
func createNumberedQueues(t *testing.T, c *cluster, n int) []string {
	t.Helper()
	var urls []string
	for i := range n {
		nd := c.nodes[i%len(c.nodes)]
		var url string
		retrying(t, "create a queue", func() error {
			out, err := newClient(nd.httpAddr, 5*time.Second).CreateQueue(context.Background(), &sqs.CreateQueueInput{
				QueueName:  aws.String(fmt.Sprintf("q%d.fifo", i)),
				Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
			if err == nil {
				url = aws.ToString(out.QueueUrl)
			}
			return err
		})
		urls = append(urls, url)
	}
	return urls
}

// listQueuesVia lists through nd the queues whose names start with
// prefix, in one ListQueues call, retried until it answers.
func listQueuesVia(t *testing.T, nd *node, prefix string) []string {
	t.Helper()
	var all []string
	retrying(t, "list queues", func() error {
		out, err := newClient(nd.httpAddr, 5*time.Second).ListQueues(context.Background(), &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
		if err == nil {
			all = out.QueueUrls
		}
		return err
	})
	return all
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
// is retried (a receive through a new leader is answered by it). Once it
// has want messages, one empty receive ends it (a message too many would
// come then); before, three in a row.
func drainNumberedRetrying(t *testing.T, nd *node, queueURL string, want int) []int {
	t.Helper()
	ctx := context.Background()
	client := newClient(nd.httpAddr, 10*time.Second)
	var got []int
	deadline := time.Now().Add(60 * time.Second)
	// A receive whose answer was lost is retried with its attempt id, so
	// that a FIFO queue gives the same messages again rather than hold
	// them invisible; a new receive gets a new id.
	attempt := 0
	for empty := 0; empty < 3 && (empty == 0 || len(got) < want); {
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

// TestShardsOnFiveNodesFollowTheMembership runs five nodes with --shards 5:
// each of the five shards beside the first group has three replicas, so most requests arrive at a node that
// holds no replica of their queue's shard and are sent to its leader (or
// to a replica, which names its leader). Every queue's messages go in
// through one node and out through another, ListQueues through every
// node sees every queue, and the replicas follow the membership: a sixth
// node that joins is given its share of them, and two nodes removed one
// right after the other have their replicas moved to the others first,
// each shard keeping three, while nothing acknowledged is lost.
func TestShardsOnFiveNodesFollowTheMembership(t *testing.T) {
	testenv.Long(t, "five real nodes through membership changes, about 65 s under -race")
	t.Parallel()
	c := newClusterWith(t, 5, func(i int, nd *node) { nd.args = []string{"--shards", "5"} })
	five := &cluster{t: t, nodes: c.nodes}
	waitShards(t, five, 6)
	ctx := context.Background()

	urls := createNumberedQueues(t, c, 10)
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("q%d.fifo", i)
	}
	placed := waitPlaced(t, five, names...)
	perShard := map[int]int{}
	for _, name := range names {
		perShard[placed[name]]++
	}
	for s := 1; s <= 5; s++ {
		if perShard[s] != 2 {
			t.Fatalf("queues per shard %v, want 2 in each of shards 1 to 5", perShard)
		}
	}
	send := func(round int) {
		for i, url := range urls {
			in := c.nodes[(i+round)%5]
			var entries []types.SendMessageBatchRequestEntry
			for k := range 10 {
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)),
					MessageBody: aws.String(fmt.Sprintf("%d of q%d round %d", k, i, round)), MessageGroupId: aws.String("g")})
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
	drain := func(through []*node) {
		for i, url := range urls {
			if got := drainNumberedRetrying(t, through[(i+2)%len(through)], url, 10); !slices.Equal(got, numbers(10)) {
				t.Fatalf("q%d.fifo gave %v, want %v", i, got, numbers(10))
			}
		}
	}
	send(0)
	drain(c.nodes[:5])
	for _, nd := range c.nodes[:5] {
		all := listQueuesVia(t, nd, "q")
		if len(all) != 10 {
			t.Fatalf("ListQueues through %s: %d queues, want 10: %v", nd.id, len(all), all)
		}
	}

	// A sixth node joins: it is given replicas, and the messages sent
	// before it are received after.
	send(1)
	joiner := &node{id: "n6", httpAddr: freeAddr(t), raftAddr: freeAddr(t), dataDir: t.TempDir(), bin: binary,
		args: []string{"--shards", "5"}, join: "http://" + c.nodes[0].httpAddr}
	joiner.logPath = filepath.Join(t.TempDir(), "n6.log")
	c.nodes = append(c.nodes, joiner)
	c.start(joiner, "")
	deadline := time.Now().Add(90 * time.Second)
	for {
		st := shardsOf(c.nodes[5])
		held := 0
		if st != nil {
			for _, sh := range st.Shards {
				if sh.Held && sh.Shard != 0 {
					held++
				}
			}
		}
		if held > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the joined node holds no shard's replica after 90 s: %+v\n%s", st, c.nodes[5].tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitShards(t, c, 6)
	drain(c.nodes)

	// n2 and n3 are removed, one right after the other, and stopped as
	// soon as each removal answers: fifoq cluster remove moves a
	// member's replicas to the others before it removes it, so that no
	// shard is left with two of its three replicas gone (no quorum, for
	// good). Every shard keeps three replicas, none on n2 or n3.
	send(2)
	for _, gone := range c.nodes[1:3] {
		out, err := exec.Command(binary, "cluster", "remove", gone.id, "--endpoint", "http://"+c.nodes[0].httpAddr).CombinedOutput()
		if err != nil {
			t.Fatalf("fifoq cluster remove %s: %v\n%s", gone.id, err, out)
		}
		c.kill(gone)
	}
	rest := &cluster{t: t, nodes: append([]*node{c.nodes[0]}, c.nodes[3:]...)}
	deadline = time.Now().Add(60 * time.Second)
	for moved := false; !moved; {
		moved = true
		for _, nd := range rest.nodes {
			st := shardsOf(nd)
			if st == nil {
				moved = false
				continue
			}
			for _, sh := range st.Shards {
				if slices.Contains(sh.Wanted, "n2") || slices.Contains(sh.Wanted, "n3") || (sh.Shard != 0 && len(sh.Wanted) != 3) {
					moved = false
				}
			}
		}
		if !moved && time.Now().After(deadline) {
			t.Fatalf("60 s after n2's and n3's removal, the map still wants a replica on them: %+v", shardsOf(rest.nodes[0]))
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitShards(t, rest, 6)
	drain(rest.nodes)
}

// TestShardLeadershipNotHandedToSkewedClock runs three nodes with three
// shards and restarts the node a shard's map prefers to lead it with its
// clock 3 s ahead (beyond --max-clock-offset). Such a node refuses to
// lead, so the leaders that balance the shards must not hand it the
// shard: each hand-over would be handed straight back, and every round
// of balancing would cost the shard two elections. Over 12 s (two rounds)
// the shard's leader must not change, and never be the skewed node.
func TestShardLeadershipNotHandedToSkewedClock(t *testing.T) {
	testenv.Long(t, "a node restarted with a skewed clock and 20 s of watching its shard's leadership")
	c := newClusterWith(t, 3, func(_ int, nd *node) { nd.args = []string{"--shards", "3"} })
	st := waitShards(t, c, 4)
	skewed := c.nodes[1]
	var shard uint32
	for _, sh := range st.Shards {
		if sh.Shard != 0 && sh.PreferredLeader == skewed.id {
			shard = sh.Shard
		}
	}
	if shard == 0 {
		t.Fatalf("no shard prefers %s to lead it: %+v", skewed.id, st.Shards)
	}
	c.sigterm(skewed)
	skewed.bin, skewed.env = faultyBinary(t), []string{"FIFOQ_TEST_CLOCK_SKEW=3s"}
	c.restart(skewed) // it answers, and is not ready: its clock is off
	// Time for the members to measure the skewed clock (every 2 s) and
	// for the shard to settle on a sound leader.
	time.Sleep(8 * time.Second)
	series := fmt.Sprintf(`fifoq_shard_leader_changes_total{shard="%d"}`, shard)
	sound := []*node{c.nodes[0], c.nodes[2]}
	changes := func() (n float64) {
		for _, nd := range sound {
			n += shardMetrics(nd)[series]
		}
		return n
	}
	before := changes()
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, nd := range sound {
			for _, sh := range shardsOf(nd).Shards {
				if sh.Shard == shard && sh.LeaderID == skewed.id {
					t.Fatalf("%s, whose clock is 3 s ahead, leads shard %d (as %s sees it)", skewed.id, shard, nd.id)
				}
			}
		}
	}
	if n := changes() - before; n != 0 {
		t.Fatalf("shard %d's leader changed %v times in 12 s (as its two sound replicas count): its leadership was handed to the skewed node and back", shard, n)
	}
}

// TestFrozenShardLeaderSeenFromANodeWithoutReplica runs five nodes with
// five shards, each on three of them, and freezes (SIGSTOP) the leader
// of a queue's shard after a node that holds no replica of that shard
// has learnt it leads. The shard's other replicas elect another leader
// within a second or two; a request through that node must then reach
// the new one (the first attempt may answer a retryable error, as a
// request to a frozen leader does on a node that holds a replica), not
// wait on the frozen one for as long as its client waits.
func TestFrozenShardLeaderSeenFromANodeWithoutReplica(t *testing.T) {
	t.Parallel()
	c := newClusterWith(t, 5, func(_ int, nd *node) { nd.args = []string{"--shards", "5"} })
	waitShards(t, c, 6)
	url := createNumberedQueues(t, c, 1)[0]
	shard := waitPlaced(t, c, "q0.fifo")["q0.fifo"]
	var via *node
	for _, nd := range c.nodes {
		for _, sh := range shardsOrNone(nd) {
			if int(sh.Shard) == shard && !sh.Held {
				via = nd
			}
		}
	}
	if via == nil {
		t.Fatalf("every node holds shard %d", shard)
	}
	ctx := context.Background()
	send := func(timeout time.Duration, n int) error {
		_, err := newClient(via.httpAddr, timeout).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
			MessageBody: aws.String(strconv.Itoa(n)), MessageGroupId: aws.String("g")})
		return err
	}
	// Through via, so that it learns who leads.
	retrying(t, "send", func() error { return send(5*time.Second, 0) })
	leader := c.shardLeader("q0.fifo")
	t.Logf("freeze %s, the leader of shard %d; send through %s, which holds no replica of it", leader.id, shard, via.id)
	c.freeze(leader)
	defer c.thaw(leader)
	began := time.Now()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if err = send(15*time.Second, attempt); err == nil {
			break
		}
		t.Logf("attempt %d after %v: %v", attempt, time.Since(began).Round(time.Millisecond), err)
	}
	took := time.Since(began)
	if err != nil || took > 12*time.Second {
		t.Fatalf("a send through %s took %v after the shard's leader froze (%v): it waited on the frozen leader", via.id, took.Round(time.Millisecond), err)
	}
	t.Logf("a send through %s succeeded %v after the shard's leader froze", via.id, took.Round(time.Millisecond))
}

// TestConfigQueuesPlacedInShards starts three nodes with three shards and
// a config file of queues, as a new cluster is started: the leader that
// declares them places them as CreateQueue through the API would, in the
// shards (a queue beside its dead-letter queue), not all in the first
// group, whose writes every node carries; and they work through every
// node.
func TestConfigQueuesPlacedInShards(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "fifoq.yaml")
	yaml := "queues:\n  - name: orders-dlq.fifo\n    attributes:\n      FifoQueue: true\n" +
		"  - name: orders.fifo\n    attributes:\n      FifoQueue: true\n      ContentBasedDeduplication: true\n" +
		"    dead_letter:\n      queue: orders-dlq.fifo\n      max_receive_count: 5\n"
	for i := range 6 {
		yaml += fmt.Sprintf("  - name: c%d\n", i)
	}
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClusterWith(t, 3, func(_ int, nd *node) { nd.args = []string{"--shards", "3", "--config", file} })
	waitShards(t, c, 4)
	names := []string{"orders-dlq.fifo", "orders.fifo", "c0", "c1", "c2", "c3", "c4", "c5"}
	defer func() {
		if t.Failed() {
			for _, nd := range c.nodes {
				t.Logf("%s's log ends:\n%s", nd.id, nd.tail(15))
			}
		}
	}()
	placed := waitPlaced(t, c, names...)
	perShard := map[int]int{}
	for _, name := range names {
		perShard[placed[name]]++
	}
	if perShard[0] != 0 || len(perShard) != 3 {
		t.Fatalf("the config file's queues are in shards %v (queues by shard), want none in the first group and some in each of shards 1 to 3: %v", perShard, placed)
	}
	if placed["orders.fifo"] != placed["orders-dlq.fifo"] {
		t.Fatalf("orders.fifo is in shard %d, its dead-letter queue in %d", placed["orders.fifo"], placed["orders-dlq.fifo"])
	}
	for i, nd := range c.nodes {
		url := fmt.Sprintf("http://%s/000000000000/c%d", nd.httpAddr, i)
		if _, err := sendVia(nd, url, "hello"); err != nil {
			t.Fatalf("send to c%d through %s: %v", i, nd.id, err)
		}
	}
}

// TestShardsAutoFollowTheNodes starts three nodes with no --shards flag,
// so with its default, auto: the cluster runs one shard per voting
// member, three, and when a fourth
// node joins it adds a fourth, which the balancer moves queues into (one
// every 30 s while the shards differ by two queues or more), each with
// its message.
func TestShardsAutoFollowTheNodes(t *testing.T) {
	testenv.Long(t, "a fourth node joins a cluster with --shards auto, and queues move into its shard: about two minutes")
	t.Parallel()
	c := newCluster(t, 3, nil, nil)
	waitShards(t, c, 4)
	urls := createNumberedQueues(t, c, 6)
	for i, u := range urls {
		retrying(t, "send to "+u, func() error {
			_, err := newClient(c.nodes[i%3].httpAddr, 5*time.Second).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(u),
				MessageBody: aws.String(fmt.Sprintf("%d kept", 0)), MessageGroupId: aws.String("g")})
			return err
		})
	}
	joiner := &node{id: "n4", httpAddr: freeAddr(t), raftAddr: freeAddr(t), dataDir: t.TempDir(), bin: binary,
		join: "http://" + c.nodes[0].httpAddr}
	joiner.logPath = filepath.Join(t.TempDir(), "n4.log")
	c.nodes = append(c.nodes, joiner)
	c.start(joiner, "")
	waitShards(t, c, 5)
	// The six queues were placed two in each of shards 1 to 3: the
	// fourth, empty, takes one of them.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		count := map[int]int{}
		for _, id := range placedShards(c) {
			count[id]++
		}
		if count[4] > 0 && count[0] == 0 && count[1]+count[2]+count[3]+count[4] == 6 {
			t.Logf("queues per shard once a fourth shard was added: %v", count)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queues per shard 2 minutes after a fourth shard was added: %v; want one moved to shard 4", count)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for i, u := range urls {
		if got := drainNumberedRetrying(t, c.nodes[i%4], u, 1); !slices.Equal(got, []int{0}) {
			t.Fatalf("q%d.fifo holds %v after the balancing, want its one message", i, got)
		}
	}
}

// TestNewQueueServedThroughEveryNodeAtOnce creates queues through one
// node and at once receives from and reads each through the others, as a
// client that spreads its requests over a load balancer does. The node
// that first places a queue is the first group's leader; the others learn
// of the placement a moment later, so a request that reaches a node
// whose copy of the map does not name the queue yet is routed by the
// node it was forwarded from, and must be served from the group it was
// routed to, not from the group this node's map would have it in (where
// the queue does not exist).
func TestNewQueueServedThroughEveryNodeAtOnce(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, nil, nil)
	waitShards(t, c, 4)
	ctx := context.Background()
	clients := make([]*sqs.Client, len(c.nodes))
	for i, nd := range c.nodes {
		clients[i] = newClient(nd.httpAddr, 10*time.Second)
	}
	const workers, each = 4, 25
	errs := make(chan error, workers*each*4)
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				via := (w + i) % len(clients)
				name := fmt.Sprintf("at-once-%d-%d.fifo", w, i)
				out, err := clients[via].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name),
					Attributes: map[string]string{"FifoQueue": "true"}})
				if err != nil {
					errs <- fmt.Errorf("create %s through %s: %w", name, c.nodes[via].id, err)
					continue
				}
				for k := 1; k < len(clients); k++ {
					other := (via + k) % len(clients)
					if _, err := clients[other].ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl}); err != nil {
						errs <- fmt.Errorf("receive from %s through %s, just created through %s: %w", name, c.nodes[other].id, c.nodes[via].id, err)
					}
					if _, err := clients[other].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
						AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}}); err != nil {
						errs <- fmt.Errorf("attributes of %s through %s, just created through %s: %w", name, c.nodes[other].id, c.nodes[via].id, err)
					}
				}
			}
		}()
	}
	for range workers {
		<-done
	}
	close(errs)
	var failed []string
	for err := range errs {
		failed = append(failed, err.Error())
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d requests right after their queue's creation failed; the first:\n%s", len(failed), workers*each*2*(len(clients)-1),
			strings.Join(failed[:min(len(failed), 5)], "\n"))
	}
}
