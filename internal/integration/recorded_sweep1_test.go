package integration

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// This file holds the recordings of the first half of LocalStack's
// AWS-validated SQS snapshot (localemu/localemu
// tests/aws/services/sqs/test_sqs.snapshot.json at 3098669, recordings up
// to 2025) that no other recorded_*_test.go replays exactly. Each test
// names the recording it replays; the request that made it is the
// snapshot's test of test_sqs.py beside it.

// wantAttrs fails the test unless got holds exactly the attributes of
// want. A want value of "timestamp" or "arn" stands for any value of that
// form, as the snapshot masks them.
func wantAttrs(t *testing.T, got, want map[string]string, source string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, has := got[k]
		switch {
		case !has:
			t.Errorf("attribute %s missing, recorded %q (%s)", k, want[k], source)
		case want[k] == "timestamp":
			if g == "" || strings.Trim(g, "0123456789") != "" {
				t.Errorf("attribute %s = %q, recorded a timestamp in seconds (%s)", k, g, source)
			}
		case want[k] == "arn":
			if !strings.HasPrefix(g, "arn:aws:sqs:") {
				t.Errorf("attribute %s = %q, recorded a queue ARN (%s)", k, g, source)
			}
		case g != want[k]:
			t.Errorf("attribute %s = %q, recorded %q (%s)", k, g, want[k], source)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, has := want[k]; !has {
			t.Errorf("attribute %s = %q answered, not in the recording (%s)", k, got[k], source)
		}
	}
}

// recordedStandardAll is what GetQueueAttributes All was recorded
// answering for a standard queue without policy, redrive or KMS
// (test_create_and_update_queue_attributes/get_queue_attributes, 2025),
// with the values the test created the queue with.
func recordedStandardAll() map[string]string {
	return map[string]string{
		"ApproximateNumberOfMessages":           "0",
		"ApproximateNumberOfMessagesDelayed":    "0",
		"ApproximateNumberOfMessagesNotVisible": "0",
		"CreatedTimestamp":                      "timestamp",
		"DelaySeconds":                          "0",
		"LastModifiedTimestamp":                 "timestamp",
		"MaximumMessageSize":                    "1048576",
		"MessageRetentionPeriod":                "604800",
		"QueueArn":                              "arn",
		"ReceiveMessageWaitTimeSeconds":         "10",
		"SqsManagedSseEnabled":                  "true",
		"VisibilityTimeout":                     "20",
	}
}

// recordedFIFOAll is what GetQueueAttributes All was recorded answering
// for a FIFO queue created with defaults
// (test_fifo_set_content_based_deduplication_strategy/before-update, 2025).
func recordedFIFOAll() map[string]string {
	return map[string]string{
		"ApproximateNumberOfMessages":           "0",
		"ApproximateNumberOfMessagesDelayed":    "0",
		"ApproximateNumberOfMessagesNotVisible": "0",
		"ContentBasedDeduplication":             "true",
		"CreatedTimestamp":                      "timestamp",
		"DeduplicationScope":                    "queue",
		"DelaySeconds":                          "0",
		"FifoQueue":                             "true",
		"FifoThroughputLimit":                   "perQueue",
		"LastModifiedTimestamp":                 "timestamp",
		"MaximumMessageSize":                    "1048576",
		"MessageRetentionPeriod":                "345600",
		"QueueArn":                              "arn",
		"ReceiveMessageWaitTimeSeconds":         "0",
		"SqsManagedSseEnabled":                  "true",
		"VisibilityTimeout":                     "30",
	}
}

// TestRecordedCreateAndUpdateQueueAttributes replays
// test_create_and_update_queue_attributes: All answers exactly the
// recorded attributes, before and after SetQueueAttributes.
func TestRecordedCreateAndUpdateQueueAttributes(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_create_and_update_queue_attributes/"
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		u := mustCreate(t, c, "attrs", map[string]string{"MessageRetentionPeriod": "604800", "ReceiveMessageWaitTimeSeconds": "10", "VisibilityTimeout": "20"})
		want := recordedStandardAll()
		wantAttrs(t, must(c.GetAttrs(ctx, u, "All"))(t), want, src+"get_queue_attributes")
		ok(t, c.SetAttrs(ctx, u, map[string]string{"MaximumMessageSize": "2048", "VisibilityTimeout": "69", "DelaySeconds": "420"}))
		want["MaximumMessageSize"], want["VisibilityTimeout"], want["DelaySeconds"] = "2048", "69", "420"
		wantAttrs(t, must(c.GetAttrs(ctx, u, "All"))(t), want, src+"get_updated_queue_attributes")
	})
}

