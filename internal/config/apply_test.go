package config

import (
	"context"
	"errors"
	clockpkg "github.com/fifoq/fifoq/internal/clock"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/server"
)

// These tests apply files to a real server (in memory, in-process)
// through its Do, as fifoq serve does, and check the queues through the
// same SQS requests a client would make.

const owner = "000000000000"

// clock is the server's clock, moved by the test so that a change of
// LastModifiedTimestamp (in seconds) cannot be missed.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// recorder is a Doer that passes requests to the server and records the
// actions of those that may change state.
type recorder struct {
	srv    *server.Server
	mu     sync.Mutex
	writes []string
}

func (r *recorder) Do(ctx context.Context, account string, req api.Request) (api.Response, error) {
	if !req.Action().ReadOnly() {
		r.mu.Lock()
		r.writes = append(r.writes, string(req.Action()))
		r.mu.Unlock()
	}
	return r.srv.Do(ctx, account, req)
}

// takeWrites returns the recorded writes and forgets them.
func (r *recorder) takeWrites() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

type fixture struct {
	t     *testing.T
	clock *clock
	srv   *server.Server
	rec   *recorder
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	srv, err := server.New(server.Config{Account: owner, Region: "us-east-1", Clock: clockpkg.WithNow(c.Now),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return &fixture{t: t, clock: c, srv: srv, rec: &recorder{srv: srv}}
}

// apply parses yaml and applies it as the default account owner.
func (f *fixture) apply(yaml string) (Result, error) {
	f.t.Helper()
	file, err := Parse("q.yaml", []byte(yaml), env{}.lookup)
	if err != nil {
		f.t.Fatalf("Parse: %v", err)
	}
	return file.Apply(context.Background(), f.rec, owner, "us-east-1")
}

// mustApply applies yaml and checks the outcome of each queue, given as
// "NAME=OUTCOME" in the order applied.
func (f *fixture) mustApply(yaml string, want ...string) {
	f.t.Helper()
	res, err := f.apply(yaml)
	if err != nil {
		f.t.Fatalf("Apply: %v", err)
	}
	var got []string
	for _, q := range res.Queues {
		got = append(got, q.Queue.Name+"="+q.Outcome.String())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		f.t.Fatalf("Apply outcomes %v, want %v", got, want)
	}
}

func (f *fixture) do(account string, req api.Request) (api.Response, error) {
	return f.srv.Do(context.Background(), account, req)
}

func (f *fixture) attrs(name string) map[string]string {
	f.t.Helper()
	resp, err := f.do(owner, &api.GetQueueAttributesRequest{QueueUrl: "/" + owner + "/" + name, AttributeNames: []string{api.AttrAll}})
	if err != nil {
		f.t.Fatalf("GetQueueAttributes %s: %v", name, err)
	}
	return resp.(*api.GetQueueAttributesResult).Attributes
}

func (f *fixture) tags(name string) map[string]string {
	f.t.Helper()
	resp, err := f.do(owner, &api.ListQueueTagsRequest{QueueUrl: "/" + owner + "/" + name})
	if err != nil {
		f.t.Fatalf("ListQueueTags %s: %v", name, err)
	}
	return resp.(*api.ListQueueTagsResult).Tags
}

func readExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(examplePath(t))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApplyExample applies the example file: the queues exist as
// declared, its policy takes effect, and applying it again writes nothing.
func TestApplyExample(t *testing.T) {
	f := newFixture(t)
	example := readExample(t)
	f.mustApply(example, "orders-dlq.fifo=created", "orders.fifo=created", "notifications=created")

	orders := f.attrs("orders.fifo")
	for name, want := range map[string]string{
		"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "30",
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq.fifo","maxReceiveCount":5}`,
	} {
		if orders[name] != want {
			t.Errorf("orders.fifo %s = %q, want %q", name, orders[name], want)
		}
	}
	if !strings.Contains(orders["Policy"], `"111111111111"`) {
		t.Errorf("orders.fifo Policy = %q", orders["Policy"])
	}
	if got := f.attrs("orders-dlq.fifo")["MessageRetentionPeriod"]; got != "1209600" {
		t.Errorf("orders-dlq.fifo MessageRetentionPeriod = %s", got)
	}
	n := f.attrs("notifications")
	if n["DelaySeconds"] != "5" || n["ReceiveMessageWaitTimeSeconds"] != "20" || n["FifoQueue"] != "" {
		t.Errorf("notifications attributes %v", n)
	}
	if got := f.tags("orders.fifo"); !equalMaps(got, map[string]string{"team": "payments", "env": "dev"}) {
		t.Errorf("orders.fifo tags %v", got)
	}

	// The policy lets account 111111111111 send, and nothing else.
	const partner = "111111111111"
	url := "/" + owner + "/orders.fifo"
	if _, err := f.do(partner, &api.SendMessageRequest{QueueUrl: url, MessageBody: "hi", MessageGroupId: "g"}); err != nil {
		t.Errorf("partner SendMessage: %v", err)
	}
	_, err := f.do(partner, &api.ReceiveMessageRequest{QueueUrl: url})
	if !hasCode(err, &api.Error{Code: "AccessDenied"}) {
		t.Errorf("partner ReceiveMessage: %v, want AccessDenied", err)
	}
	if _, err := f.do("222222222222", &api.SendMessageRequest{QueueUrl: url, MessageBody: "hi", MessageGroupId: "g"}); !hasCode(err, &api.Error{Code: "AccessDenied"}) {
		t.Errorf("another account's SendMessage: %v, want AccessDenied", err)
	}

	before := map[string]map[string]string{}
	for _, q := range []string{"orders-dlq.fifo", "orders.fifo", "notifications"} {
		before[q] = f.attrs(q)
	}
	f.rec.takeWrites()
	f.clock.advance(time.Minute)
	f.mustApply(example, "orders-dlq.fifo=unchanged", "orders.fifo=unchanged", "notifications=unchanged")
	if w := f.rec.takeWrites(); len(w) != 0 {
		t.Errorf("applying the same file again wrote %v, want nothing", w)
	}
	for q, attrs := range before {
		after := f.attrs(q)
		for k, v := range attrs {
			if k == "ApproximateNumberOfMessages" {
				continue
			}
			if after[k] != v {
				t.Errorf("%s %s changed from %q to %q", q, k, v, after[k])
			}
		}
	}
}

// TestApplyConverges checks that a changed file brings existing queues to
// its values, and only the queues and attributes that differ.
func TestApplyConverges(t *testing.T) {
	f := newFixture(t)
	example := readExample(t)
	f.mustApply(example, "orders-dlq.fifo=created", "orders.fifo=created", "notifications=created")
	created := f.attrs("orders.fifo")["LastModifiedTimestamp"]

	// Changes made through the API, in and out of the file's reach.
	if _, err := f.do(owner, &api.SetQueueAttributesRequest{QueueUrl: "/" + owner + "/notifications",
		Attributes: map[string]string{"DelaySeconds": "0", "MaximumMessageSize": "1024"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.do(owner, &api.TagQueueRequest{QueueUrl: "/" + owner + "/orders.fifo", Tags: map[string]string{"added-by": "api"}}); err != nil {
		t.Fatal(err)
	}

	f.clock.advance(time.Minute)
	changed := strings.Replace(example, "VisibilityTimeout: 30", "VisibilityTimeout: 45", 1)
	changed = strings.Replace(changed, "env: dev", "env: prod", 1)
	changed = strings.Replace(changed, "max_receive_count: 5", "max_receive_count: 7", 1)
	f.rec.takeWrites()
	f.mustApply(changed, "orders-dlq.fifo=unchanged", "orders.fifo=updated", "notifications=updated")
	if w := strings.Join(f.rec.takeWrites(), " "); w != "CreateQueue SetQueueAttributes TagQueue CreateQueue SetQueueAttributes" {
		// CreateQueue is how an existing queue's attributes are compared
		// in the server's terms when their text differs.
		t.Errorf("writes %q", w)
	}
	orders := f.attrs("orders.fifo")
	if orders["VisibilityTimeout"] != "45" || !strings.Contains(orders["RedrivePolicy"], `"maxReceiveCount":7`) {
		t.Errorf("orders.fifo not converged: %v", orders)
	}
	if orders["LastModifiedTimestamp"] == created {
		t.Errorf("orders.fifo LastModifiedTimestamp unchanged (%s) by an update", created)
	}
	if got := f.tags("orders.fifo"); !equalMaps(got, map[string]string{"team": "payments", "env": "prod", "added-by": "api"}) {
		t.Errorf("orders.fifo tags %v: want the file's, and the one added through the API kept", got)
	}
	n := f.attrs("notifications")
	if n["DelaySeconds"] != "5" || n["MaximumMessageSize"] != "1024" {
		t.Errorf("notifications: DelaySeconds %s (want the file's 5), MaximumMessageSize %s (want 1024, not in the file)", n["DelaySeconds"], n["MaximumMessageSize"])
	}
}

// TestApplyCanonicalValues checks that a value written differently from
// the server's form but equal in meaning counts as unchanged, without
// setting the attribute.
func TestApplyCanonicalValues(t *testing.T) {
	f := newFixture(t)
	f.mustApply("queues:\n  - name: q\n    attributes: {VisibilityTimeout: 30}\n", "q=created")
	before := f.attrs("q")["LastModifiedTimestamp"]
	f.clock.advance(time.Minute)
	f.rec.takeWrites()
	f.mustApply("queues:\n  - name: q\n    attributes: {VisibilityTimeout: '030'}\n", "q=unchanged")
	if w := f.rec.takeWrites(); strings.Join(w, " ") != "CreateQueue" {
		t.Errorf("writes %v, want the comparing CreateQueue only", w)
	}
	if after := f.attrs("q")["LastModifiedTimestamp"]; after != before {
		t.Errorf("LastModifiedTimestamp %s -> %s", before, after)
	}
}

// TestApplyAccounts checks queues of other accounts and the default
// account's part.
func TestApplyAccounts(t *testing.T) {
	f := newFixture(t)
	const yaml = "queues:\n  - name: q\n  - name: q\n    account: \"222222222222\"\n    dead_letter: {queue: d, max_receive_count: 2}\n  - name: d\n    account: \"222222222222\"\n"
	file, err := Parse("q.yaml", []byte(yaml), env{}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	res, err := file.Apply(context.Background(), f.rec, "555555555555", "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Names(Created), " "); got != "555555555555/q 222222222222/d 222222222222/q" {
		t.Errorf("created %s", got)
	}
	resp, err := f.do("222222222222", &api.GetQueueAttributesRequest{QueueUrl: "/222222222222/q", AttributeNames: []string{api.AttrRedrivePolicy}})
	if err != nil || !strings.Contains(resp.(*api.GetQueueAttributesResult).Attributes["RedrivePolicy"], ":222222222222:d") {
		t.Errorf("222222222222/q RedrivePolicy: %v %v", resp, err)
	}
}

// TestApplyErrors checks that what the server refuses is reported at the
// line of the queue (or link) concerned.
func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(f *fixture)
		yaml     string
		wantLine int
		want     string
	}{
		{
			name:     "dead-letter queue neither declared nor existing",
			yaml:     "queues:\n  - name: a\n  - name: b\n    dead_letter: {queue: missing, max_receive_count: 3}\n",
			wantLine: 4, want: "dead-letter queue missing is not declared in this file and does not exist",
		},
		{
			name:     "dead-letter queue refusing the source",
			yaml:     "queues:\n  - name: dlq\n    attributes:\n      RedriveAllowPolicy: {redrivePermission: denyAll}\n  - name: src\n    dead_letter: {queue: dlq, max_receive_count: 3}\n",
			wantLine: 5, want: "queue src of account 000000000000: CreateQueue: InvalidParameterValue",
		},
		{
			name: "existing queue refusing the change",
			setup: func(f *fixture) {
				f.mustApply("queues:\n  - name: dlq\n  - name: src\n", "dlq=created", "src=created")
				if _, err := f.do(owner, &api.SetQueueAttributesRequest{QueueUrl: "/" + owner + "/dlq",
					Attributes: map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`}}); err != nil {
					f.t.Fatal(err)
				}
			},
			yaml:     "queues:\n  - name: dlq\n  - name: src\n    dead_letter: {queue: dlq, max_receive_count: 3}\n",
			wantLine: 3, want: "queue src of account 000000000000: SetQueueAttributes: InvalidParameterValue",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			_, err := f.apply(tt.yaml)
			var e *Error
			if !errors.As(err, &e) || e.Line != tt.wantLine || !strings.HasPrefix(err.Error(), "q.yaml:"+itoa(tt.wantLine)+": ") ||
				!strings.Contains(err.Error(), tt.want) {
				t.Errorf("Apply: %v; want an error at q.yaml:%d containing %q", err, tt.wantLine, tt.want)
			}
		})
	}
}

// TestApplyExistingDeadLetterQueue checks a link to a queue the file does
// not declare but the server has.
func TestApplyExistingDeadLetterQueue(t *testing.T) {
	f := newFixture(t)
	if _, err := f.do(owner, &api.CreateQueueRequest{QueueName: "made-elsewhere"}); err != nil {
		t.Fatal(err)
	}
	f.mustApply("queues:\n  - name: a\n    dead_letter: {queue: made-elsewhere, max_receive_count: 3}\n", "a=created")
	if rp := f.attrs("a")["RedrivePolicy"]; !strings.Contains(rp, ":made-elsewhere") {
		t.Errorf("RedrivePolicy %q", rp)
	}
}
