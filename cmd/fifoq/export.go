package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/server"
)

// queueIOOptions are the flags of "fifoq export" and "fifoq import".
type queueIOOptions struct {
	endpoint, region string
	timeout          time.Duration
	caCert           string
}

// queueIOFlagSet defines the flags of "fifoq export" (export true) or
// "fifoq import" on o.
func queueIOFlagSet(o *queueIOOptions, export bool, stderr io.Writer) *flag.FlagSet {
	name, usage := "fifoq import", `Usage: fifoq import [flags] QUEUE FILE

Sends the messages of FILE ("-": standard input), one JSON object a line as
fifoq export writes them, to QUEUE (a name or a queue URL), in batches of up
to 10 in the file's order, so that each message group keeps its order: the
body, the message attributes and, for a FIFO queue, the group id and the
deduplication id (the exported message's id when it had none). For a
dead-letter queue, export, fix and import is how poison messages are
replayed outside SQS's own redrive.

Flags:
`
	if export {
		name, usage = "fifoq export", `Usage: fifoq export [flags] QUEUE FILE

Writes every message of QUEUE (a name or a queue URL) to FILE ("-":
standard output), one JSON object a line, as a receive of every attribute
renders it (Body, MessageAttributes, Attributes: MessageGroupId,
MessageDeduplicationId, SentTimestamp, ApproximateReceiveCount, ...),
without receiving or changing any of them: receive counts, visibility and
group locks stay as they are.

Flags:
`
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoint, "endpoint", envOr("FIFOQ_ENDPOINT", "http://127.0.0.1:9324"), "SQS endpoint URL of the server (env FIFOQ_ENDPOINT)")
	fs.StringVar(&o.region, "region", envOr("AWS_REGION", "us-east-1"), "region of the request signatures, and of a queue named without one")
	fs.DurationVar(&o.timeout, "timeout", time.Hour, "how long it may take")
	defineCACert(fs, &o.caCert)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), `
Requests are signed (SigV4) with FIFOQ_ACCESS_KEY_ID and FIFOQ_SECRET_ACCESS_KEY,
else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (an import with neither: the key
of AWS_PROFILE). A server without credentials takes them without.
`)
	}
	return fs
}

// exportCmd runs "fifoq export".
func exportCmd(args []string, stdout, stderr io.Writer) int {
	return queueIOCmd(args, true, stdout, stderr)
}

// importCmd runs "fifoq import".
func importCmd(args []string, stdout, stderr io.Writer) int {
	return queueIOCmd(args, false, stdout, stderr)
}

func queueIOCmd(args []string, export bool, stdout, stderr io.Writer) int {
	var o queueIOOptions
	fs := queueIOFlagSet(&o, export, stderr)
	if exit, stop := parseArgs(fs, args, true, stdout, stderr); stop {
		return exit
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	queue, path := fs.Arg(0), fs.Arg(1)
	var n int
	var err error
	if export {
		n, err = exportQueue(ctx, o, queue, path, stdout)
	} else {
		n, err = importQueue(ctx, o, queue, path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), explainTLS(err))
		return 1
	}
	verb := "exported"
	if !export {
		verb = "imported"
	}
	fmt.Fprintf(stderr, "%s: %s %d messages\n", fs.Name(), verb, n)
	return 0
}

// exportedMessage is one line of an export: a message as a receive
// renders it.
type exportedMessage = api.Message

// exportQueue writes queue's messages to path ("-": stdout), and returns
// how many.
func exportQueue(ctx context.Context, o queueIOOptions, queue, path string, stdout io.Writer) (int, error) {
	base := strings.TrimSuffix(o.endpoint, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+server.ExportPath+"?"+url.Values{"QueueUrl": {queue}}.Encode(), nil)
	if err != nil {
		return 0, err
	}
	if cred := cliCredential(); cred.AccessKeyID != "" {
		if err := auth.SignRequest(req, nil, cred, o.region, time.Now()); err != nil {
			return 0, err
		}
	}
	client, err := httpClient(o.caCert)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return 0, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(answer)))
	}
	out, commit, err := openOutput(path, stdout)
	if err != nil {
		return 0, err
	}
	n, err := copyExport(out, resp.Body)
	return n, commit(err)
}

