package node

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/config"
)

// serve serves n on a loopback port until the test ends and returns an
// SQS client of it.
func serve(t *testing.T, n *Node) *sqs.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Server.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		<-served
	})
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + ln.Addr().String()),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

// TestOpenDeclaresQueues builds a node of each storage with a config
// file's queues: they exist when the first request comes, and take
// messages.
func TestOpenDeclaresQueues(t *testing.T) {
	file, err := config.Declare("test", []config.Queue{{Name: "orders.fifo", Attributes: map[string]string{"FifoQueue": "true"}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, cfg := range []Config{{InMemory: true, Queues: file}, {DataDir: dir, Queues: file}} {
		n, err := Open(cfg)
		if err != nil {
			t.Fatalf("Open(%+v): %v", cfg, err)
		}
		if (n.Raft != nil) == cfg.InMemory {
			t.Errorf("InMemory %v, and the durable log is %v", cfg.InMemory, n.Raft)
		}
		c := serve(t, n)
		url, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("orders.fifo")})
		if err != nil {
			t.Fatalf("the config file's queue: %v", err)
		}
		if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: aws.String("m"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenRefuses checks the configurations Open cannot build.
func TestOpenRefuses(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no storage":                 {},
		"a cluster member in memory": {InMemory: true, Cluster: &Cluster{}},
	} {
		if n, err := Open(cfg); err == nil {
			n.Close(context.Background())
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

// TestCooldown checks the one conversion of a user's cool-down setting.
func TestCooldown(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: -1, -time.Second: -1, time.Second: time.Second} {
		if got := Cooldown(in); got != want {
			t.Errorf("Cooldown(%v) = %v, want %v", in, got, want)
		}
	}
}

// TestRestoreTakesTheBackupsRegion restores a backup of a node of
// eu-west-1: without a region the data dir takes the backup's, and opens
// in it only; told another region, Restore refuses before it makes the
// data dir.
func TestRestoreTakesTheBackupsRegion(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	src, err := Open(Config{DataDir: t.TempDir(), Region: "eu-west-1", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	_, err = src.Raft.Backup(&file, "test")
	src.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	refused := filepath.Join(t.TempDir(), "refused")
	if _, err := Restore(refused, "node-1", "us-east-1", bytes.NewReader(file.Bytes()), time.Minute, quiet); err == nil ||
		!strings.Contains(err.Error(), "--region eu-west-1") {
		t.Fatalf("a backup of eu-west-1 restored with region us-east-1: %v", err)
	}
	if _, err := os.Stat(refused); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused restore made its data dir (%v)", err)
	}

	dir := t.TempDir()
	hdr, err := Restore(dir, "node-1", "", bytes.NewReader(file.Bytes()), time.Minute, quiet)
	if err != nil || hdr.Region != "eu-west-1" {
		t.Fatalf("Restore without a region: header region %q, %v", hdr.Region, err)
	}
	if n, err := Open(Config{DataDir: dir, Logger: quiet}); err == nil {
		n.Close(context.Background())
		t.Fatal("the restored data dir of eu-west-1 opened in the default region")
	}
	n, err := Open(Config{DataDir: dir, Region: "eu-west-1", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	n.Close(context.Background())
}
