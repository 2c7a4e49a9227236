package crashtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/bench"
)

// The admin key of the region tests' servers.
const regionKeyID, regionSecret = "AKIDREGIONTEST000001", "secret-of-the-region-test"

var regionEnv = []string{"FIFOQ_ACCESS_KEY_ID=" + regionKeyID, "FIFOQ_SECRET_ACCESS_KEY=" + regionSecret}

// TestRestoreKeepsTheBackupsRegion backs up a server of region eu-west-1
// and restores it with the real binary. Without --region the restore
// takes the backup's region: the restored data dir serves the queue and
// its messages with eu-west-1 ARNs under --region eu-west-1, and fifoq
// serve without --region refuses it in one line that names the fix. A
// restore told another region, or given a cut backup, exits 1 with one
// line and no panic, and leaves nothing behind: no data dir if it would
// have made it, an empty one if the operator made it.
func TestRestoreKeepsTheBackupsRegion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	addr := freeAddr(t)
	src := launch(t, regionEnv, "serve", "--listen", addr, "--data-dir", t.TempDir(), "--region", "eu-west-1")
	client := regionClient(addr, "eu-west-1")
	ctx := context.Background()
	src.waitReady(t, func() error { _, err := client.ListQueues(ctx, &sqs.ListQueuesInput{}); return err })
	q := mustQueue(t, client, "orders", nil)
	for _, body := range []string{"one", "two", "three"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "eu.backup")
	if bk := launch(t, append(regionEnv, "FIFOQ_ENDPOINT=http://"+addr), "backup", "--region", "eu-west-1", file); !bk.exited(2*time.Minute) || bk.exitCode() != 0 {
		t.Fatalf("fifoq backup: exit %d; output:\n%s", bk.exitCode(), bk.out)
	}
	src.stop()
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.backup")
	if err := os.WriteFile(cut, whole[:len(whole)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	refuseRestore(t, "another region", file, "--region eu-west-1", "--region", "us-east-1")
	refuseRestore(t, "a cut backup", cut, "damaged")

	dir := filepath.Join(t.TempDir(), "restored")
	if p := launch(t, nil, "restore", "--data-dir", dir, file); !p.exited(2*time.Minute) || p.exitCode() != 0 {
		t.Fatalf("fifoq restore of a backup of eu-west-1, without --region: exit %d; output:\n%s", p.exitCode(), p.out)
	}
	refuseStart(t, dir, "us-east-1", "eu-west-1")
	addr2 := freeAddr(t)
	dst := launch(t, regionEnv, "serve", "--listen", addr2, "--data-dir", dir, "--region", "eu-west-1")
	client2 := regionClient(addr2, "eu-west-1")
	dst.waitReady(t, func() error { _, err := client2.ListQueues(ctx, &sqs.ListQueuesInput{}); return err })
	q2 := "http://" + addr2 + q[len("http://"+addr):]
	if arn := queueARN(t, client2, q2); !strings.HasPrefix(arn, "arn:aws:sqs:eu-west-1:") {
		t.Fatalf("the restored queue's ARN is %s, want one of eu-west-1", arn)
	}
	if n := countMessages(t, client2, q2); n != 3 {
		t.Fatalf("the restored queue holds %d messages, want 3", n)
	}
}

// refuseRestore runs fifoq restore of file with the flags extra, into a
// data dir it would make and into one the operator made empty: each must
// exit 1 with one line naming want, no panic, and leave the dir as it
// was (absent, or empty).
func refuseRestore(t *testing.T, what, file, want string, extra ...string) {
	t.Helper()
	for _, made := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "restored")
		if made {
			if err := os.Mkdir(dir, 0o750); err != nil {
				t.Fatal(err)
			}
		}
		args := append([]string{"restore", "--data-dir", dir}, extra...)
		p := launch(t, nil, append(args, file)...)
		if !p.exited(2 * time.Minute) {
			t.Fatalf("fifoq restore of %s did not end", what)
		}
		out := p.out.String()
		if p.exitCode() != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, want) || strings.Contains(out, "panic") {
			t.Fatalf("fifoq restore of %s (data dir made by the operator: %v): exit %d, output:\n%s\nwant exit 1 and one line that says %q", what, made, p.exitCode(), out, want)
		}
		entries, err := os.ReadDir(dir)
		switch {
		case made && (err != nil || len(entries) != 0):
			t.Fatalf("fifoq restore of %s left %d entries in the operator's empty data dir (%v)", what, len(entries), err)
		case !made && !errors.Is(err, os.ErrNotExist):
			t.Fatalf("fifoq restore of %s left the data dir it made behind, with %d entries (%v)", what, len(entries), err)
		}
	}
}

