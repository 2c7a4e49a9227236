package clustertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

// A split queue answers as a plain one (issue 38: "the recorded AWS
// answers and the real clients pass against a partitioned queue as
// against a plain one"). The tests here run one scenario of a FIFO
// queue's life twice in one cluster: on a high-throughput queue spread
// over three partitions in three shards, and on a plain FIFO queue of the
// same attributes but its throughput limit, in one shard. Each run writes
// a transcript of what the client saw, with what may rightly differ
// between two queues made apart (ids, sequence numbers, timestamps, the
// queue's name) put in neutral form, and with what a receive returns
// reduced to what SQS promises of it (each group's order, no group
// delivered while in flight, a retried attempt answered alike): the two
// transcripts must be equal. The plain queue's answers are the ones the
// integration suite checks against AWS's recordings on one server (the
// recorded_*_test.go files there), so a split queue that answers as the
// plain one answers as AWS does; the scenario's own checks cite the
// recordings they rest on.

// splitAndPlainCluster starts three members with three shards, for
// splitAndPlain's queues.
func splitAndPlainCluster(t *testing.T) *memCluster {
	t.Helper()
	c := newMemCluster(t, 3, 3, 38)
	c.logTailsOnFailure(40)
	c.waitShards(4)
	return c
}

// splitAndPlain creates a high-throughput FIFO queue, spread over the
// cluster's three shards, and a plain FIFO queue beside it, each with
// deduplication by message group (what SQS's high-throughput mode asks),
// and returns the queues' URLs, each empty.
func (c *memCluster) splitAndPlain(suffix string) (htURL, plainURL string) {
	c.t.Helper()
	htURL = c.createQueue("ht-"+suffix+".fifo", highThroughputFIFO)
	plainURL = c.createQueue("plain-"+suffix+".fifo", map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perQueue"})
	// The first message starts the spread; it is taken off again once
	// every member's map has the queue in three partitions.
	clients := c.memberClients()
	for _, url := range []string{htURL, plainURL} {
		c.retrying("first send", func() error {
			_, err := clients[0].SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
				MessageBody: aws.String("first"), MessageGroupId: aws.String("first"), MessageDeduplicationId: aws.String("first")})
			return err
		})
	}
	c.waitLayout(api.QueueKey{Account: "000000000000", Name: "ht-" + suffix + ".fifo"}, 3)
	for _, url := range []string{htURL, plainURL} {
		got := map[string][]string{}
		c.drainGroups(clients, url, got, 1, 60)
	}
	return htURL, plainURL
}

// transcript is what a scenario saw, in a form two queues' runs can be
// compared in.
type transcript struct {
	name  string // the queue's name, written as Q
	ids   map[string]string
	lines []string
}

func newTranscript(url string) *transcript {
	return &transcript{name: url[strings.LastIndex(url, "/")+1:], ids: map[string]string{}}
}

// id returns a message id in neutral form: the order in which the
// scenario first saw it.
func (tr *transcript) id(v string) string {
	if v == "" {
		return "<none>"
	}
	if n, ok := tr.ids[v]; ok {
		return n
	}
	n := "m" + strconv.Itoa(len(tr.ids)+1)
	tr.ids[v] = n
	return n
}

// add writes a line, with the queue's name written Q and each member's
// address (queue URLs name the member a request reached) written M.
func (tr *transcript) add(format string, args ...any) {
	line := strings.ReplaceAll(fmt.Sprintf(format, args...), tr.name, "Q")
	tr.lines = append(tr.lines, memberAddr.ReplaceAllString(line, "M"))
}

