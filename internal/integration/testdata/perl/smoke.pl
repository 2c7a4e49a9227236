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
