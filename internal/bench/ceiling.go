package bench

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Ceiling is an SQS endpoint that does as little as it can while still
// answering every request the bench makes with a response the AWS SDK
// accepts: it has no engine, no log and no disk. Run against it, the bench
// measures what the client (the SDK, HTTP on loopback, the bench's own
// bookkeeping) can do on this machine — the ceiling any server's figure
// has to be read against.
//
// It speaks the SQS JSON protocol (the one AWS SDK v2 uses). Sent messages
// go into a bounded in-memory queue and ReceiveMessage hands them back, so
// the bench's verification stays meaningful: on a FIFO queue a group is
// locked from the receive of its messages until their delete, as SQS
// does, so that concurrent consumers cannot reorder a group. There is no
// visibility timeout: a message received and never deleted is gone, and a
// FIFO group whose messages are never deleted stays locked — neither
// happens in a bench run.
type Ceiling struct {
	mu     sync.Mutex
	queues map[string]*ceilingQueue
	ids    atomic.Uint64
	limit  int
}

// CeilingQueueLimit is how many messages one ceiling queue holds at most;
// a send beyond it fails (the bench reports a send error) rather than
// letting memory grow without bound when consumers fall behind.
const CeilingQueueLimit = 1 << 20

// NewCeiling returns a ceiling endpoint with no queues.
func NewCeiling() *Ceiling {
	return &Ceiling{queues: map[string]*ceilingQueue{}, limit: CeilingQueueLimit}
}

// ceilingQueue is one queue of the ceiling endpoint.
type ceilingQueue struct {
	fifo bool

	mu     sync.Mutex
	groups map[string]*ceilingGroup
	ready  []*ceilingGroup // groups with messages that may be received, oldest first
	count  int
	wake   chan struct{} // closed (and replaced) when a message arrives
}

// ceilingGroup holds the messages of one group (the one group "" on a
// standard queue, which is never locked).
type ceilingGroup struct {
	name     string
	msgs     []ceilingMsg
	head     int
	inflight int
	inReady  bool
}

type ceilingMsg struct {
	id, body, md5 string
}

