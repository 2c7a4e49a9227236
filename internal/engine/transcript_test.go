package engine

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/fifoq/fifoq/internal/api"
)

// TestTranscripts runs the scripts under testdata/transcripts: each is a
// sequence of commands with the output the engine must give, in the
// cockroachdb/datadriven format. They are the engine's rules written out
// for a reader (testdata/transcripts/README.md is their guide), where the
// table tests state the same rules in Go. After a deliberate change of
// behaviour, `go test ./internal/engine -run Transcripts -rewrite`
// rewrites the expected outputs; read the diff before committing it.
func TestTranscripts(t *testing.T) {
	// The scripts are the .txt files; the directory's README.md is not one.
	paths, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in testdata/transcripts: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			s := newTranscript()
			datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
				return s.run(t, td)
			})
		})
	}
}

// transcript is the state of one script: an engine driven as the server
// drives it (api.Validate, then Apply or Read, with a clock that moves
// only by `advance`), and the short names under which message ids,
// receipt handles and task handles are printed, so that outputs do not
// depend on the random-looking strings the engine derives.
type transcript struct {
	e       *Engine
	now     int64
	entropy uint64
	ids     int // message ids handed out

	names   map[string]string // message id, receipt handle or task handle -> m1, h1, task1
	handles map[string]string // h1 -> receipt handle; task1 -> task handle
	nm, nh  int
	nt      int

	// dedups lists, per queue, the deduplication keys sends created, with
	// the label a dump shows them under, in send order.
	dedups map[string][]dedupLabel
}

type dedupLabel struct {
	key   dedupKey
	label string
}

func newTranscript() *transcript {
	return &transcript{
		e:       New(Config{Region: testRegion}),
		now:     t0,
		entropy: 0x1234,
		names:   map[string]string{},
		handles: map[string]string{},
		dedups:  map[string][]dedupLabel{},
	}
}

// rel prints a Unix ns time as its distance from the script's start.
func rel(ns int64) string { return "+" + time.Duration(ns-t0).String() }

// relMillis prints a Unix ms time (as results carry them) like rel.
func relMillis(ms int64) string { return rel(ms * int64(time.Millisecond)) }

// msgName returns the short name of a message id, naming it on first sight.
func (s *transcript) msgName(id string) string {
	if n, ok := s.names[id]; ok {
		return n
	}
	s.nm++
	n := "m" + strconv.Itoa(s.nm)
	s.names[id] = n
	return n
}

// handleName returns the short name of a receipt handle; a receive that
// returns a handle seen before (a retried receive attempt) shows its name.
func (s *transcript) handleName(h string) string {
	return s.handleNamed(h, "h", &s.nh)
}

// taskName returns the short name of a move task handle (task1, ...).
func (s *transcript) taskName(h string) string { return s.handleNamed(h, "task", &s.nt) }

// handleNamed names handle h prefix+N on first sight, counting in *n, and
// lets scripts give the name back for it (handle).
func (s *transcript) handleNamed(h, prefix string, n *int) string {
	if name, ok := s.names[h]; ok {
		return name
	}
	*n++
	name := prefix + strconv.Itoa(*n)
	s.names[h], s.handles[name] = name, h
	return name
}

// handle resolves a handle name (h1, task1) a script gives; any other
// string is passed as it is, to show how the engine answers a bad handle.
func (s *transcript) handle(name string) string {
	if h, ok := s.handles[name]; ok {
		return h
	}
	return name
}

func queueKey(name string) api.QueueKey { return api.QueueKey{Account: testAccount, Name: name} }

func arn(name string) string { return queueKey(name).ARN(testRegion) }

// do runs one request as the server would: validated, then read or
// applied as one command with the current time, fresh message ids and
// entropy.
func (s *transcript) do(q string, req api.Request) (api.Response, error) {
	internal := false
	switch req.(type) {
	case *TickRequest, *HousekeepRequest:
		internal = true // the server's own commands, which no client sends
	}
	if !internal {
		if err := api.Validate(req); err != nil {
			return nil, err
		}
	}
	ids := messageIDs(req, func() string {
		// Canonical UUIDs, as the server makes them, so the engine stores
		// them in their compact form; scripts see them as m1, m2, ...
		s.ids++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.ids)
	})
	s.entropy = mix64(s.entropy)
	cmd := &Command{Time: s.now, Caller: testAccount, Request: req, MessageIDs: ids, Entropy: s.entropy}
	if q != "" {
		cmd.Queue = queueKey(q)
	}
	if !internal && req.Action().ReadOnly() {
		return s.e.Read(cmd)
	}
	return s.e.Apply(cmd)
}

