"""The scenario of split_answers_test.go through boto3 (AWS JSON, with
botocore's own retries): run on one queue, it prints, as a JSON list, what
the client saw, in the neutral form that lets a split queue's transcript be
compared with a plain queue's. It asserts what SQS promises whatever the
queue's throughput mode (each group's order, no group delivered while in
flight) and exits non-zero where that breaks.

    python3 split_answers_boto3.py ENDPOINT QUEUE_URL FOREIGN_HANDLE
"""
import json
import re
import sys

import boto3
import botocore.config
from botocore.exceptions import ClientError

endpoint, url, foreign = sys.argv[1], sys.argv[2], sys.argv[3]
name = url.rsplit("/", 1)[1]
sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test",
                   config=botocore.config.Config(retries={"mode": "standard", "max_attempts": 10}))
lines = []
ids = {}


def nid(v):
    if v not in ids:
        ids[v] = "m%d" % (len(ids) + 1)
    return ids[v]


def add(line):
    line = line.replace(name, "Q")
    lines.append(re.sub(r"127\.0\.0\.1:[0-9]+", "M", line))


def err(e):
    r = e.response
    return "error %d %s (%s): %s" % (r["ResponseMetadata"]["HTTPStatusCode"], r["Error"].get("Code"),
                                    r["Error"].get("Type"), r["Error"].get("Message"))


def call(what, fn, **kw):
    try:
        return fn(QueueUrl=url, **kw)
    except ClientError as e:
        add("%s: %s" % (what, err(e)))
        return None


def entry(i, group, body):
    return {"Id": i, "MessageBody": body, "MessageGroupId": group, "MessageDeduplicationId": "d-" + body}


for group, body, dedup in [("g1", "a1", "d1"), ("g1", "a1-again", "d1"), ("g2", "b1", "d1"), ("g1", "a2", "d2")]:
    out = call("send", sqs.send_message, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=dedup)
    if out:
        add("send %s/%s: id %s md5 %s" % (group, body, nid(out["MessageId"]), out["MD5OfMessageBody"]))
ten = [entry("e%d" % i, "g%d" % (i + 3), "c%d" % i) for i in range(10)]
nodedup = [entry("ok", "g3", "y3"), entry("nodedup", "g4", "y4")]
del nodedup[1]["MessageDeduplicationId"]
nogroup = [entry("ok", "g3", "y5"), entry("nogroup", "g4", "y6")]
del nogroup[1]["MessageGroupId"]
for what, entries in [("ten groups", ten), ("ten groups again", ten), ("ids not distinct", [entry("x", "g3", "z1"), entry("x", "g4", "z2")]),
                      ("eleven", ten + [entry("e10", "g13", "c10")]), ("one without a deduplication id", nodedup),
                      ("one without a group", nogroup)]:
    out = call("batch " + what, sqs.send_message_batch, Entries=entries)
    if out:
        for e in out.get("Successful", []):
            add("batch %s: %s ok, id %s md5 %s" % (what, e["Id"], nid(e["MessageId"]), e["MD5OfMessageBody"]))
        for e in out.get("Failed", []):
            add("batch %s: %s failed, %s %s" % (what, e["Id"], e["Code"], e["SenderFault"]))


def attrs(what, names):
    out = call("attributes " + what, sqs.get_queue_attributes, AttributeNames=names)
    if out:
        for k, v in sorted(out["Attributes"].items()):
            if k in ("CreatedTimestamp", "LastModifiedTimestamp"):
                v = "<time>"
            if k != "FifoThroughputLimit":
                add("attributes %s: %s=%s" % (what, k, v))


attrs("after the sends", ["All"])

in_flight = []  # (group, body, handle), in the order received
received = {}


def receive(attempt, n=10):
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=n, WaitTimeSeconds=1, VisibilityTimeout=60,
                               ReceiveRequestAttemptId=attempt, MessageSystemAttributeNames=["All"]).get("Messages", [])


def take(msgs):
    before = {g for g, _, _ in in_flight}
    for m in msgs:
        g = m["Attributes"]["MessageGroupId"]
        assert g not in before, "received %s of group %s while one of the group is in flight" % (m["Body"], g)
        in_flight.append((g, m["Body"], m["ReceiptHandle"]))
        received.setdefault(g, []).append(m["Body"])