// TestRecordedFIFOContentBasedDeduplicationAttributes replays
// test_fifo_set_content_based_deduplication_strategy: the FIFO queue's
// All, before and after ContentBasedDeduplication is turned off.
func TestRecordedFIFOContentBasedDeduplicationAttributes(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_fifo_set_content_based_deduplication_strategy/"
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		u := mustCreate(t, c, "cbd.fifo", map[string]string{"FifoQueue": "true", "SqsManagedSseEnabled": "true", "ContentBasedDeduplication": "true"})
		want := recordedFIFOAll()
		wantAttrs(t, must(c.GetAttrs(ctx, u, "All"))(t), want, src+"before-update")
		ok(t, c.SetAttrs(ctx, u, map[string]string{"ContentBasedDeduplication": "false"}))
		want["ContentBasedDeduplication"] = "false"
		wantAttrs(t, must(c.GetAttrs(ctx, u, "All"))(t), want, src+"after-update")
	})
}

// TestRecordedTagUntagQueue replays test_tag_untag_queue: an empty tag
// value is kept, untagging removes the named keys, and a queue without
// tags answers ListQueueTags with no Tags member at all.
func TestRecordedTagUntagQueue(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_tag_untag_queue/"
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		u := mustCreate(t, c, "tagged", nil)
		tags := map[string]string{"tag1": "value1", "tag2": "value2", "tag3": ""}
		ok(t, c.Tag(ctx, u, tags))
		if got := must(c.ListTags(ctx, u))(t); !maps.Equal(got, tags) {
			t.Errorf("tags %v, recorded %v (%s)", got, tags, src+"get-tag-1")
		}
		ok(t, c.Untag(ctx, u, "tag1", "tag3"))
		if got := must(c.ListTags(ctx, u))(t); !maps.Equal(got, map[string]string{"tag2": "value2"}) {
			t.Errorf("tags %v, recorded tag2 alone (%s)", got, src+"get-tag-2")
		}
		ok(t, c.Untag(ctx, u, "tag2"))
		r := (&scene{env: env, proto: c.Proto()}).post(t, "ListQueueTags", params{"QueueUrl": u})
		if r.status != 200 || strings.Contains(string(r.body), `"Tags"`) || strings.Contains(string(r.body), "<Tag>") {
			t.Errorf("HTTP %d %s; recorded 200 without Tags (%s)", r.status, r.body, src+"get-tag-after-untag")
		}
	})
}

// TestRecordedSSEQueueAttributes replays test_sse_queue_attributes: a
// queue set to SSE-KMS answers the three SSE attributes it was given; a
// queue set to SSE-SQS answers SqsManagedSseEnabled alone, neither
// KmsMasterKeyId nor KmsDataKeyReusePeriodSeconds.
func TestRecordedSSEQueueAttributes(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_sse_queue_attributes/"
	names := []string{"KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled"}
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		kms := mustCreate(t, c, "kms", nil)
		ok(t, c.SetAttrs(ctx, kms, map[string]string{"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000", "SqsManagedSseEnabled": "false"}))
		wantAttrs(t, must(c.GetAttrs(ctx, kms, names...))(t),
			map[string]string{"KmsDataKeyReusePeriodSeconds": "6000", "KmsMasterKeyId": "testKeyId", "SqsManagedSseEnabled": "false"}, src+"sse_kms_attributes")
		sse := mustCreate(t, c, "sse", nil)
		ok(t, c.SetAttrs(ctx, sse, map[string]string{"SqsManagedSseEnabled": "true"}))
		wantAttrs(t, must(c.GetAttrs(ctx, sse, names...))(t), map[string]string{"SqsManagedSseEnabled": "true"}, src+"sse_sqs_attributes")
	})
}

