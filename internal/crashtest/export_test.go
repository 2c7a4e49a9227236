package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestExportImportRoundTrip exports a FIFO queue of several groups (one
// held by a receive) and a standard queue with string and binary
// attributes with `fifoq export`, and imports each into a new queue with
// `fifoq import`: the same bodies and attributes arrive, each FIFO group
// in its order, and the sources are unchanged.
func TestExportImportRoundTrip(t *testing.T) {
	addr := freeAddr(t)
	srv := launch(t, nil, "serve", "--listen", addr, "--data-dir", t.TempDir())
	client := newClient(addr)
	ctx := context.Background()
	srv.waitReady(t, func() error { _, err := client.ListQueues(ctx, &sqs.ListQueuesInput{}); return err })

	fifo := mustQueue(t, client, "src.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "600"})
	std := mustQueue(t, client, "src-std", nil)
	held := fillExportSources(t, client, fifo, std)

	dir := t.TempDir()
	for _, c := range []struct{ name, dst string }{{"src.fifo", "dst.fifo"}, {"src-std", "dst-std"}} {
		checkExportImport(t, client, addr, dir, c.name, c.dst)
	}
	// The sources are unchanged: the held message is still the only one
	// in flight, with one receive.
	if n := attrOf(t, client, fifo, "ApproximateNumberOfMessagesNotVisible"); n != 1 {
		t.Fatalf("after the export, %d messages of the FIFO queue are in flight, want 1", n)
	}
	if n := countMessages(t, client, std); n != 20 {
		t.Fatalf("after the export, the standard queue holds %d messages, want 20", n)
	}
	lines := readLines(t, filepath.Join(dir, "src.fifo.jsonl"))
	for _, l := range lines {
		want := "0"
		if l.MessageId == aws.ToString(held.Messages[0].MessageId) {
			want = "1"
		}
		if l.Attributes["ApproximateReceiveCount"] != want {
			t.Fatalf("exported %q with receive count %s, want %s", l.Body, l.Attributes["ApproximateReceiveCount"], want)
		}
	}
}

// exportAttrs are the message attributes of message i of
// TestExportImportRoundTrip's sources: a Number and a custom Binary type
// whose value holds a zero byte, 0xff and a newline.
func exportAttrs(i int) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		"n":   {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(i))},
		"bin": {DataType: aws.String("Binary.raw"), BinaryValue: []byte{byte(i), 0, 0xff, '\n'}},
	}
}

// fillExportSources fills the queues TestExportImportRoundTrip exports: 30
// messages in three groups of the FIFO queue at fifo and 20 in the
// standard queue at std (bodies with a newline, quotes and a non-ASCII
// letter; the last delayed), each with exportAttrs; then it receives one
// FIFO message, which it returns held.
func fillExportSources(t *testing.T, client *sqs.Client, fifo, std string) *sqs.ReceiveMessageOutput {
	t.Helper()
	ctx := context.Background()
	for i := range 30 {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("order " + strconv.Itoa(i)),
			MessageGroupId: aws.String("g" + strconv.Itoa(i%3)), MessageDeduplicationId: aws.String("d" + strconv.Itoa(i)),
			MessageAttributes: exportAttrs(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		in := &sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("event\n\"" + strconv.Itoa(i) + "\" é"), MessageAttributes: exportAttrs(i)}
		if i == 19 {
			in.DelaySeconds = 600
		}
		if _, err := client.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	held, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &fifo, MaxNumberOfMessages: 1})
	if err != nil || len(held.Messages) != 1 {
		t.Fatalf("receive: %v %v", held, err)
	}
	return held
}

// runFifoq runs the fifoq command with args against the server at addr
// and fails t unless it exits 0 within a minute.
func runFifoq(t *testing.T, addr string, args ...string) {
	t.Helper()
	p := launch(t, []string{"FIFOQ_ENDPOINT=http://" + addr}, args...)
	if !p.exited(time.Minute) || p.exitCode() != 0 {
		t.Fatalf("fifoq %v: exit %d; output:\n%s", args, p.exitCode(), p.out)
	}
}

// checkExportImport exports the source queue called name into dir with
// fifoq export, imports the file into a new queue called dstName with
// fifoq import, and checks that what arrives there is what was exported:
// bodies, attributes, and each group's order.
func checkExportImport(t *testing.T, client *sqs.Client, addr, dir, name, dstName string) {
	t.Helper()
	ctx := context.Background()
	file := filepath.Join(dir, name+".jsonl")
	runFifoq(t, addr, "export", name, file)
	lines := readLines(t, file)
	wantN := 30
	if name == "src-std" {
		wantN = 20
	}
	if len(lines) != wantN {
		t.Fatalf("export of %s: %d lines, want %d", name, len(lines), wantN)
	}
	dstAttrs := map[string]string{}
	if name == "src.fifo" {
		dstAttrs["FifoQueue"] = "true"
	}
	dst := mustQueue(t, client, dstName, dstAttrs)
	runFifoq(t, addr, "import", dst, file)

	var got []types.Message
	for len(got) < wantN {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &dst, MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) == 0 {
			t.Fatalf("receive from %s after %d: %v", dstName, len(got), err)
		}
		for _, m := range out.Messages {
			got = append(got, m)
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &dst, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	byBody := map[string]exported{}
	order := map[string][]string{}
	for _, l := range lines {
		byBody[l.Body] = l
		order[l.Attributes["MessageGroupId"]] = append(order[l.Attributes["MessageGroupId"]], l.Body)
	}
	gotOrder := map[string][]string{}
	for _, m := range got {
		e, ok := byBody[aws.ToString(m.Body)]
		if !ok {
			t.Fatalf("%s received %q, which was not exported", dstName, aws.ToString(m.Body))
		}
		if aws.ToString(m.MD5OfMessageAttributes) != e.MD5OfMessageAttributes {
			t.Fatalf("%s: the attributes of %q changed: %v", dstName, e.Body, m.MessageAttributes)
		}
		gotOrder[m.Attributes["MessageGroupId"]] = append(gotOrder[m.Attributes["MessageGroupId"]], aws.ToString(m.Body))
	}
	if name == "src.fifo" {
		for g, bodies := range order {
			if !slices.Equal(gotOrder[g], bodies) {
				t.Fatalf("group %s arrived as %v, was exported as %v", g, gotOrder[g], bodies)
			}
		}
	}
}

// exported is one line of an export.
type exported struct {
	MessageId, Body, MD5OfMessageAttributes string
	Attributes                              map[string]string
}

func readLines(t *testing.T, path string) []exported {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []exported
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e exported
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		out = append(out, e)
	}
	return out
}

func attrOf(t *testing.T, c *sqs.Client, q, name string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &q,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeName(name)}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out.Attributes[name])
	return n
}