first = receive("r1")
again = receive("r1")
add("receive r1: something %s; retried alike: %s" % (bool(first), sorted(m["MessageId"] for m in first) == sorted(m["MessageId"] for m in again)))
take(first)
take(receive("r2"))
batch = [{"Id": "del-%d" % i, "ReceiptHandle": h} for i, (_, _, h) in enumerate(in_flight[:9])]
kept = len(batch)
out = call("delete batch", sqs.delete_message_batch, Entries=batch + [{"Id": "garbage", "ReceiptHandle": "garbage"}])
if out:
    add("delete batch: %d of %d ok" % (len(out.get("Successful", [])), kept))
    for f in out.get("Failed", []):
        add("delete batch: %s failed, %s %s: %s" % (f["Id"], f["Code"], f["SenderFault"], f.get("Message")))
    in_flight = in_flight[kept:]
for rnd in range(30):
    for _, _, h in in_flight:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=h)
    in_flight = []
    msgs = receive("r-drain-%d" % rnd)
    if not msgs:
        break
    take(msgs)
else:
    raise AssertionError("still receiving after 30 rounds")
for g in sorted(received):
    add("group %s received in order: %s" % (g, ",".join(received[g])))

sqs.send_message(QueueUrl=url, MessageBody="v1", MessageGroupId="g20", MessageDeduplicationId="v1")
vis = receive("r-vis", 1)
assert len(vis) == 1, vis
out = call("visibility batch", sqs.change_message_visibility_batch, Entries=[
    {"Id": "good", "ReceiptHandle": vis[0]["ReceiptHandle"], "VisibilityTimeout": 30},
    {"Id": "bad", "ReceiptHandle": "INVALID", "VisibilityTimeout": 30}])
if out:
    for e in out.get("Successful", []):
        add("visibility batch: %s ok" % e["Id"])
    for f in out.get("Failed", []):
        add("visibility batch: %s failed, %s %s: %s" % (f["Id"], f["Code"], f["SenderFault"], f.get("Message")))
for what, fn, kw in [("delete by no handle", sqs.delete_message, {"ReceiptHandle": "garbage"}),
                     ("delete by another queue's handle", sqs.delete_message, {"ReceiptHandle": foreign}),
                     ("change visibility by another queue's handle", sqs.change_message_visibility,
                      {"ReceiptHandle": foreign, "VisibilityTimeout": 10}),
                     ("delete v1", sqs.delete_message, {"ReceiptHandle": vis[0]["ReceiptHandle"]}),
                     ("delete v1 again", sqs.delete_message, {"ReceiptHandle": vis[0]["ReceiptHandle"]})]:
    if call(what, fn, **kw) is not None:
        add("%s: ok" % what)

for i in range(3):
    sqs.send_message(QueueUrl=url, MessageBody="p%d" % i, MessageGroupId="g%d" % (30 + i), MessageDeduplicationId="p%d" % i)
attrs("before the purge", ["ApproximateNumberOfMessages"])
for n in (1, 2):
    if call("purge %d" % n, sqs.purge_queue) is not None:
        add("purge %d: ok" % n)
attrs("after the purge", ["ApproximateNumberOfMessages"])
sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "45", "DelaySeconds": "2"})
attrs("after setting", ["VisibilityTimeout", "DelaySeconds"])
sqs.tag_queue(QueueUrl=url, Tags={"team": "a", "env": "test"})
sqs.untag_queue(QueueUrl=url, TagKeys=["env"])
add("tags: %s" % json.dumps(sqs.list_queue_tags(QueueUrl=url).get("Tags"), sort_keys=True))
add("list: %s" % sqs.list_queues(QueueNamePrefix=name).get("QueueUrls"))
add("url: %s" % sqs.get_queue_url(QueueName=name)["QueueUrl"])
sqs.delete_queue(QueueUrl=url)
if call("send to the deleted queue", sqs.send_message, MessageBody="late", MessageGroupId="g1", MessageDeduplicationId="late") is not None:
    add("send to the deleted queue: ok")
print(json.dumps(lines))
