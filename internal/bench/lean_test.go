package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestLeanClient runs the bench through the lean client against a real
// fifoq server and against the ceiling endpoint: both must understand it,
// and the verification must be clean.
func TestLeanClient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ceiling, stop, err := StartCeiling(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, tc := range []struct {
		name, endpoint string
		cfg            Config
	}{
		{"server batch", "http://" + startServer(t), Config{FIFO: true, Groups: 8, Batch: 10}},
		{"server single sends", "http://" + startServer(t), Config{FIFO: true, Groups: 3, Batch: 1}},
		{"server standard", "http://" + startServer(t), Config{Groups: 0, Batch: 3}},
		{"ceiling", ceiling, Config{FIFO: true, Groups: 8, Batch: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Duration, cfg.Producers, cfg.Consumers, cfg.BodySize = time.Second, 4, 2, 128
			res, err := Run(context.Background(), NewLeanClient(tc.endpoint, 6), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() || res.Sent == 0 || res.Received != res.Sent || res.SendErrors+res.RecvErrors != 0 {
				t.Fatalf("sent %d, received %d, errors %d/%d (%s), verification %+v", res.Sent, res.Received,
					res.SendErrors, res.RecvErrors, res.FirstError, res.Verification)
			}
		})
	}
}

// TestLeanClientError checks that an error answer comes back as an error
// naming the server's code.
func TestLeanClientError(t *testing.T) {
	c := NewLeanClient("http://"+startServer(t), 1)
	_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String("/000000000000/missing"), MessageBody: aws.String("x")})
	var le *leanError
	if !errors.As(err, &le) || le.code == "" || le.status/100 != 4 {
		t.Fatalf("SendMessage to a missing queue: %v; want a 4xx naming its code", err)
	}
	t.Log(err)
}