// errText prints an error as a script shows it, with the receipt and
// task handles it quotes replaced by their short names.
func (s *transcript) errText(err error) string {
	msg := err.Error()
	var ae *api.Error
	if errors.As(err, &ae) {
		msg = ae.Code + ": " + ae.Message
	}
	for name, h := range s.handles {
		msg = strings.ReplaceAll(msg, h, name)
	}
	return "error: " + msg
}

// scriptCommands are the commands a transcript script may give, each run
// by a method of its own.
var scriptCommands = map[string]func(*transcript, *scriptCmd) string{
	"advance":          (*transcript).cmdAdvance,
	"create":           (*transcript).cmdCreate,
	"delete-queue":     (*transcript).cmdDeleteQueue,
	"set-attrs":        (*transcript).cmdSetAttrs,
	"get-attrs":        (*transcript).cmdGetAttrs,
	"send":             (*transcript).cmdSend,
	"send-batch":       (*transcript).cmdSendBatch,
	"receive":          (*transcript).cmdReceive,
	"outlook":          (*transcript).cmdOutlook,
	"delete":           (*transcript).cmdDelete,
	"delete-batch":     (*transcript).cmdDeleteBatch,
	"visibility":       (*transcript).cmdVisibility,
	"visibility-batch": (*transcript).cmdVisibilityBatch,
	"purge":            (*transcript).cmdPurge,
	"tick":             (*transcript).cmdTick,
	"housekeep":        (*transcript).cmdHousekeep,
	"move-start":       (*transcript).cmdMoveStart,
	"move-list":        (*transcript).cmdMoveList,
	"move-cancel":      (*transcript).cmdMoveCancel,
	"dlq-sources":      (*transcript).cmdDlqSources,
	"dump":             (*transcript).cmdDump,
}

// scriptCmd is one command of a script, with readers of its arguments.
type scriptCmd struct {
	t  *testing.T
	td *datadriven.TestData
	q  string // the q argument: the queue the command acts on
}

// arg returns the argument key's values, joined by commas.
func (c *scriptCmd) arg(key string) (string, bool) {
	a, ok := c.td.Arg(key)
	if !ok {
		return "", false
	}
	return strings.Join(a.Vals, ","), true
}

// str returns the argument key, or "".
func (c *scriptCmd) str(key string) string {
	v, _ := c.arg(key)
	return v
}

// intArg returns the argument key as a number, or nil if it is absent.
func (c *scriptCmd) intArg(key string) *int {
	v, ok := c.arg(key)
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		c.td.Fatalf(c.t, "%s=%s: %v", key, v, err)
	}
	return &n
}

