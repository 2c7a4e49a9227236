package integration

import (
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"
)

// The recordings of this file are LocalStack's AWS-validated message move
// task tests, localstack/localstack tests/aws/services/sqs/
// test_sqs_move_task.snapshot.json (and test_sqs_move_task.py for the
// requests). They were recorded with the Query protocol (Detail: null);
// the JSON __type of InvalidParameterValue is InvalidParameterValueException,
// as in every other JSON recording.

// movetaskSnapshot names the snapshot file in sources.
const movetaskSnapshot = "localstack test_sqs_move_task.snapshot.json: "

// dlqPipe creates a dead-letter queue "dlq", a queue "src" that sends to it
// after one receive (its visibility timeout 0, so that a message is received
// again at once), and a plain queue "dest"; it returns their URLs and
// the ARNs of the DLQ and the destination, and sets {dlq_arn}.
func (s *scene) dlqPipe(t *testing.T) (dlq, src, dest, dlqARN, destARN string) {
	t.Helper()
	dlq = mustCreate(t, s.c, "dlq", nil)
	dlqARN = queueARN(t, s.c, dlq)
	// A visibility timeout of 0 on the queue, not on the receive: the JSON
	// SDK does not send a VisibilityTimeout of 0.
	src = mustCreate(t, s.c, "src", map[string]string{"RedrivePolicy": redrivePolicy(dlqARN, 1), "VisibilityTimeout": "0"})
	dest = mustCreate(t, s.c, "dest", nil)
	destARN = queueARN(t, s.c, dest)
	s.vars["dlq_arn"] = dlqARN
	return dlq, src, dest, dlqARN, destARN
}

// taskHandle renders a task handle as AWS's are made: the base64 of
// {"taskId":ID,"sourceArn":ARN} (test_sqs_move_task.py decodes AWS's so).
func taskHandle(taskID, sourceARN string) string {
	return base64.StdEncoding.EncodeToString([]byte(`{"taskId":"` + taskID + `","sourceArn":"` + sourceARN + `"}`))
}

// TestRecordedMoveTaskErrors replays the recorded errors of
// StartMessageMoveTask and CancelMessageMoveTask.
func TestRecordedMoveTaskErrors(t *testing.T) {
	notFound := func(msg string) awsAnswer {
		return awsAnswer{Status: http.StatusNotFound, Code: "ResourceNotFoundException", Message: msg}
	}
	runRecorded(t, []recordedCase{
		{
			name:   "cancel with a malformed handle",
			source: movetaskSnapshot + "test_cancel_with_invalid_task_handle/error",
			call: func(t *testing.T, s *scene) (string, params) {
				return "CancelMessageMoveTask", params{"TaskHandle": "foobared"}
			},
			want: invalidParameter("Value for parameter TaskHandle is invalid."),
		},
		{
			name:   "cancel with a handle naming no queue",
			source: movetaskSnapshot + "test_cancel_with_invalid_source_arn_in_task_handle/error",
			call: func(t *testing.T, s *scene) (string, params) {
				return "CancelMessageMoveTask", params{"TaskHandle": taskHandle("10f57157-fc38-4da9-a113-4de7e12d05dd",
					"arn:aws:sqs:us-east-1:878966065785:test-queue-doesnt-exist-123456")}
			},
			want: notFound("The resource that you specified for the SourceArn parameter doesn't exist."),
		},
		{
			name:   "cancel with a handle naming no task",
			source: movetaskSnapshot + "test_cancel_with_invalid_task_id_in_task_handle/error",
			call: func(t *testing.T, s *scene) (string, params) {
				q := s.queue(t, "source", nil)
				return "CancelMessageMoveTask", params{"TaskHandle": taskHandle("10f57157-fc38-4da9-a113-4de7e12d05aa", queueARN(t, s.c, q))}
			},
			want: notFound("Task does not exist."),
		},
		{
			name:   "source that is not a dead-letter queue",
			source: movetaskSnapshot + "test_source_needs_redrive_policy/error",
			call: func(t *testing.T, s *scene) (string, params) {
				source := queueARN(t, s.c, s.queue(t, "source", nil))
				dest := queueARN(t, s.c, s.queue(t, "destination", nil))
				return "StartMessageMoveTask", params{"SourceArn": source, "DestinationArn": dest}
			},
			want: invalidParameter("Source queue must be configured as a Dead Letter Queue."),
		},
		{
			name:   "destination that does not exist",
			source: movetaskSnapshot + "test_destination_needs_to_exist/error",
			call: func(t *testing.T, s *scene) (string, params) {
				_, _, _, dlqARN, destARN := s.dlqPipe(t)
				return "StartMessageMoveTask", params{"SourceArn": dlqARN, "DestinationArn": destARN + "doesntexist"}
			},
			want: notFound("The resource that you specified for the DestinationArn parameter doesn't exist."),
		},
		{
			name:   "second task on one source",
			source: movetaskSnapshot + "test_start_multiple_move_tasks/error",
			call: func(t *testing.T, s *scene) (string, params) {
				dlq, _, _, dlqARN, destARN := s.dlqPipe(t)
				sendMany(t, s.c, dlq, "", "m", 10)
				must(s.c.StartMove(ctxT(t), dlqARN, destARN, 1))(t)
				return "StartMessageMoveTask", params{"SourceArn": dlqARN, "DestinationArn": destARN, "MaxNumberOfMessagesPerSecond": 1}
			},
			want: invalidParameter("There is already a task running. Only one active task is allowed for a source queue arn at a given time."),
		},
	})
}

