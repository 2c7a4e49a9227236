package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/bench"
)

// benchCmd runs "fifoq bench": a load generator for any SQS endpoint.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	var (
		cfg      bench.Config
		endpoint string
		region   string
		standard bool
		asJSON   bool
		quiet    bool
	)
	fs := flag.NewFlagSet("fifoq bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&endpoint, "endpoint", "http://127.0.0.1:9324", "SQS endpoint URL")
	fs.StringVar(&region, "region", "us-east-1", "region to sign requests for")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long producers send")
	fs.IntVar(&cfg.Producers, "producers", 4, "concurrent producers")
	fs.IntVar(&cfg.Consumers, "consumers", 4, "concurrent consumers")
	fs.IntVar(&cfg.Groups, "groups", 16, "message groups (FIFO; with --standard, 0 sends no group)")
	fs.IntVar(&cfg.Batch, "batch", 10, "messages per send (1 uses SendMessage, 2-10 SendMessageBatch)")
	fs.IntVar(&cfg.BodySize, "body-size", 256, "message body size in bytes")
	fs.BoolVar(&standard, "standard", false, "use a standard queue instead of a FIFO queue")
	fs.StringVar(&cfg.QueueName, "queue", "", "name of the queue to create (default: a fresh name)")
	fs.BoolVar(&cfg.KeepQueue, "keep-queue", false, "do not delete the queue afterwards")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 30*time.Second, "how long to wait for the last messages after producers stop")
	fs.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines while running")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fifoq bench [flags]

Drives an SQS endpoint with concurrent producers and consumers, reports
throughput and latency percentiles, and verifies that every acknowledged
message was received, with no duplicate and in group order (FIFO). Exits 1
if the verification fails or requests failed.

Credentials come from the usual AWS environment; without any, fifoq's
loopback default (any key) is used.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg.FIFO = !standard
	if !quiet {
		cfg.Progress = stderr
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "fifoq bench: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, err := sqsClient(ctx, endpoint, region, cfg.Producers+cfg.Consumers)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq bench: %v\n", err)
		return 1
	}
	res, err := bench.Run(ctx, client, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq bench: %v\n", err)
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		res.WriteText(stdout)
	}
	if !res.OK() {
		return 1
	}
	return 0
}

// sqsClient builds an SQS client for endpoint. Credentials come from the
// environment and shared config; where there are none, it signs with a
// placeholder key, which fifoq accepts on loopback when it has no
// credentials configured.
//
// The client keeps an idle connection for each of the workers: with the
// SDK's default of 10 per host, more workers than that would keep closing
// connections and dialling new ones, which measures connection set-up
// rather than the queue.
func sqsClient(ctx context.Context, endpoint, region string, workers int) (*sqs.Client, error) {
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = max(t.MaxIdleConns, workers)
		t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, workers)
	})
	opts := []func(*config.LoadOptions) error{config.WithRegion(region), config.WithHTTPClient(httpClient)}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("fifoq", "fifoq", "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	return sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		// The SDK closes request bodies net/http may still read, which
		// closes connections mid-answer (see bench.OwnRequestBodies).
		o.HTTPClient = bench.OwnRequestBodies(o.HTTPClient)
	}), nil
}