// copyExport copies the message lines of an export from r to w, and
// checks that it ended with the server's mark of a whole export.
func copyExport(w io.Writer, r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	bw := bufio.NewWriterSize(w, 256<<10)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"ExportComplete":`)) {
			return n, bw.Flush()
		}
		bw.Write(line)
		bw.WriteByte('\n')
		n++
	}
	if err := sc.Err(); err != nil {
		return n, err
	}
	return n, errors.New("the export was cut short (no end mark): the server stopped or the connection broke; export again")
}

// openOutput opens path for writing ("-": stdout). commit finishes it: a
// file is written beside its final name and renamed only once whole.
func openOutput(path string, stdout io.Writer) (io.Writer, func(error) error, error) {
	if path == "-" {
		return stdout, func(err error) error { return err }, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, nil, err
	}
	return f, func(err error) error {
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
		}
		return err
	}, nil
}

// importQueue sends the messages of path ("-": stdin) to queue, and
// returns how many.
func importQueue(ctx context.Context, o queueIOOptions, queue, path string) (int, error) {
	// Signed with the key export and backup sign with, so that one shell
	// set up for one works for the other.
	client, err := sqsClient(ctx, strings.TrimSuffix(o.endpoint, "/"), o.region,
		sqsClientOptions{workers: 1, cred: cliCredential(), caFile: o.caCert})
	if err != nil {
		return 0, err
	}
	queueURL := queue
	if !strings.Contains(queue, "/") {
		out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
		if err != nil {
			return 0, err
		}
		queueURL = aws.ToString(out.QueueUrl)
	}
	fifo := api.IsFIFOName(queueURL)
	var in io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var batch []types.SendMessageBatchRequestEntry
	size, sent, line := 0, 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: batch})
		if err != nil {
			return fmt.Errorf("send the messages of lines %d to %d: %w", line-len(batch)+1, line, err)
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return fmt.Errorf("%d of the messages of lines %d to %d were refused, the first: %s %s (%d sent before them)",
				len(out.Failed), line-len(batch)+1, line, aws.ToString(f.Code), aws.ToString(f.Message), sent)
		}
		sent += len(batch)
		batch, size = batch[:0], 0
		return nil
	}
	for sc.Scan() {
		var m exportedMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return sent, fmt.Errorf("line %d: %v", line+1, err)
		}
		e := importEntry(m, len(batch), fifo)
		// A batch holds at most 10 messages and 1 MiB.
		if msgSize := len(m.Body) + attrsSize(m.MessageAttributes); len(batch) == 10 || size+msgSize > 1<<20 {
			if err := flush(); err != nil {
				return sent, err
			}
			e.Id = aws.String("0")
			size = msgSize
		} else {
			size += msgSize
		}
		line++
		batch = append(batch, e)
	}
	if err := sc.Err(); err != nil {
		return sent, err
	}
	return sent, flush()
}

// importEntry is the batch entry that sends m again, as entry i.
func importEntry(m exportedMessage, i int, fifo bool) types.SendMessageBatchRequestEntry {
	e := types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(m.Body)}
	if len(m.MessageAttributes) > 0 {
		e.MessageAttributes = map[string]types.MessageAttributeValue{}
		for k, v := range m.MessageAttributes {
			e.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue,
				BinaryValue: v.BinaryValue, StringListValues: v.StringListValues, BinaryListValues: v.BinaryListValues}
		}
	}
	if th := m.Attributes[api.MsgAttrAWSTraceHeader]; th != "" {
		e.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			api.MsgAttrAWSTraceHeader: {DataType: aws.String("String"), StringValue: aws.String(th)}}
	}
	if g := m.Attributes[api.MsgAttrMessageGroupId]; g != "" {
		e.MessageGroupId = aws.String(g)
	}
	if fifo {
		d := m.Attributes[api.MsgAttrMessageDeduplicationId]
		if d == "" {
			d = m.MessageId
		}
		e.MessageDeduplicationId = aws.String(d)
		if e.MessageGroupId == nil {
			e.MessageGroupId = aws.String("imported")
		}
	}
	return e
}

// attrsSize is the size SQS counts for message attributes.
func attrsSize(attrs map[string]api.MessageAttributeValue) int {
	n := 0
	for k, v := range attrs {
		n += len(k) + len(v.DataType) + len(v.BinaryValue)
		if v.StringValue != nil {
			n += len(*v.StringValue)
		}
	}
	return n
}
