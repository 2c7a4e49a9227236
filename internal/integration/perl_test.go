package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// perlScript drives fifoq with Amazon::SQS::Simple, the Perl SQS client
// Debian packages as libamazon-sqs-simple-perl. It speaks AWS Query in its
// own way: every request is a form POST that also carries an X-Amz-Target
// header, queue actions are posted to the queue's URL, the parameters
// AWSAccessKeyId and Timestamp ride along in the body, and SetAttribute
// writes the unnumbered Attribute.Name / Attribute.Value pair.
const perlScript = `
use strict;
use warnings;
use Amazon::SQS::Simple;

my $endpoint = shift @ARGV;
my $sqs = Amazon::SQS::Simple->new('test', 'test', Endpoint => $endpoint);
sub check { my ($ok, $what) = @_; die "FAILED: $what\n" unless $ok; }

my $q = $sqs->CreateQueue('perl-orders.fifo',
    'Attribute.1.Name' => 'FifoQueue', 'Attribute.1.Value' => 'true',
    'Attribute.2.Name' => 'ContentBasedDeduplication', 'Attribute.2.Value' => 'true');
check($q && $q->Endpoint =~ m{/000000000000/perl-orders\.fifo$}, "CreateQueue returns the queue URL");

$q->SetAttribute('VisibilityTimeout', 45);
my $attrs = $q->GetAttributes();
check($attrs->{VisibilityTimeout} eq '45', "SetAttribute then GetAttributes: VisibilityTimeout=$attrs->{VisibilityTimeout}");
check($attrs->{FifoQueue} eq 'true', "the queue is FIFO");

for my $i (1..3) {
    my $r = $q->SendMessage("order $i", MessageGroupId => 'customer-1');
    check($r->MessageId, "SendMessage $i returns a MessageId");
}
my @got;
while (my @msgs = $q->ReceiveMessage(MaxNumberOfMessages => 10)) {
    for my $m (@msgs) {
        push @got, $m->MessageBody;
        $q->DeleteMessage($m->ReceiptHandle);
    }
}
check(join(',', @got) eq 'order 1,order 2,order 3', "FIFO order: @got");

my $std = $sqs->CreateQueue('perl-standard');
my @sent = $std->SendMessageBatch(['a', 'b', 'c']);
check(scalar(@sent) == 3, "SendMessageBatch sends 3");
my %left = map { $_ => 1 } qw(a b c);
for (1..10) {
    my @msgs = $std->ReceiveMessageBatch();
    last unless @msgs;
    delete $left{$_->MessageBody} for @msgs;
    $std->DeleteMessageBatch(\@msgs);
}
check(!%left, "every batch message received: left " . join(',', keys %left));

my $queues = $sqs->ListQueues();
check(scalar(@$queues) == 2, "ListQueues lists 2 queues");
$std->SendMessage('to purge');
$std->Purge();
$std->Delete();
$q->Delete();
check(!defined($sqs->ListQueues()), "no queue left");
print "ok\n";
`

// TestPerlClient drives fifoq with Debian's Perl SQS client
// (Amazon::SQS::Simple), which sends AWS Query forms with an X-Amz-Target
// header beside them.
func TestPerlClient(t *testing.T) {
	t.Parallel()
	perl, err := exec.LookPath("perl")
	if err != nil {
		clientMissing(t, "perl is not installed")
	}
	if err := exec.Command(perl, "-MAmazon::SQS::Simple", "-e", "1").Run(); err != nil {
		clientMissing(t, "Amazon::SQS::Simple (Debian's libamazon-sqs-simple-perl) is not installed")
	}
	env := Start(t)
	script := filepath.Join(t.TempDir(), "smoke.pl")
	if err := os.WriteFile(script, []byte(perlScript), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, perl, script, env.URL)
	cmd.Env = clientEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("Amazon::SQS::Simple script: %v\n%s", err, out)
	}
}
