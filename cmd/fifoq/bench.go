package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/bench"
)

// benchCmd runs "fifoq bench": a load generator for any SQS endpoint.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	var o benchOptions
	fs := benchFlagSet(&o, stderr)
	if exit, stop := parseArgs(fs, args, false, stdout, stderr); stop {
		return exit
	}
	cfg, endpoint, region, standard, asJSON, quiet, ceiling, metrics, clientKind := o.cfg, o.endpoint, o.region, o.standard, o.asJSON, o.quiet, o.ceiling, o.metrics, o.clientKind
	cfg.FIFO = !standard
	endpoints := strings.Split(endpoint, ",")
	endpoint = endpoints[0]
	if clientKind != "sdk" && clientKind != "lean" {
		fmt.Fprintf(stderr, "fifoq bench: --client must be sdk or lean, not %q\n", clientKind)
		return 2
	}
	switch metrics {
	case "off":
	case "":
		cfg.MetricsURL = strings.TrimSuffix(endpoint, "/") + "/metrics"
	default:
		cfg.MetricsURL = metrics
	}
	if !quiet {
		cfg.Progress = stderr
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "fifoq bench: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var ceilingRes *bench.Result
	if ceiling {
		// The ceiling runs first: a durable server goes on working after a
		// burst of writes (snapshots, log compaction), which would steal
		// CPU from a ceiling run after it on the same machine; the ceiling
		// leaves nothing behind in the server.
		if !quiet {
			fmt.Fprintf(stderr, "fifoq bench: ceiling phase (built-in endpoint)\n")
		}
		res, err := runCeiling(ctx, clientKind, region, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "fifoq bench: ceiling: %v\n", err)
			return 1
		}
		ceilingRes = res
		if !quiet {
			fmt.Fprintf(stderr, "fifoq bench: target phase (%s)\n", endpoint)
		}
	}
	var clients []bench.API
	for _, e := range endpoints {
		client, err := benchClient(ctx, clientKind, e, region, cfg.Producers+cfg.Consumers)
		if err != nil {
			fmt.Fprintf(stderr, "fifoq bench: %v\n", err)
			return 1
		}
		clients = append(clients, client)
	}
	res, err := bench.RunOver(ctx, clients, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq bench: %v\n", err)
		return 1
	}
	var out interface {
		WriteText(io.Writer)
		OK() bool
	} = res
	if ceilingRes != nil {
		out = bench.Compare(ceilingRes, res)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	} else {
		out.WriteText(stdout)
	}
	if !out.OK() {
		return 1
	}
	return 0
}

// benchOptions are the flags of "fifoq bench".
type benchOptions struct {
	cfg      bench.Config
	endpoint string
	region   string
	standard bool
	asJSON   bool
	quiet    bool
	ceiling  bool
	metrics  string
	// clientKind is "sdk" or "lean".
	clientKind string
}