// TestRecordedFIFODeduplicationAfterDelete replays
// test_fifo_deduplication_arrives_once_after_delete, with content-based
// deduplication and with an explicit id: a message sent again after the
// first was received and deleted is still a duplicate.
func TestRecordedFIFODeduplicationAfterDelete(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_fifo_deduplication_arrives_once_after_delete/get-messages-duplicate"
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		for _, cbd := range []bool{true, false} {
			attrs, in := fifoAttrs(), SendIn{Body: `{"foo": "bar"}`, Group: "group-1"}
			name := "after-delete-id.fifo"
			if cbd {
				attrs["ContentBasedDeduplication"] = "true"
				name = "after-delete-cbd.fifo"
			} else {
				in.Dedup = "dedup1"
			}
			u := mustCreate(t, c, name, attrs)
			mustSend(t, c, u, in)
			msgs := mustReceive(t, c, u, 1)
			wantBodies(t, msgs, in.Body)
			mustDelete(t, c, u, msgs...)
			mustSend(t, c, u, in)
			if msgs := mustReceive(t, c, u, 1); len(msgs) != 0 {
				t.Errorf("content-based %v: received %v, recorded nothing (%s)", cbd, bodies(msgs), src)
			}
		}
	})
}

// TestRecordedFIFODeduplicationAcrossGroups replays
// test_fifo_deduplication_not_on_message_group_id and
// test_sqs_fifo_same_dedup_id_different_message_groups: with the default
// DeduplicationScope (queue) a deduplication id is a duplicate in any
// message group, whether or not the first message was deleted.
func TestRecordedFIFODeduplicationAcrossGroups(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: "
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		for _, cbd := range []bool{true, false} {
			attrs, in := fifoAttrs(), SendIn{Body: `{"foo": "bar"}`, Group: "group-1"}
			name := "groups-id.fifo"
			if cbd {
				attrs["ContentBasedDeduplication"] = "true"
				name = "groups-cbd.fifo"
			} else {
				in.Dedup = "dedup1"
			}
			u := mustCreate(t, c, name, attrs)
			mustSend(t, c, u, in)
			in.Group = "group-2"
			mustSend(t, c, u, in)
			wantBodies(t, mustReceive(t, c, u, 1), `{"foo": "bar"}`)
			if msgs := mustReceive(t, c, u, 1); len(msgs) != 0 {
				t.Errorf("content-based %v: received %v, recorded nothing (%s)", cbd, bodies(msgs), src+"test_fifo_deduplication_not_on_message_group_id/get-dedup-messages")
			}
		}
		// FifoQueue and ContentBasedDeduplication written "True"/"False".
		u := mustCreate(t, c, "same-dedup.fifo", map[string]string{"FifoQueue": "True", "ContentBasedDeduplication": "False"})
		mustSend(t, c, u, SendIn{Body: "Test", Group: "group1", Dedup: "same-dedup"})
		msgs := mustReceive(t, c, u, 1)
		wantBodies(t, msgs, "Test")
		mustDelete(t, c, u, msgs...)
		mustSend(t, c, u, SendIn{Body: "Test", Group: "group2", Dedup: "same-dedup"})
		if msgs := mustReceive(t, c, u, 1); len(msgs) != 0 {
			t.Errorf("received %v, recorded nothing (%s)", bodies(msgs), src+"test_sqs_fifo_same_dedup_id_different_message_groups/same-dedup-different-grp-2")
		}
	})
}

// TestRecordedFIFOHighThroughputDeduplication replays
// test_fifo_high_throughput_ordering: with DeduplicationScope messageGroup
// the same deduplication id in another group is a message of its own.
func TestRecordedFIFOHighThroughputDeduplication(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_fifo_high_throughput_ordering/same-dedup-different-grp-2"
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "high.fifo", map[string]string{"FifoQueue": "True", "ContentBasedDeduplication": "False",
			"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
		mustSend(t, c, u, SendIn{Body: "Test1", Group: "group1", Dedup: "same-dedup"})
		msgs := mustReceive(t, c, u, 1)
		wantBodies(t, msgs, "Test1")
		mustDelete(t, c, u, msgs...)
		mustSend(t, c, u, SendIn{Body: "Test2", Group: "group2", Dedup: "same-dedup"})
		if msgs := mustReceive(t, c, u, 1); len(bodies(msgs)) != 1 || msgs[0].Body != "Test2" {
			t.Errorf("received %v, recorded Test2 (%s)", bodies(msgs), src)
		}
	})
}

