package clustertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestConsoleShowsEveryQueueThroughEveryMember fills four FIFO queues
// and a high-throughput one spread over four partitions, in a cluster of
// four members with four shards (each shard on three of them, so each
// member holds no replica of one shard), and reads them through every
// member's web console: the list of queues, a queue's page, its messages
// and its groups. Each member shows every queue whole, also those it
// holds no replica of, which it reads from a member that does; and a
// queue whose policy denies receiving is peeked through none of them,
// the member that reads it checking the policy it holds.
func TestConsoleShowsEveryQueueThroughEveryMember(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 4, 4, 47)
	c.logTailsOnFailure(40)
	c.waitShards(5)
	clients := c.memberClients()
	ctx := context.Background()
	const groups, perGroup = 4, 2
	names := []string{"a.fifo", "b.fifo", "c.fifo", "d.fifo", "wide.fifo"}
	for i, name := range names {
		attrs := map[string]string{"FifoQueue": "true"}
		if name == "wide.fifo" {
			attrs = highThroughputFIFO
		}
		url := c.createQueue(name, attrs)
		cl := clients[i%len(clients)]
		for g := range groups {
			for k := range perGroup {
				body := fmt.Sprintf("g%d-%d", g, k)
				c.retrying("SendMessage", func() error {
					_, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body),
						MessageGroupId: aws.String("g" + strconv.Itoa(g)), MessageDeduplicationId: aws.String(body)})
					return err
				})
			}
		}
		// One message in flight, for the counts to tell the states apart.
		c.retrying("ReceiveMessage", func() error {
			out, err := cl.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1,
				VisibilityTimeout: 600, ReceiveRequestAttemptId: aws.String("console-" + name)})
			if err == nil && len(out.Messages) != 1 {
				err = fmt.Errorf("received %d messages, want 1", len(out.Messages))
			}
			return err
		})
	}
	const total = groups * perGroup
	guarded := c.createQueue("guarded.fifo", map[string]string{"FifoQueue": "true",
		"Policy": `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"sqs:ReceiveMessage","Resource":"*"}]}`})
	t.Logf("guarded.fifo (%s) is in shard %d", guarded, c.shardOf("guarded.fifo"))
	for _, nd := range c.nodes {
		c.retrying("the console's peek of guarded.fifo on "+nd.id, func() error {
			resp, err := http.Get("http://" + nd.httpAddr + "/console/api/queues/guarded.fifo/messages")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				b, _ := io.ReadAll(resp.Body)
				return fmt.Errorf("%s's console peeks guarded.fifo: %s %s, want 403", nd.id, resp.Status, b)
			}
			return nil
		})
	}
	// listsAll checks nd's console's list of queues.
	listsAll := func(nd *memNode) {
		t.Helper()
		c.retrying("the console's queues on "+nd.id, func() error {
			var list struct {
				Queues []struct {
					Name       string `json:"name"`
					Visible    int    `json:"visible"`
					NotVisible int    `json:"notVisible"`
					Groups     int    `json:"groups"`
				} `json:"queues"`
			}
			if err := getJSON("http://"+nd.httpAddr+"/console/api/queues", &list); err != nil {
				return err
			}
			seen := map[string]bool{}
			for _, q := range list.Queues {
				if q.Name == "guarded.fifo" {
					continue
				}
				if q.Visible != total-1 || q.NotVisible != 1 || q.Groups != groups {
					return fmt.Errorf("%s's console lists %s with %d visible, %d in flight, %d groups; want %d, 1 and %d",
						nd.id, q.Name, q.Visible, q.NotVisible, q.Groups, total-1, groups)
				}
				seen[q.Name] = true
			}
			for _, name := range names {
				if !seen[name] {
					return fmt.Errorf("%s's console does not list %s (shard %d): %+v", nd.id, name, c.shardOf(name), list.Queues)
				}
			}
			return nil
		})
	}
	for _, nd := range c.nodes {
		base := "http://" + nd.httpAddr + "/console/api/queues"
		listsAll(nd)
		for _, name := range names {
			c.retrying("the console's pages of "+name+" on "+nd.id, func() error {
				var page struct {
					Queue struct {
						Visible    int `json:"visible"`
						NotVisible int `json:"notVisible"`
					} `json:"queue"`
				}
				if err := getJSON(base+"/"+name, &page); err != nil {
					return err
				}
				if page.Queue.Visible != total-1 || page.Queue.NotVisible != 1 {
					return fmt.Errorf("%s's console's page of %s: %d visible, %d in flight", nd.id, name, page.Queue.Visible, page.Queue.NotVisible)
				}
				var peek struct {
					Messages []struct {
						Body  string `json:"body"`
						State string `json:"state"`
					} `json:"messages"`
				}
				if err := getJSON(base+"/"+name+"/messages?limit=100", &peek); err != nil {
					return err
				}
				inflight := 0
				for _, m := range peek.Messages {
					if m.State == "inflight" {
						inflight++
					}
				}
				if len(peek.Messages) != total || inflight != 1 {
					return fmt.Errorf("%s's console peeks %d messages of %s, %d in flight; want %d and 1", nd.id, len(peek.Messages), name, inflight, total)
				}
				if err := getJSON(base+"/"+name+"/messages?group=g1", &peek); err != nil {
					return err
				}
				if len(peek.Messages) != perGroup || peek.Messages[0].Body != "g1-0" {
					return fmt.Errorf("%s's console peeks %+v of %s's group g1", nd.id, peek.Messages, name)
				}
				var gp struct {
					Total    int `json:"total"`
					InFlight int `json:"inFlight"`
					Groups   []struct {
						ID string `json:"id"`
					} `json:"groups"`
				}
				if err := getJSON(base+"/"+name+"/groups?limit=100", &gp); err != nil {
					return err
				}
				if gp.Total != groups || gp.InFlight != 1 || len(gp.Groups) != groups {
					return fmt.Errorf("%s's console's groups of %s: %d groups (%d listed), %d in flight; want %d and 1", nd.id, name, gp.Total, len(gp.Groups), gp.InFlight, groups)
				}
				return nil
			})
		}
	}
	// With a member down, each shard it held a replica of is read from
	// another of its replicas.
	c.crash(c.nodes[1])
	for _, nd := range c.nodes {
		if nd != c.nodes[1] {
			listsAll(nd)
		}
	}
}