// memberAddr matches a member's address on loopback.
var memberAddr = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// errLine writes an error as a client sees it: HTTP status, code, fault
// and message.
func errLine(err error) string {
	if err == nil {
		return "ok"
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return "error: " + err.Error()
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return fmt.Sprintf("error %d %s (%s): %s", status, ae.ErrorCode(), ae.ErrorFault(), ae.ErrorMessage())
}

// compareTranscripts fails the test where the split queue's transcript
// differs from the plain queue's.
func compareTranscripts(t *testing.T, split, plain []string) {
	t.Helper()
	if !slices.ContainsFunc(plain, func(l string) bool { return strings.Contains(l, "received in order") }) {
		t.Fatalf("the plain queue's transcript holds no receive:\n%s", strings.Join(plain, "\n"))
	}
	for i := range max(len(split), len(plain)) {
		var a, b string
		if i < len(split) {
			a = split[i]
		}
		if i < len(plain) {
			b = plain[i]
		}
		if a != b {
			t.Errorf("line %d differs:\n  split queue: %s\n  plain queue: %s", i+1, a, b)
		}
	}
	if t.Failed() {
		t.Logf("split queue's transcript:\n%s\nplain queue's transcript:\n%s", strings.Join(split, "\n"), strings.Join(plain, "\n"))
	}
}

// TestSplitQueueAnswersAsPlain runs the scenario through each real
// client: the AWS SDK for Go v2 (AWS JSON 1.0), the AWS SDK for Go v1 (AWS
// Query), boto3 and the AWS CLI, each on a pair of queues of its own in
// one cluster. A machine without python3 and boto3, or the AWS CLI, skips
// their parts, and fails them in CI (testenv.ClientMissing).
func TestSplitQueueAnswersAsPlain(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := splitAndPlainCluster(t)
	foreign := foreignHandle(t, c)
	t.Run("sdk", func(t *testing.T) {
		htURL, plainURL := c.splitAndPlain("sdk")
		compareTranscripts(t, sdkScenario(t, c, htURL, foreign), sdkScenario(t, c, plainURL, foreign))
	})
	t.Run("query", func(t *testing.T) {
		htURL, plainURL := c.splitAndPlain("query")
		compareTranscripts(t, queryScenario(t, c, htURL, foreign), queryScenario(t, c, plainURL, foreign))
	})
	t.Run("boto3", func(t *testing.T) {
		python := testenv.Boto3Python(t)
		htURL, plainURL := c.splitAndPlain("boto3")
		compareTranscripts(t, boto3Scenario(t, c, python, htURL, foreign), boto3Scenario(t, c, python, plainURL, foreign))
	})
	t.Run("cli", func(t *testing.T) {
		cli, err := exec.LookPath("aws")
		if err != nil {
			testenv.ClientMissing(t, "the aws CLI is not installed")
		}
		htURL, plainURL := c.splitAndPlain("cli")
		compareTranscripts(t, cliScenario(t, c, cli, htURL, foreign), cliScenario(t, c, cli, plainURL, foreign))
	})
}

// sdkScenario runs the scenario on the queue at url, an empty FIFO queue
// deduplicating by message group, and returns its transcript; foreign is
// the receipt handle of a message of another FIFO queue.
// It fails the test where the queue breaks what SQS promises whatever
// its throughput mode.
func sdkScenario(t *testing.T, c *memCluster, url, foreign string) []string {
	t.Helper()
	ctx := context.Background()
	tr := newTranscript(url)
	clients := c.memberClients()
	turn := 0
	next := func() *sqs.Client { turn++; return clients[turn%len(clients)] }
	// again retries a call the cluster answered 503 (a leadership or a
	// partition moving) and returns its error otherwise. Every call of
	// the scenario may be repeated: sends name their deduplication ids,
	// receives their attempt ids.
	again := func(what string, fn func(*sqs.Client) error) error {
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var re *awshttp.ResponseError
			if err = fn(next()); err == nil || !errors.As(err, &re) || re.HTTPStatusCode() < 500 {
				return err
			}
		}
		t.Fatalf("%s: still failing after 30 s: %v", what, err)
		return nil
	}
	seqs := map[string][]string{} // each group's sequence numbers, as sent
	allSeqs := map[string]bool{}
	noteSeq := func(group, seq string) {
		n, err := strconv.ParseUint(seq, 10, 64)
		if err != nil || len(seq) != 20 {
			t.Errorf("sequence number %q of a message of group %s: want 20 digits", seq, group)
		}
		if s := seqs[group]; len(s) > 0 {
			if last, _ := strconv.ParseUint(s[len(s)-1], 10, 64); n <= last {
				t.Errorf("group %s: sequence number %s after %s", group, seq, s[len(s)-1])
			}
		}
		if allSeqs[seq] {
			t.Errorf("sequence number %s given twice", seq)
		}
		allSeqs[seq] = true
		seqs[group] = append(seqs[group], seq)
	}
	send := func(group, body, dedup string) {
		var out *sqs.SendMessageOutput
		err := again("send "+body, func(cl *sqs.Client) (err error) {
			out, err = cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body),
				MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup)})
			return err
		})
		if err != nil {
			tr.add("send %s/%s: %s", group, body, errLine(err))
			return
		}
		_, seen := tr.ids[aws.ToString(out.MessageId)]
		tr.add("send %s/%s dedup %s: id %s md5 %s", group, body, dedup, tr.id(aws.ToString(out.MessageId)), aws.ToString(out.MD5OfMessageBody))
		if !seen {
			noteSeq(group, aws.ToString(out.SequenceNumber))
		}
	}
	batch := func(what string, entries []types.SendMessageBatchRequestEntry) {
		var out *sqs.SendMessageBatchOutput
		err := again("batch "+what, func(cl *sqs.Client) (err error) {
			out, err = cl.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			return err
		})
		if err != nil {
			tr.add("batch %s: %s", what, errLine(err))
			return
		}
		group := map[string]string{}
		for _, e := range entries {
			group[aws.ToString(e.Id)] = aws.ToString(e.MessageGroupId)
		}
		for _, e := range out.Successful {
			if _, seen := tr.ids[aws.ToString(e.MessageId)]; !seen {
				noteSeq(group[aws.ToString(e.Id)], aws.ToString(e.SequenceNumber))
			}
			tr.add("batch %s: %s ok, id %s md5 %s", what, aws.ToString(e.Id), tr.id(aws.ToString(e.MessageId)), aws.ToString(e.MD5OfMessageBody))
		}
		for _, e := range out.Failed {
			tr.add("batch %s: %s failed, %s sender fault %v: %s", what, aws.ToString(e.Id), aws.ToString(e.Code), e.SenderFault, aws.ToString(e.Message))
		}
	}
	entry := func(id, group, body string) types.SendMessageBatchRequestEntry {
		return types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(body),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String("d-" + body)}
	}
	attrs := func(what string, names ...types.QueueAttributeName) {
		var out *sqs.GetQueueAttributesOutput
		err := again("attributes", func(cl *sqs.Client) (err error) {
			out, err = cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
			return err
		})
		if err != nil {
			tr.add("attributes %s: %s", what, errLine(err))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(out.Attributes)) {
			v := out.Attributes[k]
			switch k {
			case "CreatedTimestamp", "LastModifiedTimestamp":
				v = "<time>"
			case "FifoThroughputLimit":
				continue // the one attribute the two queues differ in
			}
			tr.add("attributes %s: %s=%s", what, k, v)
		}
	}

	// Sends, single and batched, over many groups: a batch of ten groups
	// falls in every partition. Deduplication is by group: the same id in
	// another group is another message (localstack test_sqs.snapshot.json:
	// test_fifo_deduplication_scope_message_group, whose answers the
	// integration suite checks).
	send("g1", "a1", "d1")
	send("g1", "a1-again", "d1")
	send("g2", "b1", "d1")
	send("g1", "a2", "d2")
	var ten []types.SendMessageBatchRequestEntry
	for i := range 10 {
		ten = append(ten, entry("e"+strconv.Itoa(i), "g"+strconv.Itoa(i+3), "c"+strconv.Itoa(i)))
	}
	batch("ten groups", ten)
	batch("ten groups again", ten)
	// What SQS refuses of a batch is refused whole, whatever partitions
	// its entries would fall in (the recordings the integration suite's
	// TestRecordedFIFOBatchFailsWhole and recorded_message_test.go cite).
	batch("ids not distinct", []types.SendMessageBatchRequestEntry{entry("x", "g3", "y1"), entry("x", "g4", "y2")})
	eleven := append(slices.Clone(ten), entry("e10", "g13", "c10"))
	batch("eleven entries", eleven)
	noDedup := []types.SendMessageBatchRequestEntry{entry("ok", "g3", "y3"), entry("nodedup", "g4", "y4")}
	noDedup[1].MessageDeduplicationId = nil
	batch("one without a deduplication id", noDedup)
	noGroup := []types.SendMessageBatchRequestEntry{entry("ok", "g3", "y5"), entry("nogroup", "g4", "y6")}
	noGroup[1].MessageGroupId = nil
	batch("one without a group", noGroup)
	attrs("after the sends", types.QueueAttributeNameAll)

	// Receives: what one returns may rightly differ (a split queue may
	// answer from one partition), so the transcript holds what SQS
	// promises of them.
	type held struct{ id, group, body, handle string }
	var inFlight []held // in the order received
	received := map[string][]string{}
	receive := func(attempt string, max int32) []types.Message {
		var out *sqs.ReceiveMessageOutput
		err := again("receive "+attempt, func(cl *sqs.Client) (err error) {
			out, err = cl.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max,
				WaitTimeSeconds: 1, VisibilityTimeout: 60, ReceiveRequestAttemptId: aws.String(attempt),
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
			return err
		})
		if err != nil {
			t.Fatalf("receive %s: %v", attempt, err)
		}
		return out.Messages
	}
	// take notes what a receive returned. One receive may return several
	// messages of a group, in order; the next may not return any of a
	// group in flight.
	take := func(msgs []types.Message) {
		before := slices.Clone(inFlight)
		for _, m := range msgs {
			g := m.Attributes["MessageGroupId"]
			if i := slices.IndexFunc(before, func(h held) bool { return h.group == g }); i >= 0 {
				t.Errorf("received %s of group %s while %s of the group is in flight", aws.ToString(m.Body), g, before[i].body)
			}
			if aws.ToString(m.MD5OfBody) == "" || m.Attributes["SequenceNumber"] == "" || m.Attributes["ApproximateReceiveCount"] != "1" {
				t.Errorf("received %s with MD5 %q and attributes %v", aws.ToString(m.Body), aws.ToString(m.MD5OfBody), m.Attributes)
			}
			inFlight = append(inFlight, held{aws.ToString(m.MessageId), g, aws.ToString(m.Body), aws.ToString(m.ReceiptHandle)})
			received[g] = append(received[g], aws.ToString(m.Body))
		}
	}
	first := receive("r1", 10)
	retried := receive("r1", 10)
	sameIDs := func(a, b []types.Message) bool {
		return slices.Equal(messageIDs(a), messageIDs(b))
	}
	tr.add("receive r1: something %v; retried with the same attempt id, the same messages: %v", len(first) > 0, sameIDs(first, retried))
	take(first)
	// A second receive while the first's are in flight: never a message
	// of a group in flight (take checks).
	take(receive("r2", 10))
	// Deleted by a batch with an entry whose handle is no handle: that
	// entry fails alone (localstack test_sqs.py:
	// test_delete_message_batch_with_too_large_batch and the recordings
	// of ReceiptHandleIsInvalid in recorded_visibility_test.go).
	var del []types.DeleteMessageBatchRequestEntry
	for i, h := range inFlight[:min(9, len(inFlight))] {
		del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String("del-" + strconv.Itoa(i)), ReceiptHandle: aws.String(h.handle)})
	}
	kept := len(del)
	del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String("garbage"), ReceiptHandle: aws.String("garbage")})
	var delOut *sqs.DeleteMessageBatchOutput
	if err := again("delete batch", func(cl *sqs.Client) (err error) {
		delOut, err = cl.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
		return err
	}); err != nil {
		tr.add("delete batch: %s", errLine(err))
	} else {
		tr.add("delete batch: %d of %d ok", len(delOut.Successful), kept)
		for _, f := range delOut.Failed {
			tr.add("delete batch: %s failed, %s sender fault %v: %s", aws.ToString(f.Id), aws.ToString(f.Code), f.SenderFault, aws.ToString(f.Message))
		}
		inFlight = inFlight[kept:]
	}
	// The rest, received and deleted one by one until the queue is
	// empty; each group's order is the order sent.
	for round := 0; ; round++ {
		for _, h := range inFlight {
			if err := again("delete", func(cl *sqs.Client) error {
				_, err := cl.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h.handle)})
				return err
			}); err != nil {
				t.Fatalf("delete %s: %v", h.body, err)
			}
		}
		inFlight = nil
		msgs := receive("r-drain-"+strconv.Itoa(round), 10)
		if len(msgs) == 0 {
			break
		}
		if round > 30 {
			t.Fatalf("still receiving after 30 rounds")
		}
		take(msgs)
	}
	for _, g := range slices.Sorted(maps.Keys(received)) {
		tr.add("group %s received in order: %s", g, strings.Join(received[g], ","))
	}
	attrs("drained", types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed)

	// Visibility: a message made visible again is received again; a
	// batch with a handle that is no handle fails that entry alone; a
	// single call with it is refused (recorded_visibility_test.go's
	// recordings); a well-formed handle of another queue is refused too.
	send("g20", "v1", "v1")
	vis := receive("r-vis", 1)
	if len(vis) != 1 {
		t.Fatalf("received %d messages, want v1", len(vis))
	}
	handle := aws.ToString(vis[0].ReceiptHandle)
	err := again("visibility", func(cl *sqs.Client) error {
		_, err := cl.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle), VisibilityTimeout: 0})
		return err
	})
	tr.add("change visibility to 0: %v", err)
	again2 := receive("r-vis-again", 1)
	if len(again2) != 1 {
		t.Fatalf("received %d messages after the visibility change, want v1 again", len(again2))
	}
	tr.add("received again: id %s, receive count %s", tr.id(aws.ToString(again2[0].MessageId)), again2[0].Attributes["ApproximateReceiveCount"])
	handle = aws.ToString(again2[0].ReceiptHandle)
	var visOut *sqs.ChangeMessageVisibilityBatchOutput
	if err := again("visibility batch", func(cl *sqs.Client) (err error) {
		visOut, err = cl.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url),
			Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
				{Id: aws.String("good"), ReceiptHandle: aws.String(handle), VisibilityTimeout: 30},
				{Id: aws.String("bad"), ReceiptHandle: aws.String("INVALID"), VisibilityTimeout: 30},
			}})
		return err
	}); err != nil {
		tr.add("visibility batch: %s", errLine(err))
	} else {
		for _, e := range visOut.Successful {
			tr.add("visibility batch: %s ok", aws.ToString(e.Id))
		}
		for _, f := range visOut.Failed {
			tr.add("visibility batch: %s failed, %s sender fault %v: %s", aws.ToString(f.Id), aws.ToString(f.Code), f.SenderFault, aws.ToString(f.Message))
		}
	}
	tr.add("change visibility by no handle: %s", errLine(again("visibility", func(cl *sqs.Client) error {
		_, err := cl.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("INVALID"), VisibilityTimeout: 10})
		return err
	})))
	tr.add("delete by no handle: %s", errLine(again("delete", func(cl *sqs.Client) error {
		_, err := cl.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("garbage")})
		return err
	})))
	tr.add("delete by another queue's handle: %s", errLine(again("delete", func(cl *sqs.Client) error {
		_, err := cl.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(foreign)})
		return err
	})))
	tr.add("change visibility by another queue's handle: %s", errLine(again("visibility", func(cl *sqs.Client) error {
		_, err := cl.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(foreign), VisibilityTimeout: 10})
		return err
	})))
	for try := range 2 {
		tr.add("delete v1 (time %d): %v", try+1, again("delete", func(cl *sqs.Client) error {
			_, err := cl.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle)})
			return err
		}))
	}

	// Purge: the queue's messages go; a second purge within the minute is
	// refused (recorded_queue_test.go's PurgeQueueInProgress recordings).
	for i := range 3 {
		send("g"+strconv.Itoa(30+i), "p"+strconv.Itoa(i), "p"+strconv.Itoa(i))
	}
	attrs("before the purge", types.QueueAttributeNameApproximateNumberOfMessages)
	for try := range 2 {
		err := again("purge", func(cl *sqs.Client) error {
			_, err := cl.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
			return err
		})
		if err != nil {
			tr.add("purge (time %d): %s", try+1, errLine(err))
		} else {
			tr.add("purge (time %d): ok", try+1)
		}
	}
	attrs("after the purge", types.QueueAttributeNameApproximateNumberOfMessages)

	// The queue's attributes and tags, set through one member and read
	// through the others.
	tr.add("set attributes: %v", again("set attributes", func(cl *sqs.Client) error {
		_, err := cl.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
			Attributes: map[string]string{"VisibilityTimeout": "45", "DelaySeconds": "2", "MaximumMessageSize": "2048"}})
		return err
	}))
	attrs("after setting", types.QueueAttributeNameVisibilityTimeout, types.QueueAttributeNameDelaySeconds, types.QueueAttributeNameMaximumMessageSize)
	tr.add("tag: %v", again("tag", func(cl *sqs.Client) error {
		_, err := cl.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{"team": "a", "env": "test"}})
		return err
	}))
	tr.add("untag: %v", again("untag", func(cl *sqs.Client) error {
		_, err := cl.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: aws.String(url), TagKeys: []string{"env"}})
		return err
	}))
	var tags *sqs.ListQueueTagsOutput
	if err := again("tags", func(cl *sqs.Client) (err error) {
		tags, err = cl.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
		return err
	}); err != nil {
		tr.add("tags: %s", errLine(err))
	} else {
		tr.add("tags: %v", tags.Tags)
	}

	// The queue is one queue to list, to find, and to delete.
	var listed *sqs.ListQueuesOutput
	if err := again("list", func(cl *sqs.Client) (err error) {
		listed, err = cl.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(tr.name)})
		return err
	}); err != nil {
		tr.add("list: %s", errLine(err))
	} else {
		tr.add("list: %v", listed.QueueUrls)
	}
	var found *sqs.GetQueueUrlOutput
	if err := again("url", func(cl *sqs.Client) (err error) {
		found, err = cl.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(tr.name)})
		return err
	}); err != nil {
		tr.add("url: %s", errLine(err))
	} else {
		tr.add("url: %s", aws.ToString(found.QueueUrl))
	}
	tr.add("delete queue: %v", again("delete queue", func(cl *sqs.Client) error {
		_, err := cl.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		return err
	}))
	tr.add("send to the deleted queue: %s", errLine(again("send to the deleted queue", func(cl *sqs.Client) error {
		_, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("late"),
			MessageGroupId: aws.String("g1"), MessageDeduplicationId: aws.String("late")})
		return err
	})))
	return tr.lines
}

// foreignHandle returns the receipt handle of a message of another FIFO
// queue, in flight for ten minutes.
func foreignHandle(t *testing.T, c *memCluster) string {
	other := c.createQueue("other.fifo", map[string]string{"FifoQueue": "true"})
	client := c.memberClients()[0]
	c.retrying("send to the other queue", func() error {
		_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(other), MessageBody: aws.String("other"),
			MessageGroupId: aws.String("o"), MessageDeduplicationId: aws.String("o")})
		return err
	})
	var handle string
	c.retrying("receive from the other queue", func() error {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(other), WaitTimeSeconds: 1,
			VisibilityTimeout: 600, ReceiveRequestAttemptId: aws.String("foreign")})
		if err != nil {
			return err
		}
		if len(out.Messages) != 1 {
			return fmt.Errorf("received %d messages", len(out.Messages))
		}
		handle = aws.ToString(out.Messages[0].ReceiptHandle)
		return nil
	})
	return handle
}

// messageIDs returns the ids of msgs, sorted.
func messageIDs(msgs []types.Message) []string {
	var ids []string
	for _, m := range msgs {
		ids = append(ids, aws.ToString(m.MessageId))
	}
	slices.Sort(ids)
	return ids
}