// listMovesWire lists the move tasks of source with a raw request in the
// scene's protocol and returns each entry's members as written on the
// wire, so that a test sees which members are present.
func listMovesWire(t *testing.T, s *scene, source string) []map[string]string {
	t.Helper()
	r := s.post(t, "ListMessageMoveTasks", params{"SourceArn": source})
	if r.status != http.StatusOK {
		t.Fatalf("ListMessageMoveTasks: HTTP %d: %s", r.status, r.body)
	}
	var out []map[string]string
	if s.proto == "json" {
		var body struct{ Results []map[string]any }
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("ListMessageMoveTasks body: %v: %s", err, r.body)
		}
		for _, e := range body.Results {
			m := map[string]string{}
			for k, v := range e {
				b, _ := json.Marshal(v)
				m[k] = string(b)
				if str, isStr := v.(string); isStr {
					m[k] = str
				}
			}
			out = append(out, m)
		}
		return out
	}
	type node struct {
		XMLName xml.Name
		Text    string `xml:",chardata"`
		Nodes   []node `xml:",any"`
	}
	var doc node
	if err := xml.Unmarshal(r.body, &doc); err != nil {
		t.Fatalf("ListMessageMoveTasks body: %v: %s", err, r.body)
	}
	for _, n := range doc.Nodes {
		if n.XMLName.Local != "ListMessageMoveTasksResult" {
			continue
		}
		for _, e := range n.Nodes {
			m := map[string]string{}
			for _, f := range e.Nodes {
				m[f.XMLName.Local] = f.Text
			}
			out = append(out, m)
		}
	}
	return out
}

// wantTaskMembers fails unless the entry has exactly the members named.
func wantTaskMembers(t *testing.T, e map[string]string, source string, names ...string) {
	t.Helper()
	var got []string
	for k := range e {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("task members %q, recorded %q (%s): %v", got, names, source, e)
	}
}

// deadLetter sends n messages to src and receives them until the second
// receive of each moves it to the DLQ (maxReceiveCount 1).
func deadLetter(t *testing.T, s *scene, src, dlq string, n int) {
	t.Helper()
	ctx := ctxT(t)
	sendMany(t, s.c, src, "", "message-", n)
	zero := int32(0)
	eventually(t, 5*time.Second, "messages in the DLQ", func() bool {
		must(s.c.Receive(ctx, src, RecvIn{Max: 10, Wait: &zero}))(t)
		return numAttr(t, s.c, dlq, "ApproximateNumberOfMessages") == n
	})
}

// TestRecordedMoveTaskWorkflow: a task's handle, and what
// ListMessageMoveTasks says of a completed task, as recorded in
// test_basic_move_task_workflow (with a destination) and
// test_move_task_workflow_with_default_destination (without).
func TestRecordedMoveTaskWorkflow(t *testing.T) {
	t.Parallel()
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for _, proto := range []string{"json", "query"} {
		for _, withDest := range []bool{true, false} {
			name := proto + "/default destination"
			source := movetaskSnapshot + "test_move_task_workflow_with_default_destination/list-message-move-task-response"
			if withDest {
				name = proto + "/destination"
				source = movetaskSnapshot + "test_basic_move_task_workflow/list-message-move-task-response"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := newScene(t, proto)
				ctx := ctxT(t)
				dlq, src, dest, dlqARN, destARN := s.dlqPipe(t)
				deadLetter(t, s, src, dlq, 2)
				target := ""
				if withDest {
					target = destARN
				}
				handle := must(s.c.StartMove(ctx, dlqARN, target, 0))(t)

				// The handle is the base64 of a JSON document naming a
				// UUID task and the source (test_basic_move_task_workflow
				// decodes it so).
				raw, err := base64.StdEncoding.DecodeString(handle)
				var doc struct{ TaskID, SourceArn string }
				if err != nil || json.Unmarshal(raw, &doc) != nil || !uuid.MatchString(doc.TaskID) || doc.SourceArn != dlqARN {
					t.Fatalf("TaskHandle %q decodes to %q (%v), want {taskId: UUID, sourceArn: %s}", handle, raw, err, dlqARN)
				}

				// The task moves at its rate of the server's clock.
				s.env.Clock.Advance(time.Second)
				var tasks []map[string]string
				eventually(t, 5*time.Second, "task completion", func() bool {
					tasks = listMovesWire(t, s, dlqARN)
					return len(tasks) == 1 && tasks[0]["Status"] == "COMPLETED"
				})
				e := tasks[0]
				members := []string{"ApproximateNumberOfMessagesMoved", "ApproximateNumberOfMessagesToMove", "SourceArn", "StartedTimestamp", "Status"}
				if withDest {
					members = append(members, "DestinationArn")
				}
				wantTaskMembers(t, e, source, members...)
				if e["ApproximateNumberOfMessagesMoved"] != "2" || e["ApproximateNumberOfMessagesToMove"] != "2" || e["SourceArn"] != dlqARN ||
					(withDest && e["DestinationArn"] != destARN) {
					t.Errorf("completed task %v, recorded 2 of 2 moved from %s (%s)", e, dlqARN, source)
				}
				back := src
				if withDest {
					back = dest
				}
				if n := numAttr(t, s.c, back, "ApproximateNumberOfMessages"); n != 2 {
					t.Errorf("%d messages moved to %s, want 2", n, back)
				}
			})
		}
	}
}

