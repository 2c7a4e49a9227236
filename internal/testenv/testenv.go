// Package testenv holds what fifoq's tests share about the machine they run
// on: what they do when it lacks something they need to run for real, the
// loopback addresses they give their servers and cluster members, and
// which tier of the suite runs (tier.go: FIFOQ_TESTS).
package testenv

import (
	"os"
	"testing"
)

// RequireClientsVar is the environment variable that makes a missing real
// client (the AWS CLI, boto3, another SDK) a failure instead of a skip.
// .ci/run sets it: CI installs every client, so a missing one there is a
// broken CI, not a reason to skip.
const RequireClientsVar = "FIFOQ_REQUIRE_CLIENTS"

// ClientMissing ends a test whose real client is not installed: it fails
// where RequireClientsVar is set, and skips, saying why, elsewhere.
func ClientMissing(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv(RequireClientsVar) != "" {
		tb.Fatalf("%s, and %s is set", why, RequireClientsVar)
	}
	tb.Skip(why)
}
