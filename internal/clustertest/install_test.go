package clustertest

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/testenv"
)

// TestFollowerKilledDuringSnapshotInstall stops a follower, writes enough
// behind its back that the leader's log no longer holds what it lacks
// (more than the 1,024 entries kept behind a snapshot, across more than a
// 64 MiB segment), and restarts it: it must catch up by installing the
// leader's snapshot, which carries the message bodies. The follower is
// killed with SIGKILL while the snapshot streams in, restarted, and must
// install it again. Then it is made the leader, and must serve every
// message with its body, from its own body store.
//
// The nodes run with a memory budget of 64 MiB, so that they snapshot
// every 6.4 MiB of log, and body files of 1 MiB.
func TestFollowerKilledDuringSnapshotInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of real processes")
	}
	testenv.Long(t, "fills a snapshot and kills a follower while it installs it, most of a minute")
	t.Parallel()
	env := []string{"FIFOQ_MAX_MEMORY=64MiB", "FIFOQ_BODY_FILE_SIZE=1MiB"}
	// One group (--shards 1): the test watches the first group's
	// snapshots, and its queue must be in that group.
	c := newClusterWith(t, 3, func(_ int, nd *node) { nd.env, nd.args = env, []string{"--shards", "1"} })
	url := c.createQueue("install", nil)
	leader := c.leader()
	follower := c.other(leader)
	c.kill(follower)

	fillForInstall(t, leader, url)
	killDuringInstall(t, c, follower)

	// Restarted, it installs the snapshot again and catches up.
	c.restart(follower)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if installed(follower) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no snapshot 60 s after its restart\n%s", follower.id, follower.tail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}

	makeLeader(t, c, follower)
	checkServesInstalled(t, follower, url)
}

// installMessages messages of installBodySize bytes are what
// TestFollowerKilledDuringSnapshotInstall writes while the follower is
// down: sent two at a time, so that most log entries carry one, they make
// 1,500 entries and 90 MB of log.
const installMessages, installBodySize = 1500, 60_000

// installBody is the body of message i of installMessages: its number,
// then a letter of its own repeated up to installBodySize bytes.
func installBody(i int) string {
	head := fmt.Sprintf("install %05d ", i)
	return head + strings.Repeat(string(rune('a'+i%26)), installBodySize-len(head))
}

// fillForInstall sends installMessages messages to the queue at url
// through leader, two senders at a time, each send tried up to 20 times.
func fillForInstall(t *testing.T, leader *node, url string) {
	t.Helper()
	client := newClient(leader.httpAddr, 10*time.Second)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < installMessages; i = int(next.Add(1)) - 1 {
				var err error
				for try := 0; try < 20; try++ {
					if _, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(installBody(i))}); err == nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if err != nil {
					errs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// killDuringInstall restarts follower and kills it as soon as a snapshot
// streams in (Raft writes it to a directory named *.tmp until it is
// complete), trying up to five times; it fails if no snapshot ever
// streamed in.
func killDuringInstall(t *testing.T, c *cluster, follower *node) {
	t.Helper()
	caught := false
	for attempt := 0; attempt < 5 && !caught; attempt++ {
		c.start(follower, "")
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if tmp, _ := filepath.Glob(filepath.Join(follower.dataDir, "snapshots", "*.tmp")); len(tmp) > 0 {
				caught = true
				break
			}
			time.Sleep(time.Millisecond)
		}
		c.kill(follower)
	}
	if !caught {
		t.Fatalf("%s never installed a snapshot: it caught up from the log, or never started one\n%s", follower.id, follower.tail(30))
	}
}

// makeLeader makes nd the leader of c: it stops whichever other node leads
// until nd does, for up to ten changes of leader.
func makeLeader(t *testing.T, c *cluster, nd *node) {
	t.Helper()
	for round := 0; ; round++ {
		l := c.leader()
		if l == nd {
			break
		}
		if round == 10 {
			t.Fatalf("%s did not become the leader after %d changes of leader\n%s", nd.id, round, nd.tail(40))
		}
		c.kill(l)
		time.Sleep(500 * time.Millisecond)
		c.restart(l)
	}
}

// checkServesInstalled receives and deletes every message of the queue at
// url through follower, which now leads, and checks that it serves each
// from its own store, exactly once, intact, within two minutes.
//
// The client opens a connection per request: with the SDK's single
// attempt, a reused connection can be closed under a response being read
// (aws-sdk-go-v2#2737), and an answer lost that way hides its messages for
// the visibility timeout, which the loop waits out.
func checkServesInstalled(t *testing.T, follower *node, url string) {
	t.Helper()
	fc := sqs.New(sqs.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String("http://" + follower.httpAddr), RetryMaxAttempts: 1,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	})
	got := map[int]bool{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(got) < installMessages && time.Now().Before(deadline) {
		out, err := fc.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Logf("receive from %s (retrying): %v", follower.id, err)
			continue
		}
		for _, m := range out.Messages {
			var i int
			body := aws.ToString(m.Body)
			if _, err := fmt.Sscanf(body, "install %05d ", &i); err != nil || body != installBody(i) {
				t.Fatalf("a body of %d bytes that is not one sent: %.40q", len(body), body)
			}
			if got[i] {
				t.Fatalf("message %d received twice", i)
			}
			got[i] = true
			// A delete whose answer is lost is sent again: the receipt
			// handle stays valid while the message is in flight.
			var err error
			for try := 0; try < 3; try++ {
				if _, err = fc.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err == nil {
					break
				}
			}
			if err != nil {
				t.Fatalf("delete from %s: %v", follower.id, err)
			}
		}
	}
	if len(got) != installMessages {
		t.Fatalf("%s served %d of the %d messages", follower.id, len(got), installMessages)
	}
}

// installed reports whether nd holds a complete snapshot: one whose
// directory is not Raft's *.tmp of a snapshot still streaming in.
func installed(nd *node) bool {
	snaps, _ := filepath.Glob(filepath.Join(nd.dataDir, "snapshots", "*", "state.bin"))
	for _, s := range snaps {
		if !strings.HasSuffix(filepath.Dir(s), ".tmp") {
			return true
		}
	}
	return false
}