// TestRecordedFIFOThroughputChange replays
// test_fifo_change_to_high_throughput_after_creation and
// test_fifo_change_to_regular_throughput_after_creation: the attributes
// answer the new DeduplicationScope and FifoThroughputLimit at once, and
// deduplication keeps the old scope for old and new deduplication ids
// until the change has propagated, which SQS documents as up to 60 s.
func TestRecordedFIFOThroughputChange(t *testing.T) {
	const high = "localstack test_sqs.snapshot.json: test_fifo_change_to_high_throughput_after_creation/"
	const regular = "localstack test_sqs.snapshot.json: test_fifo_change_to_regular_throughput_after_creation/"
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		none := func(u, src string) {
			t.Helper()
			if msgs := mustReceive(t, c, u, 1); len(msgs) != 0 {
				t.Errorf("received %v, recorded nothing (%s)", bodies(msgs), src)
			}
		}
		one := func(u, body, src string) []Msg {
			t.Helper()
			msgs := mustReceive(t, c, u, 1)
			if len(msgs) != 1 || msgs[0].Body != body {
				t.Errorf("received %v, recorded %s (%s)", bodies(msgs), body, src)
			}
			return msgs
		}

		u := mustCreate(t, c, "to-high.fifo", map[string]string{"FifoQueue": "True", "ContentBasedDeduplication": "False", "DeduplicationScope": "queue"})
		mustSend(t, c, u, SendIn{Body: "Test1", Group: "group1", Dedup: "same-dedup"})
		mustDelete(t, c, u, one(u, "Test1", high+"same-dedup-different-grp-1")...)
		mustSend(t, c, u, SendIn{Body: "Test2", Group: "group2", Dedup: "same-dedup"})
		none(u, high+"same-dedup-different-grp-2")
		ok(t, c.SetAttrs(ctx, u, map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}))
		want := recordedFIFOAll()
		want["ContentBasedDeduplication"], want["DeduplicationScope"], want["FifoThroughputLimit"] = "false", "messageGroup", "perMessageGroupId"
		wantAttrs(t, must(c.GetAttrs(ctx, u, "All"))(t), want, high+"set-to-high-throughput")
		none(u, high+"same-dedup-different-grp-high-throughput")
		mustSend(t, c, u, SendIn{Body: "Test3", Group: "group3", Dedup: "same-dedup"})
		none(u, high+"same-dedup-different-grp-high-throughput-2")
		mustSend(t, c, u, SendIn{Body: "Test4", Group: "group4", Dedup: "dedup_2"})
		mustDelete(t, c, u, one(u, "Test4", high+"new-dedup2-high-throughput")...)
		mustSend(t, c, u, SendIn{Body: "Test5", Group: "group5", Dedup: "dedup_2"})
		none(u, high+"same-dedup2-high-throughput")
		// Once the change has propagated (SetQueueAttributes: "up to 60
		// seconds"), the new scope deduplicates.
		env.Clock.Advance(60 * time.Second)
		mustSend(t, c, u, SendIn{Body: "Test6", Group: "group6", Dedup: "dedup_2"})
		one(u, "Test6", "the new scope after its propagation")

		u = mustCreate(t, c, "to-regular.fifo", map[string]string{"FifoQueue": "True", "ContentBasedDeduplication": "False",
			"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
		mustSend(t, c, u, SendIn{Body: "Test1", Group: "group1", Dedup: "same-dedup"})
		mustDelete(t, c, u, one(u, "Test1", regular+"same-dedup-different-grp-1")...)
		mustSend(t, c, u, SendIn{Body: "Test2", Group: "group2", Dedup: "same-dedup"})
		mustDelete(t, c, u, one(u, "Test2", regular+"same-dedup-different-grp-2")...)
		ok(t, c.SetAttrs(ctx, u, map[string]string{"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"}))
		want["DeduplicationScope"], want["FifoThroughputLimit"] = "queue", "perQueue"
		wantAttrs(t, must(c.GetAttrs(ctx, u, "All"))(t), want, regular+"set-to-regular-throughput")
		mustSend(t, c, u, SendIn{Body: "Test3", Group: "group3", Dedup: "same-dedup"})
		mustDelete(t, c, u, one(u, "Test3", regular+"same-dedup-different-grp-regular-throughput")...)
		env.Clock.Advance(60 * time.Second)
		mustSend(t, c, u, SendIn{Body: "Test4", Group: "group4", Dedup: "dedup_3"})
		mustDelete(t, c, u, one(u, "Test4", "a new id after the propagation")...)
		mustSend(t, c, u, SendIn{Body: "Test5", Group: "group5", Dedup: "dedup_3"})
		none(u, "the new scope after its propagation")
	})
}

