package crashtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// TestDiskFull runs fifoq on a small tmpfs, fills it, and checks that
// writes fail with ServiceUnavailable while reads go on, and that writes
// work again once space returns, with nothing lost.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	mnt := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", mnt).Run(); err != nil {
		// CI runs as root and sets FIFOQ_REQUIRE_ROOT_TESTS, so that this
		// test cannot pass there by skipping.
		if os.Getenv("FIFOQ_REQUIRE_ROOT_TESTS") != "" {
			t.Fatalf("cannot mount a tmpfs to fill, and FIFOQ_REQUIRE_ROOT_TESTS is set: %v", err)
		}
		t.Skipf("cannot mount a tmpfs to fill (needs root): %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })

	logs := serverLog(t)
	addr := freeAddr(t)
	dataDir := filepath.Join(mnt, "data")
	proc := startServer(t, addr, dataDir, logs, "--min-free-disk-mb", "32")
	defer func() {
		proc.cmd.Process.Signal(syscall.SIGTERM)
		proc.cmd.Wait()
	}()
	client := newClient(addr)
	ctx := context.Background()

	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("full")})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	q := created.QueueUrl
	send := func(body string) error {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String(body)})
		return err
	}
	if err := send("before"); err != nil {
		t.Fatalf("send before filling the disk: %v", err)
	}

	// Leave 16 MiB free, less than the 32 MiB fifoq was told to keep. (The
	// log preallocates its 64 MiB segment, so measure rather than assume.)
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, free-16<<20), 0o600); err != nil {
		t.Fatalf("fill the disk: %v", err)
	}
	err = send("while full")
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ServiceUnavailable" {
		t.Fatalf("send on a full disk: err = %v, want ServiceUnavailable", err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q, AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
	if err != nil {
		t.Fatalf("read on a full disk: %v", err)
	}
	if got := attrs.Attributes["ApproximateNumberOfMessages"]; got != "1" {
		t.Fatalf("ApproximateNumberOfMessages on a full disk = %s, want 1", got)
	}

	// Space returns: writes work again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := send("after"); err != nil {
		t.Fatalf("send after space returned: %v", err)
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	got := map[string]bool{}
	for _, m := range out.Messages {
		got[aws.ToString(m.Body)] = true
	}
	if len(got) != 2 || !got["before"] || !got["after"] {
		t.Fatalf("received %v, want before and after", got)
	}
}
