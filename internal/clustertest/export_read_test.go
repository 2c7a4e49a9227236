package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
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

// TestExportReadsEveryPartitionAtOnce sends messages to a high-throughput
// FIFO queue spread over three partitions and to a plain FIFO queue
// beside it, and at once, through every member, exports each queue
// (`fifoq export`'s GET /admin/export) and lists it at the developer
// endpoint (/_aws/sqs/messages): each must hold every message whose send
// was answered, whichever member is asked and whichever partition holds
// the message. A member that is not its shard's leader learns that the
// last entries committed only with its leader's next append, so a read of
// its own replica would miss the last sends for a second or two.
func TestExportReadsEveryPartitionAtOnce(t *testing.T) {
	t.Parallel()
	c := splitAndPlainCluster(t)
	htURL, plainURL := c.splitAndPlain("export")
	clients := c.memberClients()
	const groups, perGroup = 30, 2
	for _, queueURL := range []string{htURL, plainURL} {
		var want []string
		for b := range groups * perGroup / 10 {
			var entries []types.SendMessageBatchRequestEntry
			for i := range 10 {
				n := b*10 + i
				body := "m" + strconv.Itoa(n)
				want = append(want, body)
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body),
					MessageGroupId: aws.String("g" + strconv.Itoa(n%groups)), MessageDeduplicationId: aws.String(body)})
			}
			c.retrying("send a batch", func() error {
				out, err := clients[b%len(clients)].SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("%d entries failed: %s %s", len(out.Failed), aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
				}
				return err
			})
		}
		slices.Sort(want)
		name := queueURL[strings.LastIndex(queueURL, "/")+1:]
		for _, nd := range c.nodes {
			at := "http://" + nd.httpAddr + "/000000000000/" + name
			if got := exportBodies(t, nd.httpAddr, at); !slices.Equal(got, want) {
				t.Errorf("the export of %s through %s right after its sends holds %d messages, want %d: %v", name, nd.id, len(got), len(want), missing(want, got))
			}
			listed := listedBodies(t, nd.httpAddr, at)
			if len(listed) != len(want) {
				t.Errorf("the developer listing of %s through %s right after its sends holds %d messages, want %d", name, nd.id, len(listed), len(want))
			}
			// Oldest first: each group's messages in the order sent.
			last := map[int]int{}
			for _, b := range listed {
				n, _ := strconv.Atoi(strings.TrimPrefix(b, "m"))
				if prev, ok := last[n%groups]; ok && prev > n {
					t.Errorf("the developer listing of %s through %s lists m%d after m%d, of the same group", name, nd.id, n, prev)
				}
				last[n%groups] = n
			}
		}
	}
	// A queue that does not exist is answered so wherever it is asked
	// for: by its shard's leader, through any other member.
	for _, nd := range c.nodes {
		resp, err := http.Get("http://" + nd.httpAddr + server.ExportPath + "?" + url.Values{"QueueUrl": {"http://" + nd.httpAddr + "/000000000000/none.fifo"}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "QueueDoesNotExist") {
			t.Errorf("the export of a queue that does not exist through %s: %s %s, want 400 QueueDoesNotExist", nd.id, resp.Status, b)
		}
	}
}

// exportBodies exports the queue at queueURL through the member at addr
// and returns its messages' bodies, sorted; the export must end whole.
func exportBodies(t *testing.T, addr, queueURL string) []string {
	t.Helper()
	// Generous: a large export under the race detector, on a machine
	// that runs other tests' clusters too, has taken over half a minute.
	const wait = 3 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+server.ExportPath+"?"+url.Values{"QueueUrl": {queueURL}}.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("export through %s: %v", addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		// Cut off: by the server, or by the deadline above.
		t.Fatalf("reading the export through %s, %v after it was asked for (%d bytes read): %v", addr, time.Since(start).Round(time.Millisecond), len(b), err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export through %s: %s %s", addr, resp.Status, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := lines[len(lines)-1]; last != `{"ExportComplete":true}` {
		t.Fatalf("the export through %s did not end whole, %v after it was asked for: %q", addr, time.Since(start).Round(time.Millisecond), last[:min(len(last), 300)])
	}
	var bodies []string
	for _, l := range lines[:len(lines)-1] {
		var m struct{ Body string }
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("an export line through %s: %v: %s", addr, err, l)
		}
		bodies = append(bodies, m.Body)
	}
	slices.Sort(bodies)
	t.Logf("the export through %s: %d messages, %d bytes, in %v", addr, len(bodies), len(b), time.Since(start).Round(time.Millisecond))
	return bodies
}

// listedBodies lists the queue at queueURL at the developer endpoint of
// the member at addr and returns the listed messages' bodies, in the
// listing's order.
func listedBodies(t *testing.T, addr, queueURL string) []string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/_aws/sqs/messages?QueueUrl=" + url.QueryEscape(queueURL))
	if err != nil {
		t.Fatalf("the developer listing through %s: %v", addr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the developer listing through %s: %s %.300s", addr, resp.Status, b)
	}
	var bodies []string
	for _, m := range listedBody.FindAllStringSubmatch(string(b), -1) {
		bodies = append(bodies, m[1])
	}
	return bodies
}

