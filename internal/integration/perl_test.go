package integration

import (
	"os/exec"
	"testing"

	"github.com/fifoq/fifoq/internal/testenv"
)

// TestPerlClient drives fifoq with Amazon::SQS::Simple, the Perl SQS client
// Debian packages as libamazon-sqs-simple-perl (testdata/perl/smoke.pl). It
// speaks AWS Query in its own way: every request is a form POST that also
// carries an X-Amz-Target header, queue actions are posted to the queue's
// URL with a Host header that leaves out the port, the parameters
// AWSAccessKeyId and Timestamp ride along in the body, and SetAttribute
// writes the unnumbered Attribute.Name / Attribute.Value pair.
func TestPerlClient(t *testing.T) {
	t.Parallel()
	perl, err := exec.LookPath("perl")
	if err != nil {
		testenv.ClientMissing(t, "perl is not installed")
	}
	if err := exec.Command(perl, "-MAmazon::SQS::Simple", "-e", "1").Run(); err != nil {
		testenv.ClientMissing(t, "Amazon::SQS::Simple (Debian's libamazon-sqs-simple-perl) is not installed")
	}
	runSmokeScript(t, perl, "perl", "smoke.pl")
}
