<?php
// Smoke test of fifoq through AsyncAws SQS, Debian's php-async-aws-sqs
// (bookworm: 1.7, which speaks AWS Query). Usage: php smoke.php ENDPOINT.
// Prints "ok".
declare(strict_types=1);
require '/usr/share/php/AsyncAws/Core/autoload.php';
require '/usr/share/php/AsyncAws/Sqs/autoload.php';

use AsyncAws\Sqs\SqsClient;
use AsyncAws\Sqs\Exception\QueueDoesNotExistException;

function check(bool $ok, string $what): void {
    if (!$ok) { fwrite(STDERR, "FAILED: $what\n"); exit(1); }
}

$sqs = new SqsClient([
    'endpoint' => $argv[1], 'region' => 'us-east-1',
    'accessKeyId' => 'test', 'accessKeySecret' => 'test',
    'sharedConfigFile' => '/nonexistent', 'sharedCredentialsFile' => '/nonexistent',
]);
$q = $sqs->createQueue(['QueueName' => 'php.fifo',
    'Attributes' => ['FifoQueue' => 'true', 'VisibilityTimeout' => '30']])->getQueueUrl();
check((bool) preg_match('{/000000000000/php\.fifo$}', (string) $q), "CreateQueue returns the queue URL: $q");

$sent = $sqs->sendMessage(['QueueUrl' => $q, 'MessageBody' => 'one', 'MessageGroupId' => 'g',
    'MessageDeduplicationId' => 'd1',
    'MessageAttributes' => ['k' => ['DataType' => 'String', 'StringValue' => 'v']]]);
check($sent->getMessageId() !== null && $sent->getSequenceNumber() !== null, 'SendMessage returns MessageId and SequenceNumber');
$batch = $sqs->sendMessageBatch(['QueueUrl' => $q, 'Entries' => [
    ['Id' => 'a', 'MessageBody' => 'two', 'MessageGroupId' => 'g', 'MessageDeduplicationId' => 'd2'],
    ['Id' => 'b', 'MessageBody' => 'three', 'MessageGroupId' => 'g', 'MessageDeduplicationId' => 'd3'],
]]);
check(count($batch->getSuccessful()) === 2 && count($batch->getFailed()) === 0, 'SendMessageBatch: two successful, none failed');

$got = $sqs->receiveMessage(['QueueUrl' => $q, 'MaxNumberOfMessages' => 10, 'WaitTimeSeconds' => 1,
    'AttributeNames' => ['All'], 'MessageAttributeNames' => ['All']])->getMessages();
$bodies = array_map(fn ($m) => $m->getBody(), $got);
check($bodies === ['one', 'two', 'three'], 'ReceiveMessage in group order: ' . implode(',', $bodies));
[$m1, $m2, $m3] = $got;
check($m1->getMessageId() === $sent->getMessageId(), 'the first message is the one sent');
check(($m1->getAttributes()['MessageGroupId'] ?? null) === 'g', 'MessageGroupId attribute');
check(($m1->getAttributes()['MessageDeduplicationId'] ?? null) === 'd1', 'MessageDeduplicationId attribute');
check($m1->getMessageAttributes()['k']->getStringValue() === 'v', 'message attribute k');
check($m1->getMd5OfMessageAttributes() === $sent->getMd5OfMessageAttributes(), 'MD5OfMessageAttributes');

$sqs->deleteMessage(['QueueUrl' => $q, 'ReceiptHandle' => $m1->getReceiptHandle()])->resolve();
$sqs->changeMessageVisibility(['QueueUrl' => $q, 'ReceiptHandle' => $m2->getReceiptHandle(), 'VisibilityTimeout' => 0])->resolve();
$sqs->changeMessageVisibility(['QueueUrl' => $q, 'ReceiptHandle' => $m3->getReceiptHandle(), 'VisibilityTimeout' => 0])->resolve();
$again = $sqs->receiveMessage(['QueueUrl' => $q, 'MaxNumberOfMessages' => 10])->getMessages();
check(count($again) === 2, 'the two messages made visible again are received');
$entries = [];
foreach ($again as $i => $m) { $entries[] = ['Id' => "m$i", 'ReceiptHandle' => $m->getReceiptHandle()]; }
$deleted = $sqs->deleteMessageBatch(['QueueUrl' => $q, 'Entries' => $entries]);
check(count($deleted->getSuccessful()) === 2 && count($deleted->getFailed()) === 0, 'DeleteMessageBatch: two successful');
check(count($sqs->receiveMessage(['QueueUrl' => $q])->getMessages()) === 0, 'the queue is empty');

try {
    $sqs->getQueueUrl(['QueueName' => 'no-such-queue'])->getQueueUrl();
    check(false, 'GetQueueUrl of a missing queue succeeded');
} catch (QueueDoesNotExistException $e) {
    check($e->getAwsCode() === 'AWS.SimpleQueueService.NonExistentQueue', 'error code ' . $e->getAwsCode());
}
$sqs->deleteQueue(['QueueUrl' => $q])->resolve();
echo "ok\n";