// run runs one command of a script and returns its output.
func (s *transcript) run(t *testing.T, td *datadriven.TestData) string {
	c := &scriptCmd{t: t, td: td}
	c.q = c.str("q")
	cmd, ok := scriptCommands[td.Cmd]
	if !ok {
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	return cmd(s, c)
}

// cmdAdvance runs a script's advance command.
func (s *transcript) cmdAdvance(c *scriptCmd) string {
	t, td := c.t, c.td
	if len(td.CmdArgs) != 1 {
		td.Fatalf(t, "advance takes one duration")
	}
	d, err := time.ParseDuration(td.CmdArgs[0].Key)
	if err != nil || d < 0 {
		td.Fatalf(t, "advance %s: %v", td.CmdArgs[0].Key, err)
	}
	s.now += int64(d)
	return "now " + rel(s.now) + "\n"
}

// cmdCreate runs a script's create command.
func (s *transcript) cmdCreate(c *scriptCmd) string {
	t, td, str := c.t, c.td, c.str
	attrs := s.queueAttrs(t, td)
	name := str("name")
	if _, ok := attrs[api.AttrFifoQueue]; !ok && strings.HasSuffix(name, ".fifo") {
		attrs[api.AttrFifoQueue] = "true" // a script's shorthand
	}
	resp, err := s.do("", &api.CreateQueueRequest{QueueName: name, Attributes: attrs})
	if err != nil {
		return s.errText(err) + "\n"
	}
	return resp.(*api.CreateQueueResult).QueueUrl + "\n"
}

// cmdDeleteQueue runs a script's delete-queue command.
func (s *transcript) cmdDeleteQueue(c *scriptCmd) string {
	q := c.q
	return s.okOrErr(s.do(q, &api.DeleteQueueRequest{QueueUrl: queueKey(q).Path()}))
}

// cmdSetAttrs runs a script's set-attrs command.
func (s *transcript) cmdSetAttrs(c *scriptCmd) string {
	t, td, q := c.t, c.td, c.q
	return s.okOrErr(s.do(q, &api.SetQueueAttributesRequest{QueueUrl: queueKey(q).Path(), Attributes: s.queueAttrs(t, td)}))
}

// cmdGetAttrs runs a script's get-attrs command.
func (s *transcript) cmdGetAttrs(c *scriptCmd) string {
	td, q := c.td, c.q
	names := []string{api.AttrAll}
	if a, ok := td.Arg("names"); ok {
		names = a.Vals
	}
	resp, err := s.do(q, &api.GetQueueAttributesRequest{QueueUrl: queueKey(q).Path(), AttributeNames: names})
	if err != nil {
		return s.errText(err) + "\n"
	}
	attrs := resp.(*api.GetQueueAttributesResult).Attributes
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[k]
		if k == api.AttrCreatedTimestamp || k == api.AttrLastModifiedTimestamp {
			sec, _ := strconv.ParseInt(v, 10, 64)
			v = rel(sec * int64(time.Second))
		}
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	return b.String()
}

// cmdSend runs a script's send command.
func (s *transcript) cmdSend(c *scriptCmd) string {
	q, arg, str, intArg := c.q, c.arg, c.str, c.intArg
	req := &api.SendMessageRequest{QueueUrl: queueKey(q).Path(), MessageBody: str("body"), DelaySeconds: intArg("delay")}
	req.MessageGroupId, req.MessageGroupIdSet = arg("group")
	req.MessageDeduplicationId, req.MessageDeduplicationIdSet = arg("dedup")
	resp, err := s.do(q, req)
	if err != nil {
		return s.errText(err) + "\n"
	}
	r := resp.(*api.SendMessageResult)
	s.noteDedup(q, req.MessageBody, req.MessageGroupId, req.MessageDeduplicationId)
	return s.msgName(r.MessageId) + "\n"
}

// cmdSendBatch runs a script's send-batch command.
func (s *transcript) cmdSendBatch(c *scriptCmd) string {
	t, td, q := c.t, c.td, c.q
	req := &api.SendMessageBatchRequest{QueueUrl: queueKey(q).Path()}
	for _, line := range inputLines(td) {
		en := lineArgs(t, td, line)
		e := api.SendMessageBatchRequestEntry{Id: en["id"], MessageBody: en["body"]}
		e.MessageGroupId, e.MessageGroupIdSet = en["group"], hasKey(en, "group")
		e.MessageDeduplicationId, e.MessageDeduplicationIdSet = en["dedup"], hasKey(en, "dedup")
		if d, ok := en["delay"]; ok {
			n, err := strconv.Atoi(d)
			if err != nil {
				td.Fatalf(t, "delay=%s: %v", d, err)
			}
			e.DelaySeconds = &n
		}
		req.Entries = append(req.Entries, e)
	}
	resp, err := s.do(q, req)
	if err != nil {
		return s.errText(err) + "\n"
	}
	r := resp.(*api.SendMessageBatchResult)
	var b strings.Builder
	for _, ok := range r.Successful {
		fmt.Fprintf(&b, "%s: %s\n", ok.Id, s.msgName(ok.MessageId))
		for _, e := range req.Entries {
			if e.Id == ok.Id {
				s.noteDedup(q, e.MessageBody, e.MessageGroupId, e.MessageDeduplicationId)
			}
		}
	}
	for _, f := range r.Failed {
		fmt.Fprintf(&b, "%s: %s\n", f.Id, s.errText(&api.Error{Code: f.Code, Message: f.Message}))
	}
	return b.String()
}

// cmdReceive runs a script's receive command.
func (s *transcript) cmdReceive(c *scriptCmd) string {
	td, q, str, intArg := c.td, c.q, c.str, c.intArg
	req := &api.ReceiveMessageRequest{
		QueueUrl:                    queueKey(q).Path(),
		MaxNumberOfMessages:         intArg("max"),
		VisibilityTimeout:           intArg("vis"),
		ReceiveRequestAttemptId:     str("attempt"),
		MessageSystemAttributeNames: []string{api.MsgAttrAll},
	}
	if err := api.Validate(req); err != nil {
		return s.errText(err) + "\n"
	}
	// As the server does: a receive that would find nothing is answered
	// without a command, so it changes nothing. With `direct` the
	// command is applied anyway, to show that it would find nothing.
	if exists, take := s.e.ReceiveOutlook(queueKey(q), s.now, req.ReceiveRequestAttemptId); exists && !take && !td.HasArg("direct") {
		return "(no messages)\n"
	}
	resp, err := s.do(q, req)
	if err != nil {
		return s.errText(err) + "\n"
	}
	msgs := resp.(*api.ReceiveMessageResult).Messages
	if len(msgs) == 0 {
		return "(no messages)\n"
	}
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(s.received(m, td.HasArg("attrs")))
	}
	return b.String()
}

