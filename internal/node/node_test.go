package node

import (
	"context"
	"net"
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