// TestConsoleShowsWhatWasJustSent sends a message to a queue through each
// member in turn, in a cluster of three members with three shards (each
// member holds a replica of every shard, and leads about a third), and
// reads the queue's page through that member's console at once: it
// counts every message acknowledged so far, on the shard's followers too.
// A follower learns that its leader committed an entry with the leader's
// next message, up to a commit timeout or two later (a shard's is 1 s):
// a console that read its own follower replica showed a send that had
// just been acknowledged a second or two late, and one whose replica of
// the first group did not yet have the new queue's record answered that
// the queue did not exist.
func TestConsoleShowsWhatWasJustSent(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 3, 3, 53)
	c.logTailsOnFailure(40)
	c.waitShards(4)
	clients := c.memberClients()
	ctx := context.Background()
	url := c.createQueue("fresh.fifo", map[string]string{"FifoQueue": "true"})
	t.Logf("fresh.fifo is in shard %d", c.shardOf("fresh.fifo"))
	sent := 0
	for round := range 2 {
		for i, nd := range c.nodes {
			body := fmt.Sprintf("m%d-%d", round, i)
			c.retrying("SendMessage", func() error {
				_, err := clients[i].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body),
					MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(body)})
				return err
			})
			sent++
			var page struct {
				Queue struct {
					Visible int `json:"visible"`
				} `json:"queue"`
			}
			if err := getJSON("http://"+nd.httpAddr+"/console/api/queues/fresh.fifo", &page); err != nil {
				t.Fatalf("%s's console's page of fresh.fifo: %v", nd.id, err)
			}
			if page.Queue.Visible != sent {
				t.Errorf("%s's console shows %d visible messages of fresh.fifo right after %d sends were acknowledged", nd.id, page.Queue.Visible, sent)
			}
		}
	}
}

// TestConsoleShowsASendAfterItsShardLeaderFailed sends a message through
// the member that leads its queue's shard, crashes that member as soon as
// the send is answered, and reads the queue's page through each other
// member's console at once. The send is on a majority of the shard's
// replicas, so the shard's next leader holds it; a follower that has not
// yet learnt that it committed (it learns it with its leader's next
// append, which never came) does not, and must not be the one that
// answers while the shard elects.
func TestConsoleShowsASendAfterItsShardLeaderFailed(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 3, 3, 73)
	c.logTailsOnFailure(40)
	ctx := context.Background()
	for round := range 3 {
		c.waitShards(4)
		name := fmt.Sprintf("last-%d.fifo", round)
		url := c.createQueue(name, map[string]string{"FifoQueue": "true"})
		var victim *memNode
		c.retrying("the leader of "+name+"'s shard", func() error {
			if victim = c.leaderOf(uint32(c.shardOf(name))); victim == nil {
				return fmt.Errorf("no leader")
			}
			return nil
		})
		c.retrying("SendMessage through "+victim.id, func() error {
			_, err := newClient(victim.httpAddr, 10*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
				MessageBody: aws.String("last"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("last")})
			return err
		})
		c.crash(victim)
		// The groups page first: it reads the shard's replicas and
		// nothing else, where the queue's page first asks the leader for
		// the queue's attributes, and so waits out the election.
		for _, nd := range c.running() {
			var groups struct {
				Total int `json:"total"`
			}
			if err := getJSON("http://"+nd.httpAddr+"/console/api/queues/"+name+"/groups", &groups); err != nil {
				t.Fatalf("round %d: %s's console's groups of %s: %v", round, nd.id, name, err)
			}
			if groups.Total != 1 {
				t.Errorf("round %d: %s's console shows %d message groups of %s right after %s, which took the send, failed; want 1", round, nd.id, groups.Total, name, victim.id)
			}
		}
		for _, nd := range c.running() {
			var page struct {
				Queue struct {
					Visible int `json:"visible"`
				} `json:"queue"`
			}
			if err := getJSON("http://"+nd.httpAddr+"/console/api/queues/"+name, &page); err != nil {
				t.Fatalf("round %d: %s's console's page of %s: %v", round, nd.id, name, err)
			}
			if page.Queue.Visible != 1 {
				t.Errorf("round %d: %s's console shows %d visible messages of %s right after %s, which took the send, failed; want 1", round, nd.id, page.Queue.Visible, name, victim.id)
			}
		}
		c.start(victim)
	}
}