// TestRecordedMoveTaskCancel: a running task lists its TaskHandle and rate;
// cancelled, it lists neither handle nor failure (test_move_task_cancel:
// list-while, cancel, list-after).
func TestRecordedMoveTaskCancel(t *testing.T) {
	const source = movetaskSnapshot + "test_move_task_cancel/"
	for _, proto := range []string{"json", "query"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := newScene(t, proto)
			ctx := ctxT(t)
			dlq, src, _, dlqARN, destARN := s.dlqPipe(t)
			deadLetter(t, s, src, dlq, 10)
			handle := must(s.c.StartMove(ctx, dlqARN, destARN, 1))(t)

			tasks := listMovesWire(t, s, dlqARN)
			if len(tasks) != 1 {
				t.Fatalf("tasks %v, want one", tasks)
			}
			wantTaskMembers(t, tasks[0], source+"list-while", "ApproximateNumberOfMessagesMoved", "ApproximateNumberOfMessagesToMove",
				"DestinationArn", "MaxNumberOfMessagesPerSecond", "SourceArn", "StartedTimestamp", "Status", "TaskHandle")
			if e := tasks[0]; e["Status"] != "RUNNING" || e["TaskHandle"] != handle || e["ApproximateNumberOfMessagesToMove"] != "10" || e["MaxNumberOfMessagesPerSecond"] != "1" {
				t.Errorf("running task %v (%s)", e, source+"list-while")
			}

			must(s.c.CancelMove(ctx, handle))(t)
			tasks = listMovesWire(t, s, dlqARN)
			if len(tasks) != 1 || tasks[0]["Status"] != "CANCELLED" {
				t.Fatalf("tasks after cancel %v, recorded CANCELLED (%s)", tasks, source+"list-after")
			}
			wantTaskMembers(t, tasks[0], source+"list-after", "ApproximateNumberOfMessagesMoved", "ApproximateNumberOfMessagesToMove",
				"DestinationArn", "MaxNumberOfMessagesPerSecond", "SourceArn", "StartedTimestamp", "Status")
			if n := numAttr(t, s.c, dlq, "ApproximateNumberOfMessages"); n == 0 {
				t.Errorf("no message left in the DLQ after cancelling a task at 1/s")
			}
		})
	}
}

// TestRecordedMoveTaskDestinationDeleted: deleting the destination of a
// running task fails it with FailureReason
// AWS.SimpleQueueService.NonExistentQueue
// (test_move_task_delete_destination_queue_while_running/list).
func TestRecordedMoveTaskDestinationDeleted(t *testing.T) {
	const source = movetaskSnapshot + "test_move_task_delete_destination_queue_while_running/list"
	for _, proto := range []string{"json", "query"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := newScene(t, proto)
			ctx := ctxT(t)
			dlq, src, dest, dlqARN, destARN := s.dlqPipe(t)
			deadLetter(t, s, src, dlq, 10)
			must(s.c.StartMove(ctx, dlqARN, destARN, 1))(t)
			ok(t, s.c.DeleteQueue(ctx, dest))
			// The task finds its destination gone when it next moves.
			s.env.Clock.Advance(time.Second)
			var tasks []map[string]string
			eventually(t, 5*time.Second, "task failure", func() bool {
				tasks = listMovesWire(t, s, dlqARN)
				return len(tasks) == 1 && tasks[0]["Status"] != "RUNNING"
			})
			e := tasks[0]
			wantTaskMembers(t, e, source, "ApproximateNumberOfMessagesMoved", "ApproximateNumberOfMessagesToMove",
				"DestinationArn", "FailureReason", "MaxNumberOfMessagesPerSecond", "SourceArn", "StartedTimestamp", "Status")
			if e["Status"] != "FAILED" || e["FailureReason"] != "AWS.SimpleQueueService.NonExistentQueue" {
				t.Errorf("task %v, recorded FAILED with AWS.SimpleQueueService.NonExistentQueue (%s)", e, source)
			}
			if n := numAttr(t, s.c, dlq, "ApproximateNumberOfMessages"); n == 0 {
				t.Errorf("no message left in the DLQ after the destination went")
			}
		})
	}
}