// cmdOutlook runs a script's outlook command.
func (s *transcript) cmdOutlook(c *scriptCmd) string {
	q, str := c.q, c.str
	exists, take := s.e.ReceiveOutlook(queueKey(q), s.now, str("attempt"))
	return fmt.Sprintf("exists=%t take=%t\n", exists, take)
}

// cmdDelete runs a script's delete command.
func (s *transcript) cmdDelete(c *scriptCmd) string {
	q, str := c.q, c.str
	return s.okOrErr(s.do(q, &api.DeleteMessageRequest{QueueUrl: queueKey(q).Path(), ReceiptHandle: s.handle(str("h"))}))
}

// cmdDeleteBatch runs a script's delete-batch command.
func (s *transcript) cmdDeleteBatch(c *scriptCmd) string {
	t, td, q := c.t, c.td, c.q
	req := &api.DeleteMessageBatchRequest{QueueUrl: queueKey(q).Path()}
	for _, line := range inputLines(td) {
		en := lineArgs(t, td, line)
		req.Entries = append(req.Entries, api.DeleteMessageBatchRequestEntry{Id: en["id"], ReceiptHandle: s.handle(en["h"])})
	}
	resp, err := s.do(q, req)
	if err != nil {
		return s.errText(err) + "\n"
	}
	r := resp.(*api.DeleteMessageBatchResult)
	return s.batchResult(r.Successful, r.Failed)
}

// cmdVisibility runs a script's visibility command.
func (s *transcript) cmdVisibility(c *scriptCmd) string {
	q, str, intArg := c.q, c.str, c.intArg
	return s.okOrErr(s.do(q, &api.ChangeMessageVisibilityRequest{QueueUrl: queueKey(q).Path(), ReceiptHandle: s.handle(str("h")), VisibilityTimeout: intArg("timeout")}))
}

// cmdVisibilityBatch runs a script's visibility-batch command.
func (s *transcript) cmdVisibilityBatch(c *scriptCmd) string {
	t, td, q := c.t, c.td, c.q
	req := &api.ChangeMessageVisibilityBatchRequest{QueueUrl: queueKey(q).Path()}
	for _, line := range inputLines(td) {
		en := lineArgs(t, td, line)
		n, err := strconv.Atoi(en["timeout"])
		if err != nil {
			td.Fatalf(t, "timeout=%s: %v", en["timeout"], err)
		}
		req.Entries = append(req.Entries, api.ChangeMessageVisibilityBatchRequestEntry{Id: en["id"], ReceiptHandle: s.handle(en["h"]), VisibilityTimeout: &n})
	}
	resp, err := s.do(q, req)
	if err != nil {
		return s.errText(err) + "\n"
	}
	r := resp.(*api.ChangeMessageVisibilityBatchResult)
	return s.batchResult(r.Successful, r.Failed)
}

// cmdPurge runs a script's purge command.
func (s *transcript) cmdPurge(c *scriptCmd) string {
	q := c.q
	return s.okOrErr(s.do(q, &api.PurgeQueueRequest{QueueUrl: queueKey(q).Path()}))
}

