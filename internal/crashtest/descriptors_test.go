package crashtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/testbin"
)

// TestBacklogOfManyBodyFilesFewDescriptors runs the server with 256 file
// descriptors (`ulimit -n 256`, as a small container or an old init system
// gives) and body files of 64 KiB, and queues 48 MB of 16 KB bodies: about
// 1,000 body files, all live. Every body must come back, and the server
// must still run. The body store once kept every file open: it ran out of
// descriptors after about 200 files, a storage fault that stopped the
// server.
//
// The queue is FIFO with a deduplication id a message, and the client
// retries as the SDK does by default: an answer lost on the way (which the
// SDK's single attempts of the other crash tests see now and then) is
// retried without a duplicate, and a receive whose answer is lost gives
// its messages back after their visibility timeout.
func TestBacklogOfManyBodyFilesFewDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	testbin.Track(t)
	const (
		messages = 3000
		size     = 16 << 10
	)
	dataDir, addr := t.TempDir(), freeAddr(t)
	proc := launchBinary(t, "/bin/sh", nil, "-c", `ulimit -n 256 && exec "$0" "$@"`,
		binary, "serve", "--listen", addr, "--data-dir", dataDir, "--body-file-size", "64KiB")
	proc.waitReady(t, func() error {
		resp, err := http.Get("http://" + addr + "/?Action=ListQueues")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	ctx := context.Background()
	client := sqs.New(newClient(addr).Options(), func(o *sqs.Options) { o.RetryMaxAttempts = 5 })
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("descriptors.fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	q := created.QueueUrl
	bodyOf := func(id int) string {
		head := fmt.Sprintf("body %06d ", id)
		return head + strings.Repeat(strconv.Itoa(id%10), size-len(head))
	}
	for first := 0; first < messages; first += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for id := first; id < first+10; id++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(id)), MessageBody: aws.String(bodyOf(id)),
				MessageGroupId: aws.String(fmt.Sprintf("g%d", id%50)), MessageDeduplicationId: aws.String(strconv.Itoa(id))})
		}
		out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: entries})
		if err != nil {
			t.Fatalf("send messages %d to %d: %v\nserver output:\n%s", first, first+9, err, proc.out)
		}
		if len(out.Failed) > 0 {
			t.Fatalf("send messages %d to %d: %d failed: %s", first, first+9, len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
	}
	files, _ := filepath.Glob(filepath.Join(dataDir, "bodies", "*.body"))
	t.Logf("%d messages of %d bytes queued in %d body files", messages, size, len(files))
	if len(files) <= 256 {
		t.Fatalf("only %d body files: the test needs more than the 256 descriptors the server has", len(files))
	}

	// A message whose delete comes after its visibility timeout (a slow,
	// shared machine can take that long) is delivered again, as SQS
	// would: it is forgotten and counted when it comes back. The server
	// may say so only once that timeout has passed since the receive was
	// asked, and for a message at most twice.
	const visibility = 20 * time.Second
	seen, late := map[int]bool{}, map[int]int{}
	stall := time.Now().Add(60 * time.Second)
	for len(seen) < messages {
		if time.Now().After(stall) {
			t.Fatalf("nothing received for 60 s after %d of %d\nserver output:\n%s", len(seen), messages, proc.out)
		}
		asked := time.Now()
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 10, VisibilityTimeout: int32(visibility / time.Second), WaitTimeSeconds: 1})
		if err != nil {
			if !running(proc) {
				t.Fatalf("fifoq exited (%v) after %d of %d were received:\n%s", proc.err, len(seen), messages, proc.out)
			}
			t.Logf("receive after %d of %d failed (retrying): %v", len(seen), messages, err)
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		stall = time.Now().Add(60 * time.Second)
		ids := map[string]int{}
		var deletes []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			var id int
			if _, err := fmt.Sscanf(aws.ToString(m.Body), "body %06d ", &id); err != nil || aws.ToString(m.Body) != bodyOf(id) {
				t.Fatalf("a body that was not sent: %.40q (%d bytes)", aws.ToString(m.Body), len(aws.ToString(m.Body)))
			}
			if seen[id] {
				t.Fatalf("message %d received twice", id)
			}
			seen[id] = true
			entry := strconv.Itoa(i)
			ids[entry] = id
			deletes = append(deletes, types.DeleteMessageBatchRequestEntry{Id: aws.String(entry), ReceiptHandle: m.ReceiptHandle})
		}
		deleted, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: deletes})
		if err != nil {
			t.Fatalf("delete messages %v: %v", ids, err)
		}
		for _, failed := range deleted.Failed {
			id := ids[aws.ToString(failed.Id)]
			expired := aws.ToString(failed.Code) == "InvalidParameterValue" && strings.Contains(aws.ToString(failed.Message), "has expired")
			if !expired || time.Since(asked) < visibility || late[id] == 2 {
				t.Fatalf("delete message %d %v after its receive was asked (late %d times before): %s: %s",
					id, time.Since(asked).Round(time.Millisecond), late[id], aws.ToString(failed.Code), aws.ToString(failed.Message))
			}
			t.Logf("message %d was deleted after its visibility timeout; it comes back", id)
			late[id]++
			delete(seen, id)
		}
	}
	if !running(proc) {
		t.Fatalf("fifoq exited (%v):\n%s", proc.err, proc.out)
	}
	if n := openFiles(proc.cmd.Process.Pid, filepath.Join(dataDir, "bodies")); n > 100 {
		t.Errorf("the server holds %d body files open", n)
	}
}

// openFiles counts the descriptors process pid holds on files in dir.
func openFiles(pid int, dir string) int {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}