// TestRecordedDeadLetterMessageAttributes replays
// test_dead_letter_queue_message_attributes: with maxReceiveCount 1 and
// receives at VisibilityTimeout 0, each message is received once from its
// queue and then moved; in the dead-letter queue it keeps its id, body,
// message attributes and AWSTraceHeader, its receive count goes on (2),
// and it gains DeadLetterQueueSourceArn.
func TestRecordedDeadLetterMessageAttributes(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_dead_letter_queue_message_attributes/"
	const trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	msgProtocols(t, func(t *testing.T, s *scene) {
		ctx := ctxT(t)
		dlq := mustCreate(t, s.c, "dl-queue", nil)
		// The recording receives with VisibilityTimeout 0; the v2 SDK
		// does not send a zero, so the queue's own timeout is 0 instead.
		u := mustCreate(t, s.c, "queue", map[string]string{"RedrivePolicy": redrivePolicy(queueARN(t, s.c, dlq), 1), "VisibilityTimeout": "0"})
		srcARN := queueARN(t, s.c, u)
		r := s.post(t, "SendMessage", params{"QueueUrl": u, "MessageBody": "message-1",
			"MessageAttributes":       map[string]params{"MyAttribute": {"StringValue": "foobar", "DataType": "String"}},
			"MessageSystemAttributes": map[string]params{"AWSTraceHeader": {"StringValue": trace, "DataType": "String"}}})
		if r.status != 200 {
			t.Fatalf("SendMessage: HTTP %d %s", r.status, r.body)
		}
		mustSend(t, s.c, u, SendIn{Body: "message-2"})

		pre := map[string]Msg{}
		for range 4 {
			for _, m := range must(s.c.Receive(ctx, u, RecvIn{Wait: i32(0)}))(t) {
				if _, again := pre[m.Body]; again {
					t.Errorf("%s received twice from its queue (%s)", m.Body, src+"rec-pre-dlq")
				}
				pre[m.Body] = m
			}
		}
		if len(pre) != 2 {
			t.Fatalf("received %v from the queue, recorded message-1 and message-2 (%s)", slices.Sorted(maps.Keys(pre)), src+"rec-pre-dlq")
		}
		wantSys := func(m Msg, want []string, count, key string) {
			t.Helper()
			if got := sortedKeys(m.Sys); !slices.Equal(got, want) || m.Sys["ApproximateReceiveCount"] != count {
				t.Errorf("%s: attributes %v (count %s), recorded %v with count %s (%s)", m.Body, m.Sys, m.Sys["ApproximateReceiveCount"], want, count, src+key)
			}
		}
		base := []string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "SenderId", "SentTimestamp"}
		traced := slices.Sorted(slices.Values(append(slices.Clone(base), "AWSTraceHeader")))
		wantSys(pre["message-1"], traced, "1", "rec-pre-dlq")
		wantSys(pre["message-2"], base, "1", "rec-pre-dlq")

		got := map[string]Msg{}
		for range 4 {
			for _, m := range must(s.c.Receive(ctx, dlq, RecvIn{Max: 10, Wait: i32(0), Visibility: i32(30)}))(t) {
				got[m.Body] = m
			}
		}
		if len(got) != 2 {
			t.Fatalf("dead-letter queue held %v, recorded message-1 and message-2 (%s)", slices.Sorted(maps.Keys(got)), src+"dlq-messages")
		}
		wantSys(got["message-1"], slices.Sorted(slices.Values(append(slices.Clone(traced), "DeadLetterQueueSourceArn"))), "2", "dlq-messages")
		wantSys(got["message-2"], slices.Sorted(slices.Values(append(slices.Clone(base), "DeadLetterQueueSourceArn"))), "2", "dlq-messages")
		for body, m := range got {
			if m.ID != pre[body].ID || m.Sys["DeadLetterQueueSourceArn"] != srcARN {
				t.Errorf("%s: id %s (was %s), DeadLetterQueueSourceArn %q (source %s) (%s)", body, m.ID, pre[body].ID, m.Sys["DeadLetterQueueSourceArn"], srcARN, src+"dlq-messages")
			}
		}
		m1 := got["message-1"]
		if m1.Sys["AWSTraceHeader"] != trace || m1.MD5Attrs != "adb59cd4678ea5a855436b949cd07ab6" || m1.Attrs["MyAttribute"].String != "foobar" {
			t.Errorf("message-1 in the dead-letter queue: %+v (%s)", m1, src+"dlq-messages")
		}
	})
}