// cmdTick runs a script's tick command.
func (s *transcript) cmdTick(c *scriptCmd) string {
	intArg := c.intArg
	moves := DefaultTickMoves
	if n := intArg("moves"); n != nil {
		moves = *n
	}
	resp, err := s.do("", &TickRequest{Moves: moves})
	if err != nil {
		return s.errText(err) + "\n"
	}
	return fmt.Sprintf("behind=%t\n", resp.(*TickResult).Behind)
}

// cmdHousekeep runs a script's housekeep command.
func (s *transcript) cmdHousekeep(c *scriptCmd) string {
	intArg := c.intArg
	limit := DefaultHousekeepLimit
	if n := intArg("limit"); n != nil {
		limit = *n
	}
	resp, err := s.do("", &HousekeepRequest{Limit: limit})
	if err != nil {
		return s.errText(err) + "\n"
	}
	r := resp.(*HousekeepResult)
	return fmt.Sprintf("steps=%d more=%t\n", r.Steps, r.More)
}

// cmdMoveStart runs a script's move-start command.
func (s *transcript) cmdMoveStart(c *scriptCmd) string {
	arg, str, intArg := c.arg, c.str, c.intArg
	req := &api.StartMessageMoveTaskRequest{SourceArn: arn(str("src")), MaxNumberOfMessagesPerSecond: intArg("rate")}
	if d, ok := arg("dest"); ok {
		req.DestinationArn = arn(d)
	}
	resp, err := s.do("", req)
	if err != nil {
		return s.errText(err) + "\n"
	}
	return s.taskName(resp.(*api.StartMessageMoveTaskResult).TaskHandle) + "\n"
}

// cmdMoveList runs a script's move-list command.
func (s *transcript) cmdMoveList(c *scriptCmd) string {
	str, intArg := c.str, c.intArg
	resp, err := s.do("", &api.ListMessageMoveTasksRequest{SourceArn: arn(str("src")), MaxResults: intArg("max")})
	if err != nil {
		return s.errText(err) + "\n"
	}
	var b strings.Builder
	for _, r := range resp.(*api.ListMessageMoveTasksResult).Results {
		name := "-"
		if r.TaskHandle != "" {
			name = s.taskName(r.TaskHandle)
		}
		fmt.Fprintf(&b, "%s %s moved=%d", name, r.Status, r.ApproximateNumberOfMessagesMoved)
		if r.ApproximateNumberOfMessagesToMove != nil {
			fmt.Fprintf(&b, " to-move=%d", *r.ApproximateNumberOfMessagesToMove)
		}
		if r.DestinationArn != "" {
			fmt.Fprintf(&b, " dest=%s", r.DestinationArn[strings.LastIndexByte(r.DestinationArn, ':')+1:])
		}
		if r.MaxNumberOfMessagesPerSecond != nil {
			fmt.Fprintf(&b, " rate=%d", *r.MaxNumberOfMessagesPerSecond)
		}
		if r.FailureReason != "" {
			fmt.Fprintf(&b, " failure=%q", r.FailureReason)
		}
		fmt.Fprintf(&b, " started=%s\n", relMillis(r.StartedTimestamp))
	}
	if b.Len() == 0 {
		return "(no tasks)\n"
	}
	return b.String()
}

// cmdMoveCancel runs a script's move-cancel command.
func (s *transcript) cmdMoveCancel(c *scriptCmd) string {
	str := c.str
	resp, err := s.do("", &api.CancelMessageMoveTaskRequest{TaskHandle: s.handle(str("task"))})
	if err != nil {
		return s.errText(err) + "\n"
	}
	return fmt.Sprintf("moved=%d\n", resp.(*api.CancelMessageMoveTaskResult).ApproximateNumberOfMessagesMoved)
}

// cmdDlqSources runs a script's dlq-sources command.
func (s *transcript) cmdDlqSources(c *scriptCmd) string {
	q := c.q
	resp, err := s.do(q, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: queueKey(q).Path()})
	if err != nil {
		return s.errText(err) + "\n"
	}
	urls := resp.(*api.ListDeadLetterSourceQueuesResult).QueueUrls
	if len(urls) == 0 {
		return "(none)\n"
	}
	return strings.Join(urls, "\n") + "\n"
}

