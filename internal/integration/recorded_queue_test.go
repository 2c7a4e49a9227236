package integration

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Sources cited in this file, besides the snapshot keys:
//
//   - localstack test_sqs.py <test> (aws validated): a test of
//     tests/aws/services/sqs/test_sqs.py marked as validated against AWS
//     whose assertions (not a snapshot) carry the answer.
//   - aws/aws-sdk-ruby#1350: AWS's SDK team on GetQueueAttributes naming a
//     FIFO attribute of a standard queue.

// TestRecordedQueueErrors replays recorded AWS answers about queues.
func TestRecordedQueueErrors(t *testing.T) {
	runRecorded(t, slices.Concat(queueAttributeErrorCases(), queueLifecycleErrorCases()))
}

// queueAttributeErrorCases are the recorded errors of creating a queue
// and of setting and reading its attributes.
func queueAttributeErrorCases() []recordedCase {
	fifo := map[string]string{"FifoQueue": "true"}
	return []recordedCase{
		{
			name:   "create queue with different attributes",
			source: "localstack test_sqs.snapshot.json: test_create_queue_with_different_attributes_raises_exception/create_queue_01",
			call: func(t *testing.T, s *scene) (string, params) {
				s.queue(t, "differs", map[string]string{"DelaySeconds": "1"})
				return "CreateQueue", params{"QueueName": "differs", "Attributes": map[string]string{"DelaySeconds": "2"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "QueueAlreadyExists", Type: "QueueNameExists",
				Message: "A queue already exists with the same name and a different value for attribute DelaySeconds"},
		},
		{
			name:   "create FIFO queue with a different ContentBasedDeduplication",
			source: "localstack test_sqs.snapshot.json: test_create_fifo_queue_with_different_attributes_raises_error/queue-already-exists",
			call: func(t *testing.T, s *scene) (string, params) {
				s.queue(t, "differs.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
				return "CreateQueue", params{"QueueName": "differs.fifo", "Attributes": map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "false"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "QueueAlreadyExists", Type: "QueueNameExists",
				Message: "A queue already exists with the same name and a different value for attribute ContentBasedDeduplication"},
		},
		{
			name:   "FifoQueue set on a standard queue",
			source: "localstack test_sqs.snapshot.json: test_set_unsupported_attribute_fifo/invalid-attr-name-1",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "standard", nil)
				return "SetQueueAttributes", params{"QueueUrl": u, "Attributes": map[string]string{"FifoQueue": "true"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName", Message: "Unknown Attribute FifoQueue."},
		},
		{
			name:   "FifoQueue false set on a FIFO queue",
			source: "localstack test_sqs.snapshot.json: test_set_unsupported_attribute_fifo/invalid-attr-name-2",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "typed.fifo", fifo)
				return "SetQueueAttributes", params{"QueueUrl": u, "Attributes": map[string]string{"FifoQueue": "false"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeValue",
				Message: "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported."},
		},
		{
			// The same refusal whatever the case of the value: booleans are
			// read in any case, so "FALSE" asks for a standard queue too.
			name:   "FifoQueue FALSE set on a FIFO queue",
			source: "localstack test_sqs.snapshot.json: test_set_unsupported_attribute_fifo/invalid-attr-name-2",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "typed.fifo", fifo)
				return "SetQueueAttributes", params{"QueueUrl": u, "Attributes": map[string]string{"FifoQueue": "FALSE"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeValue",
				Message: "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported."},
		},
		{
			name:   "GetQueueAttributes of an unknown name",
			source: "localstack test_sqs.py TestSqsQueryApi::test_get_queue_attributes_with_invalid_arg_returns_error (aws validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q", nil)
				return "GetQueueAttributes", params{"QueueUrl": u, "AttributeNames": []string{"Foobar"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName", Message: "Unknown Attribute Foobar."},
		},
		{
			name:   "GetQueueAttributes FifoQueue of a standard queue",
			source: "aws/aws-sdk-ruby#1350 (AWS: the service answers this for a FIFO attribute of a standard queue)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q", nil)
				return "GetQueueAttributes", params{"QueueUrl": u, "AttributeNames": []string{"QueueArn", "FifoQueue"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName", Message: "Unknown Attribute FifoQueue."},
		},
		{
			name:   "GetQueueAttributes ContentBasedDeduplication of a standard queue",
			source: "aws/aws-sdk-ruby#1350 (AWS: the service answers this for a FIFO attribute of a standard queue)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q", nil)
				return "GetQueueAttributes", params{"QueueUrl": u, "AttributeNames": []string{"ContentBasedDeduplication"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName", Message: "Unknown Attribute ContentBasedDeduplication."},
		},
		{
			name:   "SSE-KMS and SSE-SQS together",
			source: "localstack test_sqs.snapshot.json: test_sse_kms_and_sqs_are_mutually_exclusive/error",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q", nil)
				return "SetQueueAttributes", params{"QueueUrl": u, "Attributes": map[string]string{"KmsMasterKeyId": "testKeyId", "SqsManagedSseEnabled": "true"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName",
				Message: "You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE."},
		},
		{
			// Booleans of any case: "True" enables SSE-SQS as "true" does.
			name:   "SSE-KMS and SSE-SQS True together",
			source: "localstack test_sqs.snapshot.json: test_sse_kms_and_sqs_are_mutually_exclusive/error",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q", nil)
				return "SetQueueAttributes", params{"QueueUrl": u, "Attributes": map[string]string{"KmsMasterKeyId": "testKeyId", "SqsManagedSseEnabled": "True"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName",
				Message: "You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE."},
		},
	}
}

// queueLifecycleErrorCases are the recorded errors of purging, deleting
// and recreating a queue, and of URLs that name no queue.
func queueLifecycleErrorCases() []recordedCase {
	return []recordedCase{
		{
			name:   "second purge within 60 seconds",
			source: "localstack test_sqs.snapshot.json: test_successive_purge_calls_fail/purge_queue_error, purge-error-code-query",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "purged", nil)
				if err := s.c.Purge(ctxT(t), u); err != nil {
					t.Fatal(err)
				}
				return "PurgeQueue", params{"QueueUrl": u}
			},
			want: awsAnswer{Status: http.StatusForbidden, Code: "AWS.SimpleQueueService.PurgeQueueInProgress", Type: "PurgeQueueInProgress",
				Message: "Only one PurgeQueue operation on {queue_name} is allowed every 60 seconds."},
		},
		{
			name:   "create a queue again within 60 seconds of its deletion",
			source: "localstack test_sqs.py test_create_queue_recently_deleted (aws validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "again", nil)
				if err := s.c.DeleteQueue(ctxT(t), u); err != nil {
					t.Fatal(err)
				}
				return "CreateQueue", params{"QueueName": "again"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.QueueDeletedRecently", Type: "QueueDeletedRecently",
				Message: "You must wait 60 seconds after deleting a queue before you can create another with the same name."},
		},
		// A missing queue. The Query protocol words the message "The
		// specified queue does not exist for this wsdl version.", which is
		// i11-protocol's to answer; the message is not checked here.
		{
			name:   "queue URL of a deleted queue",
			source: "localstack test_sqs.snapshot.json: test_non_existent_queue/queue-does-not-exist, queue-does-not-exist-query",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "gone", nil)
				if err := s.c.DeleteQueue(ctxT(t), u); err != nil {
					t.Fatal(err)
				}
				return "GetQueueAttributes", params{"QueueUrl": u, "AttributeNames": []string{"All"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.NonExistentQueue", Type: "QueueDoesNotExist"},
		},
		{
			// A name given as QueueUrl resolves in the caller's account
			// (test_posting_to_queue_via_queue_name); one of no queue is a
			// missing queue.
			name:   "queue name of no queue as QueueUrl",
			source: "localstack test_sqs.py test_posting_to_queue_via_queue_name (aws validated); test_sqs.snapshot.json: test_non_existent_queue/queue-does-not-exist",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": "no-such-queue", "MessageBody": "x"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.NonExistentQueue", Type: "QueueDoesNotExist"},
		},
		{
			// Any host: the path names the queue.
			name:   "well-formed URL of another host naming no queue",
			source: "localstack test_sqs.snapshot.json: test_non_existent_queue/queue-does-not-exist",
			call: func(t *testing.T, s *scene) (string, params) {
				return "GetQueueAttributes", params{"QueueUrl": "https://sqs.eu-west-1.amazonaws.com/000000000000/no-such-queue", "AttributeNames": []string{"All"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.NonExistentQueue", Type: "QueueDoesNotExist"},
		},
		{
			// Not of the /ACCOUNT/NAME form: taken as a queue name, as SQS
			// resolves a name given as QueueUrl; no queue has such a name.
			name:   "URL without an account and name",
			source: "localstack test_sqs.py test_posting_to_queue_via_queue_name (aws validated); test_sqs.snapshot.json: test_non_existent_queue/queue-does-not-exist",
			call: func(t *testing.T, s *scene) (string, params) {
				return "PurgeQueue", params{"QueueUrl": s.env.URL + "/"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.NonExistentQueue", Type: "QueueDoesNotExist"},
		},
	}
}

// TestRecordedQueueNameAsQueueURL replays test_posting_to_queue_via_queue_name
// (localstack test_sqs.py, aws validated): SendMessage with the queue's
// name as QueueUrl sends to the caller's queue of that name. It also sends
// by a URL of another host whose path names the queue, which resolves to
// the same queue, as TestSqsQueryApi::test_overwrite_queue_url_in_params
// (aws validated) shows the QueueUrl member, not the endpoint, naming it.
func TestRecordedQueueNameAsQueueURL(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"json", "query"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := newScene(t, proto)
			u := s.queue(t, "by-name", nil)
			r := s.post(t, "SendMessage", params{"QueueUrl": "by-name", "MessageBody": "Using name instead of URL"})
			if r.status != http.StatusOK || !strings.Contains(string(r.body), "86a83f96652a1bfad3891e7d523750cb") {
				t.Fatalf("send by name: HTTP %d %s", r.status, r.body)
			}
			parsed, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			other := "https://sqs.us-east-1.amazonaws.com" + parsed.Path
			r = s.post(t, "SendMessage", params{"QueueUrl": other, "MessageBody": "by another host"})
			if r.status != http.StatusOK {
				t.Fatalf("send by %s: HTTP %d %s", other, r.status, r.body)
			}
			msgs := must(s.c.Receive(ctxT(t), u, RecvIn{Max: 10}))(t)
			if len(msgs) != 2 {
				t.Fatalf("received %d messages, want the 2 sent by name and by another host", len(msgs))
			}
		})
	}
}

// TestRecordedPurgeClearsDeduplication replays
// test_purge_queue_clears_fifo_deduplication_cache (localstack
// test_sqs.py, aws validated): after PurgeQueue, a message with the
// deduplication id of one sent before the purge is accepted and delivered.
func TestRecordedPurgeClearsDeduplication(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		u := mustCreate(t, c, "purged.fifo", map[string]string{"FifoQueue": "true"})
		must(c.Send(ctx, u, SendIn{Body: "message-1", Group: "g", Dedup: "same"}))(t)
		if err := c.Purge(ctx, u); err != nil {
			t.Fatal(err)
		}
		must(c.Send(ctx, u, SendIn{Body: "message-2", Group: "g", Dedup: "same"}))(t)
		msgs := must(c.Receive(ctx, u, RecvIn{Max: 10}))(t)
		if len(msgs) != 1 || msgs[0].Body != "message-2" {
			t.Fatalf("received %+v, want message-2 alone", msgs)
		}
	})
}

// TestRecordedMaximumMessageSize checks what SQS answers since its 2025
// change to 1 MiB messages, as the API model documents it
// (shared/reference/sqs-2012-11-05.service.json, CreateQueue: "Valid
// values: An integer from 1,024 bytes (1 KiB) to 1,048,576 bytes (1 MiB).
// Default: 1,048,576 bytes (1 MiB)."; SendMessageBatch: the total payload
// is 1 MiB too): a queue created with defaults has MaximumMessageSize
// 1048576, accepts a 1 MiB body and a batch of 1 MiB in total, and accepts
// MaximumMessageSize up to 1048576 and no more. The stored LocalStack
// recordings (test_sqs.snapshot.json: test_create_and_update_queue_attributes,
// 2023) predate the change and show 262144.
func TestRecordedMaximumMessageSize(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		u := mustCreate(t, c, "defaults", nil)
		if got := must(c.GetAttrs(ctx, u, "MaximumMessageSize"))(t)["MaximumMessageSize"]; got != "1048576" {
			t.Errorf("MaximumMessageSize = %s, want 1048576", got)
		}
		body := strings.Repeat("x", 1<<20)
		must(c.Send(ctx, u, SendIn{Body: body}))(t)
		msgs := must(c.Receive(ctx, u, RecvIn{Max: 1}))(t)
		if len(msgs) != 1 || len(msgs[0].Body) != 1<<20 {
			t.Fatalf("the 1 MiB message did not come back whole")
		}
		half := strings.Repeat("y", 1<<19)
		_, failed, err := c.SendBatch(ctx, u, []BatchSend{{ID: "a", SendIn: SendIn{Body: half}}, {ID: "b", SendIn: SendIn{Body: half}}})
		if err != nil || len(failed) != 0 {
			t.Errorf("batch of 1 MiB in total: %v %v", err, failed)
		}
		if err := c.SetAttrs(ctx, u, map[string]string{"MaximumMessageSize": "1048576"}); err != nil {
			t.Errorf("MaximumMessageSize 1048576: %v", err)
		}
		wantErr(t, c.SetAttrs(ctx, u, map[string]string{"MaximumMessageSize": "1048577"}), "InvalidAttributeValue")
	})
}

// TestRecordedBooleanAttributeCase checks that boolean attribute values
// are read in any letter case and answered in lower case: FifoQueue=True
// makes a FIFO queue, ContentBasedDeduplication=TRUE turns content-based
// deduplication on. Issue 11 states SQS reads them so; no public recording
// of it was found (see the report). The answers are the recorded forms of
// test_fifo_set_content_based_deduplication_strategy/before-update.
func TestRecordedBooleanAttributeCase(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		u := mustCreate(t, c, "cased.fifo", map[string]string{"FifoQueue": "True", "ContentBasedDeduplication": "TRUE"})
		got := must(c.GetAttrs(ctx, u, "All"))(t)
		if got["FifoQueue"] != "true" || got["ContentBasedDeduplication"] != "true" {
			t.Errorf("FifoQueue %q, ContentBasedDeduplication %q; want true and true", got["FifoQueue"], got["ContentBasedDeduplication"])
		}
		// The same queue again, in another case: the same attributes.
		if again := must(c.CreateQueue(ctx, "cased.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}, nil))(t); again != u {
			t.Errorf("CreateQueue again = %s, want %s", again, u)
		}
		// Content-based deduplication works: no deduplication id needed.
		must(c.Send(ctx, u, SendIn{Body: "b", Group: "g"}))(t)
		if err := c.SetAttrs(ctx, u, map[string]string{"FifoQueue": "TRUE", "ContentBasedDeduplication": "False"}); err != nil {
			t.Fatalf("FifoQueue TRUE on a FIFO queue: %v", err)
		}
		if got := must(c.GetAttrs(ctx, u, "ContentBasedDeduplication"))(t)["ContentBasedDeduplication"]; got != "false" {
			t.Errorf("ContentBasedDeduplication = %q after False, want false", got)
		}
	})
}

// TestRecordedCooldowns replays the two cool-downs SQS was recorded
// keeping (test_create_queue_recently_deleted,
// test_successive_purge_calls_fail) with the server's defaults, then
// checks fifo serve's settings: a negative setting (fifoq serve's 0) turns
// each off, so that tests may delete and recreate, or purge, in a loop.
func TestRecordedCooldowns(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		eachProtocol(t, func(t *testing.T, env *Env, c Client) {
			ctx := ctxT(t)
			u := mustCreate(t, c, "cool", nil)
			if err := c.DeleteQueue(ctx, u); err != nil {
				t.Fatal(err)
			}
			_, err := c.CreateQueue(ctx, "cool", nil, nil)
			wantErr(t, err, "AWS.SimpleQueueService.QueueDeletedRecently")
			env.Clock.Advance(60 * time.Second)
			u = must(c.CreateQueue(ctx, "cool", nil, nil))(t)

			if err := c.Purge(ctx, u); err != nil {
				t.Fatal(err)
			}
			wantErr(t, c.Purge(ctx, u), "AWS.SimpleQueueService.PurgeQueueInProgress")
			env.Clock.Advance(60 * time.Second)
			if err := c.Purge(ctx, u); err != nil {
				t.Errorf("purge 60 s later: %v", err)
			}
		})
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		for _, proto := range []string{"json", "query"} {
			t.Run(proto, func(t *testing.T) {
				t.Parallel()
				env := StartWith(t, Options{RecreateDelay: -1, PurgeDelay: -1})
				var c Client = v2Client{env.V2}
				if proto == "query" {
					c = v1Client{env.V1}
				}
				ctx := ctxT(t)
				for i := range 3 {
					u := mustCreate(t, c, "loop", nil)
					if err := c.Purge(ctx, u); err != nil {
						t.Fatalf("purge %d: %v", i, err)
					}
					if err := c.Purge(ctx, u); err != nil {
						t.Fatalf("purge %d again: %v", i, err)
					}
					if err := c.DeleteQueue(ctx, u); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	})
	t.Run("shorter", func(t *testing.T) {
		t.Parallel()
		env := StartWith(t, Options{RecreateDelay: 5 * time.Second, PurgeDelay: 2 * time.Second})
		c := v2Client{env.V2}
		ctx := ctxT(t)
		u := mustCreate(t, c, "short", nil)
		if err := c.DeleteQueue(ctx, u); err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(4 * time.Second)
		_, err := c.CreateQueue(ctx, "short", nil, nil)
		wantErr(t, err, "AWS.SimpleQueueService.QueueDeletedRecently")
		env.Clock.Advance(time.Second)
		u = must(c.CreateQueue(ctx, "short", nil, nil))(t)
		if err := c.Purge(ctx, u); err != nil {
			t.Fatal(err)
		}
		wantErr(t, c.Purge(ctx, u), "AWS.SimpleQueueService.PurgeQueueInProgress")
		env.Clock.Advance(2 * time.Second)
		if err := c.Purge(ctx, u); err != nil {
			t.Errorf("purge 2 s later: %v", err)
		}
	})
}
