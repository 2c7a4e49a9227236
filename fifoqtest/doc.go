// Package fifoqtest runs a real SQS server inside a Go test: fifoq, the
// server that "fifoq serve" runs, started in the test's own process on a
// free port of 127.0.0.1, in memory, in milliseconds, and stopped when the
// test ends. No container, no port to agree on, nothing to clean up.
//
// # Use
//
//	srv := fifoqtest.New(t)
//	client := srv.Client() // an *sqs.Client of aws-sdk-go-v2
//	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
//
// New fails the test if the server cannot start, and registers its stop
// with t.Cleanup. Each call starts a server of its own, so tests may run
// in parallel (t.Parallel) without seeing each other's queues.
//
// The server speaks both of SQS's wire protocols (AWS JSON, which current
// SDKs use, and AWS Query), FIFO queues and standard queues, dead-letter
// queues and redrive, long polling, batches, tags, policies and message
// move tasks, with SQS's limits and error codes.
//
// # Clients
//
// Server.Client returns an aws-sdk-go-v2 SQS client; Server.Config returns
// the aws.Config it is made from (endpoint, region, static credentials),
// for clients of your own: sqs.NewFromConfig(srv.Config(), ...). Config
// reads nothing from the environment or from ~/.aws, so a developer's
// AWS_PROFILE or AWS_ENDPOINT_URL cannot send a test's requests to a real
// account. Any other SDK, or the AWS CLI, reaches the server at
// Server.URL; Server.QueueURL gives a queue's URL without asking.
//
// # Options
//
// New and Start take options:
//
//   - WithQueues declares queues before New returns, as values of the same
//     schema as the queues: list of fifoq's config file: name, attributes,
//     tags, a dead-letter link, a policy. They are checked as the file is,
//     so a mistake fails the test at its start.
//   - WithAccount and WithRegion set the account id and region of the
//     queues (000000000000 and us-east-1 by default).
//   - WithCredentials makes the server require SigV4 signatures by one
//     access key; Config signs with it. Without it, any signature passes.
//   - WithRecreateDelay and WithPurgeDelay set SQS's cool-downs after
//     DeleteQueue and PurgeQueue (60 seconds by default, as in SQS; 0
//     turns them off).
//   - WithDataDir keeps the state on disk, in the durable log that fifoq
//     serve uses, so that a test can stop a server (Server.Close) and
//     start another on the same directory.
//   - WithClock runs the server on a fake clock.
//   - WithLogger sends the server's log lines somewhere; by default New
//     sends its warnings and errors to the test's log.
//
// # Time
//
// SQS is full of periods a test cannot wait for: visibility timeouts,
// delays of up to 15 minutes, the 5-minute deduplication interval of FIFO
// queues, a retention period of days. fifoq's engine never reads a clock:
// the server stamps the time into every command it applies. With a Clock
// (NewClock, WithClock) that time is the fake clock's, and it moves only
// when the test calls Clock.Advance, at once:
//
//	clock := fifoqtest.NewClock(time.Time{})
//	srv := fifoqtest.New(t, fifoqtest.WithClock(clock))
//	... receive a message and do not delete it ...
//	clock.Advance(31 * time.Second) // past its visibility timeout
//	... receive it again ...
//
// Waits follow the fake clock too: a long poll waiting for a delayed or
// in-flight message returns it as soon as Advance makes it visible, and a
// long poll ends when the clock passes its wait time, not before. So a
// long poll on a queue that stays empty waits until the clock is advanced
// past it from another goroutine (or the server stops): with a fake
// clock, receive with WaitTimeSeconds 0 unless a message is expected.
//
// # Outside a test function
//
// Start and Server.Close do what New does without a testing.TB: to share
// one server among a package's tests from TestMain, or in a program.
//
// # Stability
//
// What this package exports follows semantic versioning with the module's
// tags (see CHANGELOG.md at the module's root): it changes incompatibly
// only in a new major version. Everything else in the module is internal.
package fifoqtest