// cmdDump runs a script's dump command.
func (s *transcript) cmdDump(c *scriptCmd) string {
	t, td, q := c.t, c.td, c.q
	return s.dump(t, td, q)
}

// queueAttrs reads a create or set-attrs command's attributes: attrs=(K=V,
// ...), redrive=(DLQ, maxReceiveCount) for a RedrivePolicy naming queue
// DLQ, and any K=V line of the input (for values with commas or spaces).
func (s *transcript) queueAttrs(t *testing.T, td *datadriven.TestData) map[string]string {
	attrs := map[string]string{}
	put := func(kv string) {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			td.Fatalf(t, "attribute %q is not K=V", kv)
		}
		attrs[k] = v
	}
	if a, ok := td.Arg("attrs"); ok {
		for _, kv := range a.Vals {
			put(kv)
		}
	}
	if a, ok := td.Arg("redrive"); ok {
		if len(a.Vals) != 2 {
			td.Fatalf(t, "redrive=(DLQ, maxReceiveCount)")
		}
		attrs[api.AttrRedrivePolicy] = fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":%s}`, arn(a.Vals[0]), a.Vals[1])
	}
	for _, line := range inputLines(td) {
		put(line)
	}
	return attrs
}

// noteDedup remembers the deduplication key a FIFO send used, as send.go
// computes it, so that dump can say which records the queue holds.
func (s *transcript) noteDedup(q, body, group, id string) {
	qu := s.e.queues[queueKey(q)]
	if qu == nil || !qu.fifo {
		return
	}
	label := id
	if id == "" {
		id = api.ContentDeduplicationID(body)
		label = "content(" + body + ")"
	}
	scopeGroup := ""
	if qu.dedupScope(s.now) == scopeMessageGroup {
		scopeGroup = group
		label = group + "/" + label
	}
	key := dedupKeyOf(scopeGroup, id)
	for _, d := range s.dedups[q] {
		if d.key == key {
			return
		}
	}
	s.dedups[q] = append(s.dedups[q], dedupLabel{key: key, label: label})
}

// received prints one received message: its name, handle, body and group,
// its receive count and, for a message that came through a dead-letter
// queue, its source; with all=true every system attribute.
func (s *transcript) received(m api.Message, all bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s body=%s", s.msgName(m.MessageId), s.handleName(m.ReceiptHandle), m.Body)
	if g := m.Attributes[api.MsgAttrMessageGroupId]; g != "" {
		fmt.Fprintf(&b, " group=%s", g)
	}
	fmt.Fprintf(&b, " receives=%s", m.Attributes[api.MsgAttrApproximateReceiveCount])
	if src := m.Attributes[api.MsgAttrDeadLetterQueueSourceArn]; src != "" {
		fmt.Fprintf(&b, " dlq-source=%s", src[strings.LastIndexByte(src, ':')+1:])
	}
	b.WriteByte('\n')
	if all {
		for _, k := range slices.Sorted(maps.Keys(m.Attributes)) {
			v := m.Attributes[k]
			switch k {
			case api.MsgAttrSentTimestamp, api.MsgAttrApproximateFirstReceiveTimestamp:
				ms, _ := strconv.ParseInt(v, 10, 64)
				v = relMillis(ms)
			case api.MsgAttrSequenceNumber:
				continue // derived from the time; shown by order instead
			}
			fmt.Fprintf(&b, "  %s=%s\n", k, v)
		}
	}
	return b.String()
}

