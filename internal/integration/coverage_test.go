package integration

import (
	"net/url"
	"strings"
	"testing"
)

// allActions are the 23 actions of the SQS API.
var allActions = []string{
	"AddPermission", "CancelMessageMoveTask", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch",
	"CreateQueue", "DeleteMessage", "DeleteMessageBatch", "DeleteQueue", "GetQueueAttributes",
	"GetQueueUrl", "ListDeadLetterSourceQueues", "ListMessageMoveTasks", "ListQueueTags",
	"ListQueues", "PurgeQueue", "ReceiveMessage", "RemovePermission", "SendMessage",
	"SendMessageBatch", "SetQueueAttributes", "StartMessageMoveTask", "TagQueue", "UntagQueue",
}

// TestEveryActionThroughBothProtocols calls each of the 23 actions
// successfully through each client, and checks on the wire that every
// action went out in both protocols.
func TestEveryActionThroughBothProtocols(t *testing.T) {
	t.Parallel()
	env := Start(t)
	ctx := ctxT(t)
	for _, c := range clients(env) {
		t.Run(c.Proto(), func(t *testing.T) {
			p := c.Proto()
			dlq := mustCreate(t, c, p+"-dlq", nil)
			dlqARN := queueARN(t, c, dlq)
			q := mustCreate(t, c, p+"-q", map[string]string{"RedrivePolicy": redrivePolicy(dlqARN, 5)})
			ok(t, c.SetAttrs(ctx, q, map[string]string{"VisibilityTimeout": "20"}))
			if got := must(c.GetQueueURL(ctx, p+"-q"))(t); got != q {
				t.Fatalf("GetQueueUrl = %q, want %q", got, q)
			}
			if urls := must2(c.ListQueues(ctx, p+"-", 0, ""))(t); len(urls) != 2 {
				t.Fatalf("ListQueues = %q", urls)
			}
			ok(t, c.Tag(ctx, q, map[string]string{"k": "v"}))
			ok(t, c.Untag(ctx, q, "k"))
			if tags := must(c.ListTags(ctx, q))(t); len(tags) != 0 {
				t.Fatalf("tags = %v", tags)
			}
			ok(t, c.AddPermission(ctx, q, "l", []string{"111122223333"}, []string{"SendMessage"}))
			ok(t, c.RemovePermission(ctx, q, "l"))

			mustSend(t, c, q, SendIn{Body: "one"})
			sendMany(t, c, q, "", "many", 3)
			var msgs []Msg
			for i := 0; i < 10 && len(msgs) < 4; i++ {
				msgs = append(msgs, mustReceive(t, c, q, 10)...)
			}
			if len(msgs) != 4 {
				t.Fatalf("received %d of 4 messages", len(msgs))
			}
			ok(t, c.ChangeVisibility(ctx, q, msgs[0].Handle, 60))
			if _, fails, err := c.ChangeVisibilityBatch(ctx, q, handles(msgs[1:]), 60); err != nil || len(fails) > 0 {
				t.Fatalf("ChangeMessageVisibilityBatch: %v %v", err, fails)
			}
			ok(t, c.Delete(ctx, q, msgs[0].Handle))
			if _, fails, err := c.DeleteBatch(ctx, q, handles(msgs[1:])); err != nil || len(fails) > 0 {
				t.Fatalf("DeleteMessageBatch: %v %v", err, fails)
			}

			if src := must2(c.ListDLQSources(ctx, dlq, 0, ""))(t); len(src) != 1 || src[0] != q {
				t.Fatalf("ListDeadLetterSourceQueues = %q", src)
			}
			sendMany(t, c, dlq, "", "dead", 30)
			handle := must(c.StartMove(ctx, dlqARN, queueARN(t, c, q), 1))(t)
			if tasks := must(c.ListMoves(ctx, dlqARN, 0))(t); len(tasks) != 1 || tasks[0].Handle != handle {
				t.Fatalf("ListMessageMoveTasks = %+v", tasks)
			}
			must(c.CancelMove(ctx, handle))(t)
			ok(t, c.Purge(ctx, dlq))
			ok(t, c.DeleteQueue(ctx, q))
		})
	}

	for _, proto := range []string{"json", "query"} {
		seen := map[string]bool{}
		log := env.V2Wire
		if proto == "query" {
			log = env.V1Wire
		}
		for _, r := range log.Requests() {
			if target := r.Header.Get("X-Amz-Target"); target != "" {
				seen[strings.TrimPrefix(target, "AmazonSQS.")] = true
				continue
			}
			if form, err := url.ParseQuery(string(r.Body)); err == nil {
				seen[form.Get("Action")] = true
			}
		}
		for _, a := range allActions {
			if !seen[a] {
				t.Errorf("%s: action %s never went out on the wire", proto, a)
			}
		}
	}
}

// must2 is must for calls with three results, of which the second is dropped.
func must2[T, U any](v T, _ U, err error) func(t *testing.T) T {
	return must(v, err)
}
