// Package integration tests the whole fifoq server the way its users meet
// it: an in-process server on a free loopback port, driven by unmodified
// AWS clients — aws-sdk-go-v2 (AWS JSON 1.0), aws-sdk-go v1 pinned at a
// version whose SQS client speaks AWS Query, the AWS CLI and boto3.
//
// The package's only non-test code is the harness (harness.go): it starts a
// server on a fake clock that stands still until the test advances it, and
// builds the clients. So no test sleeps or measures the wall clock: a test
// advances the clock over SQS's periods (visibility timeouts, delays, the
// deduplication interval, a long poll's wait time, a move task's rate) and
// waits for what the server shows (its long-poll waiter gauge, a move
// task's status), with real time only as a guard against a hang.
// The server keeps its state in memory unless FIFOQ_TEST_LOG=raft, which
// puts it on the durable Raft log in a temporary data dir, as fifoq serve
// does by default; CI runs the suite both ways. When the suite ends, no
// goroutine may be left running (goleak, in TestMain).
// Every behaviour under test is Amazon SQS's documented behaviour; a test
// that fails points at a difference between fifoq and SQS.
package integration
