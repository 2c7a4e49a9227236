"""Smoke test of fifoq through Debian's python3-boto3 (bookworm: botocore
1.29, whose SQS model speaks AWS Query). Usage: python3 smoke.py ENDPOINT.
Prints the protocol, then "ok"."""
import sys

import boto3

sqs = boto3.client("sqs", endpoint_url=sys.argv[1], region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
print(sqs.meta.service_model.protocol)
q = sqs.create_queue(QueueName="deb-boto.fifo",
                     Attributes={"FifoQueue": "true", "VisibilityTimeout": "30"})["QueueUrl"]
assert q.endswith("/000000000000/deb-boto.fifo"), q
sent = sqs.send_message(QueueUrl=q, MessageBody="one", MessageGroupId="g",
                        MessageDeduplicationId="d1",
                        MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}})
assert sent["MessageId"] and sent["SequenceNumber"] and sent["MD5OfMessageAttributes"], sent
batch = sqs.send_message_batch(QueueUrl=q, Entries=[
    {"Id": "a", "MessageBody": "two", "MessageGroupId": "g", "MessageDeduplicationId": "d2"},
    {"Id": "b", "MessageBody": "three", "MessageGroupId": "g", "MessageDeduplicationId": "d3"},
])
assert len(batch["Successful"]) == 2 and not batch.get("Failed"), batch
got = sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                          AttributeNames=["All"], MessageAttributeNames=["All"])["Messages"]
assert [m["Body"] for m in got] == ["one", "two", "three"], got
m1, m2, m3 = got
assert m1["MessageId"] == sent["MessageId"], m1
assert m1["Attributes"]["MessageGroupId"] == "g", m1
assert m1["Attributes"]["MessageDeduplicationId"] == "d1", m1
assert m1["MessageAttributes"]["k"]["StringValue"] == "v", m1
assert m1["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"], (m1, sent)
sqs.delete_message(QueueUrl=q, ReceiptHandle=m1["ReceiptHandle"])
vis = sqs.change_message_visibility_batch(QueueUrl=q, Entries=[
    {"Id": "v", "ReceiptHandle": m3["ReceiptHandle"], "VisibilityTimeout": 0}])
assert vis["Successful"] == [{"Id": "v"}] and not vis.get("Failed"), vis
sqs.change_message_visibility(QueueUrl=q, ReceiptHandle=m2["ReceiptHandle"], VisibilityTimeout=0)
again = sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=10)["Messages"]
assert [m["Body"] for m in again] == ["two", "three"], again
deleted = sqs.delete_message_batch(QueueUrl=q, Entries=[
    {"Id": "m%d" % i, "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(again)])
assert len(deleted["Successful"]) == 2 and not deleted.get("Failed"), deleted
assert "Messages" not in sqs.receive_message(QueueUrl=q, WaitTimeSeconds=0)
try:
    sqs.get_queue_url(QueueName="no-such-queue")
except sqs.exceptions.QueueDoesNotExist as e:
    assert e.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue", e.response
else:
    raise AssertionError("get_queue_url of a missing queue succeeded")
sqs.delete_queue(QueueUrl=q)
assert "QueueUrls" not in sqs.list_queues(), "the deleted queue is still listed"
print("ok")