// refuseStart starts fifoq serve on dir with --region region, which must
// refuse in one line that says the dir belongs to region owner and names
// the flag to start it with. If the server starts instead, it fails the
// test with the ARN its first queue now has.
func refuseStart(t *testing.T, dir, region, owner string) {
	t.Helper()
	addr := freeAddr(t)
	p := launch(t, regionEnv, "serve", "--listen", addr, "--data-dir", dir, "--region", region)
	client := regionClient(addr, region)
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for !p.exited(20 * time.Millisecond) {
		out, err := client.ListQueues(ctx, &sqs.ListQueuesInput{})
		if err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("fifoq serve --region %s on a data dir of region %s neither stopped nor answered within 30 s; output:\n%s", region, owner, p.out)
			}
			continue
		}
		arn := "no queue"
		if len(out.QueueUrls) > 0 {
			arn = queueARN(t, client, out.QueueUrls[0])
		}
		p.stop()
		t.Fatalf("fifoq serve --region %s started on a data dir of region %s (its first queue now: %s); output:\n%s", region, owner, arn, p.out)
	}
	out := p.out.String()
	want := "belongs to region " + owner + "; start it with --region " + owner
	if p.exitCode() == 0 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, want) ||
		strings.Contains(out, "damaged") || strings.Contains(out, "panic") {
		t.Fatalf("fifoq serve --region %s on a data dir of region %s: exit %d, output:\n%s\nwant one line that says %q", region, owner, p.exitCode(), out, want)
	}
}

// TestDataDirKeepsItsRegion restarts a data dir of us-east-1 with
// --region eu-west-1, first with its state only in the log, then with a
// snapshot: both are refused with the same plain message (not a damaged
// snapshot), and the queue stays in us-east-1.
func TestDataDirKeepsItsRegion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	serveUS := func() (*fifoqProc, *sqs.Client, string) {
		addr := freeAddr(t)
		p := launch(t, regionEnv, "serve", "--listen", addr, "--data-dir", dir)
		c := regionClient(addr, "us-east-1")
		p.waitReady(t, func() error { _, err := c.ListQueues(ctx, &sqs.ListQueuesInput{}); return err })
		return p, c, addr
	}
	p, c, addr := serveUS()
	q := mustQueue(t, c, "jobs", nil)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job 1")}); err != nil {
		t.Fatal(err)
	}
	p.stop()
	if states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin")); len(states) != 0 {
		t.Fatalf("the data dir holds %d snapshots already; this step needs its state in the log alone", len(states))
	}
	refuseStart(t, dir, "eu-west-1", "us-east-1")

	p, c, addr2 := serveUS()
	q = "http://" + addr2 + q[len("http://"+addr):]
	if arn := queueARN(t, c, q); !strings.HasPrefix(arn, "arn:aws:sqs:us-east-1:") {
		t.Fatalf("after the refused start, the queue's ARN is %s", arn)
	}
	takeSnapshot(t, addr2, regionKeyID, regionSecret, 0)
	p.stop()
	refuseStart(t, dir, "eu-west-1", "us-east-1")

	_, c, addr3 := serveUS()
	q = "http://" + addr3 + q[len("http://"+addr2):]
	if arn := queueARN(t, c, q); !strings.HasPrefix(arn, "arn:aws:sqs:us-east-1:") {
		t.Fatalf("after the refused start on a snapshot, the queue's ARN is %s", arn)
	}
	if n := countMessages(t, c, q); n != 1 {
		t.Fatalf("the queue holds %d messages, want 1", n)
	}
}

// regionClient is a client of the server at addr that signs for region
// with the region tests' admin key.
func regionClient(addr, region string) *sqs.Client {
	return sqs.New(sqs.Options{Region: region, Credentials: credentials.NewStaticCredentialsProvider(regionKeyID, regionSecret, ""),
		BaseEndpoint: aws.String("http://" + addr), RetryMaxAttempts: 1, HTTPClient: bench.OwnRequestBodies(plainHTTP())})
}

// queueARN is the QueueArn attribute of the queue at q.
func queueARN(t *testing.T, c *sqs.Client, q string) string {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &q,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["QueueArn"]
}

// checkRegionAdopted checks that the server p, started on a data dir of a
// fifoq that did not record its region, recorded it as region and said so.
func checkRegionAdopted(t *testing.T, dir, region string, p *fifoqProc) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "region"))
	if err != nil || strings.TrimSpace(string(b)) != region {
		t.Fatalf("the data dir's region record holds %q (%v), want %s", b, err, region)
	}
	if out := p.out.String(); !strings.Contains(out, "adopted") {
		t.Fatalf("the server did not log that the data dir adopted its region; output:\n%s", out)
	}
}
