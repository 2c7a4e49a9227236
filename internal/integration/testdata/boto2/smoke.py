"""Smoke test of fifoq through boto 2 (Debian's python3-boto, 2.49), the
classic Python AWS library, which speaks AWS Query and posts queue actions
to the queue's path. boto 2 predates FIFO queues: its high-level calls have
no MessageGroupId, so the FIFO-only requests go through boto's own generic
Query request method (get_object / get_status) with the parameters spelled
out, and everything else through its high-level API.
Usage: python3 smoke.py ENDPOINT. Prints "ok"."""
import sys
from urllib.parse import urlparse

from boto.regioninfo import RegionInfo
from boto.sqs.connection import SQSConnection
from boto.sqs.message import RawMessage
from boto.sqs.queue import Queue
from boto.exception import SQSError

endpoint = urlparse(sys.argv[1])
conn = SQSConnection("test", "test", is_secure=False, port=endpoint.port,
                     region=RegionInfo(name="us-east-1", endpoint=endpoint.hostname))

# CreateQueue with attributes (boto 2's create_queue takes only a visibility
# timeout, so the request is spelled out).
q = conn.get_object("CreateQueue", {
    "QueueName": "boto2.fifo",
    "Attribute.1.Name": "FifoQueue", "Attribute.1.Value": "true",
    "Attribute.2.Name": "VisibilityTimeout", "Attribute.2.Value": "30",
}, Queue)
q.set_message_class(RawMessage)
assert q.url.endswith("/000000000000/boto2.fifo"), q.url
assert conn.get_queue_attributes(q, "FifoQueue")["FifoQueue"] == "true"

def send(body, dedup):
    return conn.get_object("SendMessage", {
        "MessageBody": body, "MessageGroupId": "g", "MessageDeduplicationId": dedup,
        "MessageAttribute.1.Name": "k", "MessageAttribute.1.Value.DataType": "String",
        "MessageAttribute.1.Value.StringValue": "v",
    }, RawMessage, q.id, verb="POST")

sent = send("one", "d1")
assert sent.id, sent
batch = conn.get_object("SendMessageBatch", {
    "SendMessageBatchRequestEntry.1.Id": "a", "SendMessageBatchRequestEntry.1.MessageBody": "two",
    "SendMessageBatchRequestEntry.1.MessageGroupId": "g", "SendMessageBatchRequestEntry.1.MessageDeduplicationId": "d2",
    "SendMessageBatchRequestEntry.2.Id": "b", "SendMessageBatchRequestEntry.2.MessageBody": "three",
    "SendMessageBatchRequestEntry.2.MessageGroupId": "g", "SendMessageBatchRequestEntry.2.MessageDeduplicationId": "d3",
}, __import__("boto.sqs.batchresults", fromlist=["BatchResults"]).BatchResults, q.id, verb="POST")
assert [r["id"] for r in batch.results] == ["a", "b"] and not batch.errors, (batch.results, batch.errors)

got = conn.receive_message(q, number_messages=10, wait_time_seconds=1,
                           attributes="All", message_attributes=["All"])
assert [m.get_body() for m in got] == ["one", "two", "three"], [m.get_body() for m in got]
m1, m2, m3 = got
assert m1.id == sent.id
assert m1.attributes["MessageGroupId"] == "g", m1.attributes
assert m1.attributes["MessageDeduplicationId"] == "d1", m1.attributes
assert m1.attributes["ApproximateReceiveCount"] == "1", m1.attributes
assert m1.message_attributes["k"]["string_value"] == "v", m1.message_attributes
assert m1.md5_message_attributes == sent.md5_message_attributes, (m1.md5_message_attributes, sent.md5_message_attributes)

assert conn.delete_message(q, m1)
# boto 2 collects only result elements whose names end in
# "MessageBatchResultEntry", so it never sees SQS's
# ChangeMessageVisibilityBatchResultEntry (the model's name, which AWS
# sends): its results stay empty here as against AWS, and only the absence
# of errors can be checked.
vis = conn.change_message_visibility_batch(q, [(m3, 0)])
assert not vis.errors, vis.errors
assert conn.change_message_visibility(q, m2.receipt_handle, 0)
again = conn.receive_message(q, number_messages=10)
assert [m.get_body() for m in again] == ["two", "three"], [m.get_body() for m in again]
deleted = conn.delete_message_batch(q, again)
assert len(deleted.results) == 2 and not deleted.errors, (deleted.results, deleted.errors)
assert conn.receive_message(q, number_messages=10) == []

try:
    conn.get_queue_attributes(Queue(conn, sys.argv[1] + "/000000000000/no-such-queue"))
except SQSError as e:
    assert e.status == 400 and e.error_code == "AWS.SimpleQueueService.NonExistentQueue", (e.status, e.error_code)
else:
    raise AssertionError("GetQueueAttributes of a missing queue succeeded")
assert conn.get_queue("no-such-queue") is None  # boto 2 maps the error to None
assert conn.delete_queue(q)
assert conn.get_all_queues() == []
print("ok")