// dump prints what the engine's inspection functions tell of queue q now:
// the counts GetQueueAttributes gives, the groups in the order receives
// serve them (FIFO) or the fair-queue tenants, every stored message in
// retention order with its state, the deduplication and receive attempt
// records held (listed with the argument `dedup`), and when the queue
// next has a timer due.
func (s *transcript) dump(t *testing.T, td *datadriven.TestData, q string) string {
	k := queueKey(q)
	st, ok := s.e.QueueStats(k, s.now)
	if !ok {
		return "no such queue\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "counts: visible=%d inflight=%d delayed=%d\n", st.Visible, st.NotVisible, st.Delayed)

	page, _ := s.e.Groups(k, s.now, GroupsOptions{Limit: MaxInspectGroups})
	switch {
	case page.Total == 0:
	case page.FIFO:
		fmt.Fprintf(&b, "groups (receive order, %d held by a receive):\n", page.InFlight)
	default:
		// Groups reports a standard queue's tenants as of the last command
		// that touched the queue, unlike the counts above (inspect.go,
		// tenantGroups): the heading says so.
		b.WriteString("tenants (as of the last command on the queue):\n")
	}
	for _, g := range page.Groups {
		id := g.ID
		if id == "" && !page.FIFO {
			id = `""`
		}
		fmt.Fprintf(&b, "  %s: visible=%d inflight=%d delayed=%d", id, g.Visible, g.InFlight, g.Delayed)
		if o := g.Owner; o != nil {
			fmt.Fprintf(&b, " held-by=%s until %s", s.handleName(o.ReceiptHandle), rel(o.VisibleAt))
			if o.AttemptID != "" {
				fmt.Fprintf(&b, " attempt=%s", o.AttemptID)
			}
		}
		b.WriteByte('\n')
	}

	msgs, _ := s.e.Peek(k, s.now, PeekOptions{Limit: MaxPeekMessages})
	if len(msgs) > 0 {
		b.WriteString("messages (retention order):\n")
	}
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %s %s body=%s", s.msgName(m.MessageID), m.State, m.Body)
		if m.GroupID != "" {
			fmt.Fprintf(&b, " group=%s", m.GroupID)
		}
		fmt.Fprintf(&b, " receives=%d", m.ReceiveCount)
		if m.VisibleAt != 0 {
			fmt.Fprintf(&b, " until %s", rel(m.VisibleAt))
		}
		if m.EnqueuedAt != m.SentAt {
			fmt.Fprintf(&b, " enqueued %s", rel(m.EnqueuedAt))
		}
		b.WriteByte('\n')
	}

	// The records are read from the queue's fields directly: no
	// inspection function lists them, and their lifetime (kept until
	// dropped, which may be later than their expiry) is what a script
	// means to show.
	qu := s.e.queues[k]
	if qu.fifo {
		fmt.Fprintf(&b, "dedup records: %d\n", qu.dedup.Len())
		for _, d := range s.dedups[q] {
			if !td.HasArg("dedup") {
				break // listed only when asked: most scripts are not about them
			}
			r := qu.dedup.get(d.key)
			if r == nil {
				continue
			}
			fmt.Fprintf(&b, "  %s -> %s sent %s", d.label, s.msgName(qu.dedup.messageID(r).String()), rel(r.at))
			if s.now-r.at >= int64(api.DeduplicationInterval) {
				b.WriteString(" (expired, not yet dropped)")
			}
			b.WriteByte('\n')
		}
		if len(qu.attempts) > 0 {
			fmt.Fprintf(&b, "attempt records: %s\n", strings.Join(slices.Sorted(maps.Keys(qu.attempts)), " "))
		}
	}
	if at, ok := s.e.NextWake(k, s.now); ok {
		fmt.Fprintf(&b, "next wake: %s\n", rel(at))
	}
	return b.String()
}

func (s *transcript) okOrErr(_ api.Response, err error) string {
	if err != nil {
		return s.errText(err) + "\n"
	}
	return "ok\n"
}

func (s *transcript) batchResult(ok []api.BatchResultEntry, failed []api.BatchResultErrorEntry) string {
	var b strings.Builder
	for _, e := range ok {
		fmt.Fprintf(&b, "%s: ok\n", e.Id)
	}
	for _, f := range failed {
		fmt.Fprintf(&b, "%s: %s\n", f.Id, s.errText(&api.Error{Code: f.Code, Message: f.Message}))
	}
	return b.String()
}

// inputLines returns the non-empty lines between a command and its ----.
func inputLines(td *datadriven.TestData) []string {
	var out []string
	for _, l := range strings.Split(td.Input, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// lineArgs parses one input line of key=value pairs, as a command line is.
func lineArgs(t *testing.T, td *datadriven.TestData, line string) map[string]string {
	_, args, err := datadriven.ParseLine("entry " + line)
	if err != nil {
		td.Fatalf(t, "%s: %v", line, err)
	}
	out := map[string]string{}
	for _, a := range args {
		out[a.Key] = strings.Join(a.Vals, ",")
	}
	return out
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