// benchFlagSet defines the flags of "fifoq bench" on o: the one
// definition that parsing, shell completion and the man page all read.
func benchFlagSet(o *benchOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoint, "endpoint", "http://127.0.0.1:9324", "SQS endpoint URL; several, comma-separated, for the nodes of one cluster: producer and consumer i each use the i-th (mod their number), and the queue is created through the first")
	fs.StringVar(&o.region, "region", "us-east-1", "region to sign requests for")
	fs.DurationVar(&o.cfg.Duration, "duration", 10*time.Second, "how long producers send")
	fs.IntVar(&o.cfg.Producers, "producers", 4, "concurrent producers")
	fs.IntVar(&o.cfg.Consumers, "consumers", 4, "concurrent consumers")
	fs.IntVar(&o.cfg.Groups, "groups", 16, "message groups (FIFO; with --standard, 0 sends no group)")
	fs.IntVar(&o.cfg.GroupRun, "group-run", 1, "consecutive messages of a producer sent to one group (with --batch, a batch of one group's messages)")
	fs.IntVar(&o.cfg.Batch, "batch", 10, "messages per send (1 uses SendMessage, 2-10 SendMessageBatch)")
	fs.IntVar(&o.cfg.BodySize, "body-size", 256, "message body size in bytes")
	fs.BoolVar(&o.standard, "standard", false, "use a standard queue instead of a FIFO queue")
	fs.BoolVar(&o.cfg.HighThroughput, "high-throughput", false, "make the FIFO queue high-throughput (DeduplicationScope messageGroup, FifoThroughputLimit perMessageGroupId), which a cluster spreads over partitions")
	fs.StringVar(&o.cfg.QueueName, "queue", "", "name of the queue to create (default: a fresh name)")
	fs.BoolVar(&o.cfg.KeepQueue, "keep-queue", false, "do not delete the queue afterwards")
	fs.DurationVar(&o.cfg.DrainTimeout, "drain-timeout", 30*time.Second, "how long to wait for the last messages after producers stop")
	fs.BoolVar(&o.asJSON, "json", false, "print the summary as JSON")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress lines while running")
	fs.BoolVar(&o.ceiling, "ceiling", false, "first run the same load against a built-in endpoint that does no work (the client's ceiling), then against --endpoint, and report the ratio")
	fs.StringVar(&o.metrics, "metrics", "", "the server's Prometheus endpoint, read for its CPU and log commits (default: --endpoint's /metrics; \"off\": not read)")
	fs.StringVar(&o.clientKind, "client", "sdk", "the client: \"sdk\" (the AWS SDK for Go) or \"lean\" (plain HTTP and JSON, unsigned, no retries: for servers without credentials; measures the server where the SDK's own CPU would be the limit)")
	fs.StringVar(&o.cfg.DataDir, "data-dir", "", "the server's data directory: count the flushes (fsyncs) and writes of the disk holding it (Linux)")
	fs.Float64Var(&o.cfg.Rate, "rate", 0, "cap the producers' total sends at this many messages per second (0: no cap)")
	fs.DurationVar(&o.cfg.ReportEvery, "report-every", 0, "soak: record the rates, send latency and the server's memory, goroutines and open files at this interval, and fail if they grow past --warmup (0: off)")
	fs.DurationVar(&o.cfg.Warmup, "warmup", 0, "soak: the start left out of the growth trends (default 10m, or a sixth of --duration if shorter)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fifoq bench [flags]

Drives an SQS endpoint with concurrent producers and consumers, reports
throughput and latency percentiles, and verifies that every acknowledged
message was received, with no duplicate and in group order (FIFO). Exits 1
if the verification fails or requests failed.

It also reports the bench's own CPU, the server's CPU and log commits
(from its /metrics, where it has them) and, with --data-dir, the flushes
of the server's data disk. With --ceiling it first runs the same load
against a built-in endpoint that answers valid responses and does nothing
else, so the server's rate is printed as a fraction of what this client
can do on this machine.

With --report-every it is a soak: run it for hours at a fixed --rate, and
it prints a line per interval (rates, send latency, the server's RSS, heap,
goroutines and open files) and at the end whether each of them grew after
the warm-up (the mean of the last quarter of the intervals against the
first).

Credentials come from the usual AWS environment; without any, fifoq's
loopback default (any key) is used.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// runCeiling runs the load of cfg against a built-in ceiling endpoint,
// through a client built as the target's is.
func runCeiling(ctx context.Context, clientKind, region string, cfg bench.Config) (*bench.Result, error) {
	url, stop, err := bench.StartCeiling(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	client, err := benchClient(ctx, clientKind, url, region, cfg.Producers+cfg.Consumers)
	if err != nil {
		return nil, err
	}
	// The server's figures and its disk have nothing to do with this phase.
	cfg.MetricsURL, cfg.DataDir = "", ""
	return bench.Run(ctx, client, cfg)
}

// benchClient builds the client --client names for endpoint.
func benchClient(ctx context.Context, kind, endpoint, region string, workers int) (bench.API, error) {
	if kind == "lean" {
		return bench.NewLeanClient(endpoint, workers), nil
	}
	return sqsClient(ctx, endpoint, region, sqsClientOptions{workers: workers})
}

// sqsClientOptions say how sqsClient's client connects and signs.
type sqsClientOptions struct {
	// workers is the number of goroutines that share the client.
	workers int
	// cred, if it has a key, signs every request (fifoq import's
	// FIFOQ_ACCESS_KEY_ID); otherwise the SDK's own chain does.
	cred auth.Credential
	// caFile is --ca-cert: see clientTLS.
	caFile string
}

// sqsClient builds an SQS client for endpoint. Credentials are o.cred's,
// else those of the environment and shared config; where there are none,
// it signs with a placeholder key, which fifoq accepts on loopback when it
// has no credentials configured.
//
// The client keeps an idle connection for each of the workers: with the
// SDK's default of 10 per host, more workers than that would keep closing
// connections and dialling new ones, which measures connection set-up
// rather than the queue.
func sqsClient(ctx context.Context, endpoint, region string, o sqsClientOptions) (*sqs.Client, error) {
	tc, err := clientTLS(o.caFile)
	if err != nil {
		return nil, err
	}
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = max(t.MaxIdleConns, o.workers)
		t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, o.workers)
		if tc != nil {
			t.TLSClientConfig = tc
		}
	})
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	switch {
	case o.cred.AccessKeyID != "":
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(o.cred.AccessKeyID, o.cred.SecretAccessKey, "")))
	case os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "":
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("fifoq", "fifoq", "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	return sqs.NewFromConfig(awsCfg, func(so *sqs.Options) {
		so.BaseEndpoint = aws.String(endpoint)
		// httpClient is set here rather than given to LoadDefaultConfig,
		// which would add AWS_CA_BUNDLE's certificates to its roots on top
		// of --ca-cert's. The SDK closes request bodies net/http may still
		// read, which closes connections mid-answer (see
		// bench.OwnRequestBodies).
		so.HTTPClient = bench.OwnRequestBodies(httpClient)
	}), nil
}