// StartCeiling serves a ceiling endpoint on a loopback port until ctx ends
// or stop is called, and returns its URL.
func StartCeiling(ctx context.Context) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("ceiling endpoint: %w", err)
	}
	srv := &http.Server{Handler: NewCeiling(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	var once sync.Once
	stopped := make(chan struct{})
	stop = func() {
		once.Do(func() {
			close(stopped)
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopped:
		}
	}()
	return "http://" + ln.Addr().String(), stop, nil
}

// ceilingError is an SQS JSON-protocol error.
type ceilingError struct {
	status int
	code   string
	msg    string
}

func (e *ceilingError) Error() string { return e.code + ": " + e.msg }

func badRequest(code, format string, args ...any) error {
	return &ceilingError{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

// ServeHTTP implements http.Handler.
func (c *Ceiling) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	if r.Method != http.MethodPost || !ok {
		writeCeilingError(w, badRequest("InvalidAction", "the ceiling endpoint speaks only the SQS JSON protocol"))
		return
	}
	var out any
	var err error
	switch action {
	case "CreateQueue":
		out, err = c.createQueue(r)
	case "GetQueueUrl":
		out, err = c.getQueueURL(r)
	case "DeleteQueue":
		out, err = c.deleteQueue(r)
	case "GetQueueAttributes":
		out, err = c.getQueueAttributes(r)
	case "SendMessage":
		out, err = c.sendMessage(r)
	case "SendMessageBatch":
		out, err = c.sendMessageBatch(r)
	case "ReceiveMessage":
		out, err = c.receiveMessage(r)
	case "DeleteMessage":
		out, err = c.deleteMessage(r)
	case "DeleteMessageBatch":
		out, err = c.deleteMessageBatch(r)
	default:
		err = badRequest("InvalidAction", "the ceiling endpoint does not implement %s", action)
	}
	if err != nil {
		writeCeilingError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(out)
}

func writeCeilingError(w http.ResponseWriter, err error) {
	var ce *ceilingError
	if !errors.As(err, &ce) {
		ce = &ceilingError{status: http.StatusBadRequest, code: "InvalidParameterValue", msg: err.Error()}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Query-Error", "AWS.SimpleQueueService."+ce.code+";Sender")
	w.WriteHeader(ce.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + ce.code, "message": ce.msg})
}

func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 4<<20)).Decode(v); err != nil {
		return badRequest("InvalidParameterValue", "request body: %v", err)
	}
	return nil
}

// queueURL is the URL of queue name on the endpoint r was sent to.
func queueURL(r *http.Request, name string) string {
	return "http://" + r.Host + "/000000000000/" + name
}

func (c *Ceiling) queue(url string) (*ceilingQueue, error) {
	name := url[strings.LastIndexByte(url, '/')+1:]
	c.mu.Lock()
	q := c.queues[name]
	c.mu.Unlock()
	if q == nil {
		return nil, badRequest("QueueDoesNotExist", "queue %q does not exist", name)
	}
	return q, nil
}

func (c *Ceiling) createQueue(r *http.Request) (any, error) {
	var in struct {
		QueueName  string
		Attributes map[string]string
	}
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	if in.QueueName == "" {
		return nil, badRequest("MissingParameter", "QueueName is required")
	}
	fifo := in.Attributes["FifoQueue"] == "true"
	if fifo != strings.HasSuffix(in.QueueName, ".fifo") {
		return nil, badRequest("InvalidParameterValue", "a FIFO queue's name, and only its, ends in .fifo")
	}
	c.mu.Lock()
	if _, ok := c.queues[in.QueueName]; !ok {
		c.queues[in.QueueName] = &ceilingQueue{fifo: fifo, groups: map[string]*ceilingGroup{}, wake: make(chan struct{})}
	}
	c.mu.Unlock()
	return map[string]string{"QueueUrl": queueURL(r, in.QueueName)}, nil
}

func (c *Ceiling) getQueueURL(r *http.Request) (any, error) {
	var in struct{ QueueName string }
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	if _, err := c.queue(in.QueueName); err != nil {
		return nil, err
	}
	return map[string]string{"QueueUrl": queueURL(r, in.QueueName)}, nil
}

func (c *Ceiling) deleteQueue(r *http.Request) (any, error) {
	var in struct{ QueueUrl string }
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	name := in.QueueUrl[strings.LastIndexByte(in.QueueUrl, '/')+1:]
	c.mu.Lock()
	delete(c.queues, name)
	c.mu.Unlock()
	return struct{}{}, nil
}

func (c *Ceiling) getQueueAttributes(r *http.Request) (any, error) {
	var in struct{ QueueUrl string }
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	q, err := c.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	n := q.count
	q.mu.Unlock()
	attrs := map[string]string{"ApproximateNumberOfMessages": strconv.Itoa(n), "VisibilityTimeout": "60"}
	if q.fifo {
		attrs["FifoQueue"] = "true"
	}
	return map[string]any{"Attributes": attrs}, nil
}

type ceilingSendEntry struct {
	Id             string
	MessageBody    string
	MessageGroupId string
}

type ceilingSent struct {
	Id               string `json:",omitempty"`
	MessageId        string
	MD5OfMessageBody string
	SequenceNumber   string `json:",omitempty"`
}

func (c *Ceiling) sendMessage(r *http.Request) (any, error) {
	var in struct {
		QueueUrl string
		ceilingSendEntry
	}
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	q, err := c.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return c.enqueue(q, in.ceilingSendEntry)
}

func (c *Ceiling) sendMessageBatch(r *http.Request) (any, error) {
	var in struct {
		QueueUrl string
		Entries  []ceilingSendEntry
	}
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	q, err := c.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.Entries) == 0 || len(in.Entries) > 10 {
		return nil, badRequest("AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "a batch holds 1 to 10 entries")
	}
	type failed struct {
		Id, Code, Message string
		SenderFault       bool
	}
	out := struct {
		Successful []ceilingSent
		Failed     []failed
	}{Successful: make([]ceilingSent, 0, len(in.Entries)), Failed: []failed{}}
	for _, e := range in.Entries {
		s, err := c.enqueue(q, e)
		if err != nil {
			out.Failed = append(out.Failed, failed{Id: e.Id, Code: "QueueFull", Message: err.Error()})
			continue
		}
		s.Id = e.Id
		out.Successful = append(out.Successful, s)
	}
	return out, nil
}

// enqueue adds one message to q and returns its acknowledgement.
func (c *Ceiling) enqueue(q *ceilingQueue, e ceilingSendEntry) (ceilingSent, error) {
	sum := md5.Sum([]byte(e.MessageBody))
	n := c.ids.Add(1)
	m := ceilingMsg{id: "ceiling-" + strconv.FormatUint(n, 10), body: e.MessageBody, md5: hex.EncodeToString(sum[:])}
	group := ""
	if q.fifo {
		group = e.MessageGroupId
	}
	q.mu.Lock()
	if q.count >= c.limit {
		q.mu.Unlock()
		return ceilingSent{}, badRequest("QueueFull", "the ceiling queue holds at most %d messages", c.limit)
	}
	g := q.groups[group]
	if g == nil {
		g = &ceilingGroup{name: group}
		q.groups[group] = g
	}
	g.msgs = append(g.msgs, m)
	q.count++
	if !g.inReady && g.inflight == 0 {
		g.inReady = true
		q.ready = append(q.ready, g)
	}
	close(q.wake)
	q.wake = make(chan struct{})
	q.mu.Unlock()
	s := ceilingSent{MessageId: m.id, MD5OfMessageBody: m.md5}
	if q.fifo {
		s.SequenceNumber = strconv.FormatUint(n, 10)
	}
	return s, nil
}

func (c *Ceiling) receiveMessage(r *http.Request) (any, error) {
	var in struct {
		QueueUrl            string
		MaxNumberOfMessages int
		WaitTimeSeconds     int
	}
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	q, err := c.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	limit := min(max(in.MaxNumberOfMessages, 1), 10)
	wait := time.Duration(min(max(in.WaitTimeSeconds, 0), 20)) * time.Second
	type message struct {
		MessageId, ReceiptHandle, MD5OfBody, Body string
	}
	var timer *time.Timer
	for {
		q.mu.Lock()
		msgs := make([]message, 0, limit)
		for len(msgs) < limit && len(q.ready) > 0 {
			g := q.ready[0]
			for len(msgs) < limit && g.head < len(g.msgs) {
				m := g.msgs[g.head]
				g.msgs[g.head] = ceilingMsg{}
				g.head++
				q.count--
				msgs = append(msgs, message{MessageId: m.id, ReceiptHandle: g.name + "\x00" + m.id, MD5OfBody: m.md5, Body: m.body})
				if q.fifo {
					g.inflight++
				}
			}
			if g.head == len(g.msgs) {
				g.msgs, g.head = g.msgs[:0], 0
			} else if g.head > 1024 && g.head*2 > len(g.msgs) {
				// A queue that is never quite empty would otherwise keep
				// every message ever sent in its backing array.
				g.msgs = append(g.msgs[:0], g.msgs[g.head:]...)
				g.head = 0
			}
			// A FIFO group leaves the ready list while it has messages in
			// flight; a standard queue's one group leaves it when empty.
			if q.fifo || len(g.msgs) == 0 {
				g.inReady = false
				q.ready = q.ready[1:]
			}
		}
		wake := q.wake
		q.mu.Unlock()
		if len(msgs) > 0 || wait <= 0 {
			return map[string]any{"Messages": msgs}, nil
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-timer.C:
			wait = 0
		case <-r.Context().Done():
			return map[string]any{"Messages": msgs}, nil
		}
	}
}

// deleted releases the FIFO group a receipt handle names.
func (q *ceilingQueue) deleted(handle string) error {
	group, _, ok := strings.Cut(handle, "\x00")
	if !ok {
		return badRequest("ReceiptHandleIsInvalid", "not a ceiling receipt handle")
	}
	if !q.fifo {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	g := q.groups[group]
	if g == nil || g.inflight == 0 {
		return nil
	}
	g.inflight--
	if g.inflight == 0 && g.head < len(g.msgs) && !g.inReady {
		g.inReady = true
		q.ready = append(q.ready, g)
		close(q.wake)
		q.wake = make(chan struct{})
	}
	return nil
}

func (c *Ceiling) deleteMessage(r *http.Request) (any, error) {
	var in struct{ QueueUrl, ReceiptHandle string }
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	q, err := c.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if err := q.deleted(in.ReceiptHandle); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (c *Ceiling) deleteMessageBatch(r *http.Request) (any, error) {
	var in struct {
		QueueUrl string
		Entries  []struct{ Id, ReceiptHandle string }
	}
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	q, err := c.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	type ok struct{ Id string }
	type failed struct {
		Id, Code, Message string
		SenderFault       bool
	}
	out := struct {
		Successful []ok
		Failed     []failed
	}{Successful: []ok{}, Failed: []failed{}}
	for _, e := range in.Entries {
		if err := q.deleted(e.ReceiptHandle); err != nil {
			out.Failed = append(out.Failed, failed{Id: e.Id, Code: "ReceiptHandleIsInvalid", Message: err.Error(), SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, ok{Id: e.Id})
	}
	return out, nil
}