// TestRecordedCreateQueueAgainAfterSet replays the whole of
// test_create_queue_with_different_attributes_raises_exception: CreateQueue
// of an existing name returns its URL when every attribute it gives has
// the queue's current value (none given, or a subset), and refuses a
// different value, comparing with the values SetQueueAttributes left, not
// the ones the queue was created with.
func TestRecordedCreateQueueAgainAfterSet(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_create_queue_with_different_attributes_raises_exception/"
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		orig := map[string]string{"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "1"}
		u := mustCreate(t, c, "again", orig)
		for _, attrs := range []map[string]string{nil, {"DelaySeconds": "1"}} {
			if got := must(c.CreateQueue(ctx, "again", attrs, nil))(t); got != u {
				t.Errorf("CreateQueue %v = %s, want %s", attrs, got, u)
			}
		}
		changed := map[string]string{"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "2"}
		_, err := c.CreateQueue(ctx, "again", changed, nil)
		wantErr(t, err, "QueueAlreadyExists")
		ok(t, c.SetAttrs(ctx, u, map[string]string{"DelaySeconds": "2"}))
		if got := must(c.CreateQueue(ctx, "again", changed, nil))(t); got != u {
			t.Errorf("CreateQueue with the values set = %s, want %s", got, u)
		}
		_, err = c.CreateQueue(ctx, "again", orig, nil)
		wantErr(t, err, "QueueAlreadyExists")
		if err != nil && !strings.Contains(err.Error(), "A queue already exists with the same name and a different value for attribute DelaySeconds") {
			t.Errorf("%v, recorded the DelaySeconds message (%s)", err, src+"create_queue_02")
		}
	})
}

// TestRecordedBatchWithoutFailures replays
// test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size/send_oversized_message_batch
// for its members: a batch whose entries all succeed answers Successful
// and no Failed member, and an entry without message attributes has no
// MD5OfMessageAttributes.
func TestRecordedBatchWithoutFailures(t *testing.T) {
	const src = "localstack test_sqs.snapshot.json: test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size/send_oversized_message_batch"
	msgProtocols(t, func(t *testing.T, s *scene) {
		u := s.queue(t, "q", nil)
		r := s.post(t, "SendMessageBatch", params{"QueueUrl": u, "Entries": []params{
			{"Id": "1", "MessageBody": "x", "MessageAttributes": map[string]params{"k": {"DataType": "String", "StringValue": "x"}}},
			{"Id": "2", "MessageBody": "a"},
		}})
		body := string(r.body)
		if r.status != 200 || strings.Contains(body, "Failed") || strings.Contains(body, "BatchResultErrorEntry") ||
			strings.Count(body, "MD5OfMessageAttributes") != map[string]int{"json": 1, "query": 2}[s.proto] {
			t.Errorf("HTTP %d %s; recorded Successful alone, MD5OfMessageAttributes on entry 1 only (%s)", r.status, body, src)
		}
	})
}