// listedBody matches a message body in the developer listing's XML.
var listedBody = regexp.MustCompile(`<Body>([^<]*)</Body>`)

// missing returns what want holds and got does not, both sorted.
func missing(want, got []string) []string {
	var out []string
	for _, w := range want {
		if _, found := slices.BinarySearch(got, w); !found {
			out = append(out, w)
		}
	}
	return out
}

// TestExportLargerThanAForwardedAnswer exports a queue of 70 MB (70
// messages of 1,000,000 bytes) through every member of a cluster of four
// with four shards, one of which holds no replica of the queue's shard:
// the partition's leader streams the messages to the member asked, which
// must not hold them to the bound of an SQS answer it relays (64 MiB).
func TestExportLargerThanAForwardedAnswer(t *testing.T) {
	testenv.Long(t, "four exports of 70 MB, about three and a half minutes under -race")
	t.Parallel()
	c := newMemCluster(t, 4, 4, 41)
	c.logTailsOnFailure(40)
	c.waitShards(5)
	queueURL := c.createQueue("large.fifo", map[string]string{"FifoQueue": "true"})
	clients := c.memberClients()
	const messages, size = 70, 1_000_000
	for i := range messages {
		body := fmt.Sprintf("%03d", i) + strings.Repeat("x", size-3)
		c.retrying("send 1,000,000 bytes", func() error {
			_, err := clients[i%len(clients)].SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queueURL),
				MessageBody: aws.String(body), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(strconv.Itoa(i))})
			return err
		})
	}
	shard := c.shardOf("large.fifo")
	elsewhere := false
	for _, nd := range c.nodes {
		held := false
		for _, sh := range nd.shards().Shards {
			held = held || int(sh.Shard) == shard && sh.Held
		}
		elsewhere = elsewhere || !held
		got := exportBodies(t, nd.httpAddr, "http://"+nd.httpAddr+"/000000000000/large.fifo")
		if len(got) != messages {
			t.Fatalf("the export through %s (replica of shard %d held: %v) holds %d messages, want %d", nd.id, shard, held, len(got), messages)
		}
		for i, b := range got {
			if len(b) != size || b[:3] != fmt.Sprintf("%03d", i) {
				t.Fatalf("the export through %s: message %d is %d bytes beginning %q", nd.id, i, len(b), b[:min(len(b), 3)])
			}
		}
	}
	if !elsewhere {
		t.Fatal("every member holds a replica of the queue's shard: the test needs one that does not")
	}
}

// TestExportRightAfterItsShardLeaderFailed sends messages through the
// leader of their queue's shard, crashes it as soon as it has answered,
// and at once exports and lists the queue through each other member: both
// must hold every message whose send was answered. The followers learn
// that their leader's last entries committed only with its next append,
// which a crashed leader never sends; an export that found the leader
// gone read a follower's replica at once, and missed the last sends.
// It must wait for the next leader, as ListQueues does
// (TestListQueuesRightAfterItsShardLeaderFailed).
func TestExportRightAfterItsShardLeaderFailed(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 3, 3, 73)
	c.logTailsOnFailure(40)
	ctx := context.Background()
	for round := range 3 {
		c.waitShards(4)
		name := fmt.Sprintf("orphan-export-%d", round)
		c.createQueue(name, nil)
		// Every member knows the queue before the sends: an export
		// right after the queue's creation is not what is tested here.
		c.retrying("every member exports "+name, func() error {
			for _, nd := range c.running() {
				resp, err := http.Get("http://" + nd.httpAddr + server.ExportPath + "?" +
					url.Values{"QueueUrl": {"http://" + nd.httpAddr + "/000000000000/" + name}}.Encode())
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("the export through %s: %s", nd.id, resp.Status)
				}
			}
			return nil
		})
		shard := uint32(c.shardOf(name))
		var victim *memNode
		c.retrying(fmt.Sprintf("a leader of shard %d", shard), func() error {
			if victim = c.leaderOf(shard); victim == nil {
				return fmt.Errorf("shard %d has no leader", shard)
			}
			return nil
		})
		client := newClient(victim.httpAddr, 10*time.Second)
		queueURL := "http://" + victim.httpAddr + "/000000000000/" + name
		var want []string
		for i := range 5 {
			body := fmt.Sprintf("r%d-m%d", round, i)
			if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}); err != nil {
				t.Fatalf("round %d: send %s through %s: %v", round, body, victim.id, err)
			}
			want = append(want, body)
		}
		c.crash(victim)
		slices.Sort(want)
		for _, nd := range c.running() {
			at := "http://" + nd.httpAddr + "/000000000000/" + name
			if m := missing(want, exportBodies(t, nd.httpAddr, at)); len(m) > 0 {
				t.Errorf("round %d: the export through %s right after %s, the leader of shard %d, failed misses %v", round, nd.id, victim.id, shard, m)
			}
			listed := listedBodies(t, nd.httpAddr, at)
			slices.Sort(listed)
			if m := missing(want, listed); len(m) > 0 {
				t.Errorf("round %d: the developer listing through %s right after %s, the leader of shard %d, failed misses %v", round, nd.id, victim.id, shard, m)
			}
		}
		c.start(victim)
	}
}
