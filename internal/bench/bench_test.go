package bench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/server"
)

// TestRunAgainstServer runs the bench for a short while against a real
// fifoq server, FIFO and standard, and asserts its verification passed.
func TestRunAgainstServer(t *testing.T) {
	addr := startServer(t)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String("http://" + addr),
		HTTPClient:   OwnRequestBodies(&http.Client{Transport: transport}),
	})
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"fifo", Config{FIFO: true, Groups: 8, Batch: 10}},
		{"fifo single sends", Config{FIFO: true, Groups: 3, Batch: 1}},
		{"standard fair", Config{Groups: 4, Batch: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Duration, cfg.Producers, cfg.Consumers, cfg.BodySize = 1500*time.Millisecond, 4, 2, 128
			res, err := Run(context.Background(), client, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			res.WriteText(&out)
			t.Log(out.String())
			if !res.OK() {
				t.Fatalf("bench verification failed: %+v", res.Verification)
			}
			// Producers stop between sends, so the end of the run leaves
			// no send whose outcome is unknown: every message delivered
			// was acknowledged.
			if res.Verification.Unacknowledged != 0 {
				t.Fatalf("%d messages delivered whose send was never acknowledged", res.Verification.Unacknowledged)
			}
			if res.Sent == 0 || res.Verification.Acknowledged == 0 {
				t.Fatal("the bench sent nothing")
			}
		})
	}
}

// startServer starts an in-memory fifoq server for the test and returns
// its address.
func startServer(t *testing.T) string {
	t.Helper()
	srv, err := server.New(server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return ln.Addr().String()
}
