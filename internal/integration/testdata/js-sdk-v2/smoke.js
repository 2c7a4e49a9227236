// Smoke test of fifoq through the AWS SDK for JavaScript v2 (the aws-sdk
// package; its SQS client speaks AWS JSON 1.0 since 2.1530).
// Usage: node smoke.js ENDPOINT. Prints "ok".
"use strict";
const assert = require("node:assert/strict");
require("aws-sdk/lib/maintenance_mode_message").suppress = true;
const AWS = require("aws-sdk");

const sqs = new AWS.SQS({
  endpoint: process.argv[2],
  region: "us-east-1",
  credentials: new AWS.Credentials("test", "test"),
  maxRetries: 0,
});
const call = (op, input) => sqs[op](input).promise();

async function main() {
  const { QueueUrl: q } = await call("createQueue", {
    QueueName: "jsv2.fifo",
    Attributes: { FifoQueue: "true", VisibilityTimeout: "30" },
  });
  assert.match(q, /\/000000000000\/jsv2\.fifo$/);

  const sent = await call("sendMessage", {
    QueueUrl: q, MessageBody: "one", MessageGroupId: "g", MessageDeduplicationId: "d1",
    MessageAttributes: { k: { DataType: "String", StringValue: "v" } },
  });
  assert.ok(sent.MessageId && sent.SequenceNumber && sent.MD5OfMessageAttributes, JSON.stringify(sent));
  const batch = await call("sendMessageBatch", {
    QueueUrl: q,
    Entries: [
      { Id: "a", MessageBody: "two", MessageGroupId: "g", MessageDeduplicationId: "d2" },
      { Id: "b", MessageBody: "three", MessageGroupId: "g", MessageDeduplicationId: "d3" },
    ],
  });
  assert.equal(batch.Successful.length, 2, JSON.stringify(batch));
  assert.ok(!batch.Failed || batch.Failed.length === 0, JSON.stringify(batch));

  const got = await call("receiveMessage", {
    QueueUrl: q, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
    AttributeNames: ["All"], MessageAttributeNames: ["All"],
  });
  assert.deepEqual(got.Messages.map((m) => m.Body), ["one", "two", "three"]);
  const [m1, m2, m3] = got.Messages;
  assert.equal(m1.MessageId, sent.MessageId);
  assert.equal(m1.Attributes.MessageGroupId, "g");
  assert.equal(m1.Attributes.MessageDeduplicationId, "d1");
  assert.equal(m1.MessageAttributes.k.StringValue, "v");
  assert.equal(m1.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);

  await call("deleteMessage", { QueueUrl: q, ReceiptHandle: m1.ReceiptHandle });
  const vis = await call("changeMessageVisibilityBatch", {
    QueueUrl: q, Entries: [{ Id: "v", ReceiptHandle: m3.ReceiptHandle, VisibilityTimeout: 0 }],
  });
  assert.deepEqual(vis.Successful, [{ Id: "v" }], JSON.stringify(vis));
  await call("changeMessageVisibility", { QueueUrl: q, ReceiptHandle: m2.ReceiptHandle, VisibilityTimeout: 0 });
  const again = await call("receiveMessage", { QueueUrl: q, MaxNumberOfMessages: 10 });
  assert.deepEqual(again.Messages.map((m) => m.Body), ["two", "three"]);
  const del = await call("deleteMessageBatch", {
    QueueUrl: q, Entries: again.Messages.map((m, i) => ({ Id: "m" + i, ReceiptHandle: m.ReceiptHandle })),
  });
  assert.equal(del.Successful.length, 2, JSON.stringify(del));
  const empty = await call("receiveMessage", { QueueUrl: q, WaitTimeSeconds: 0 });
  assert.ok(!empty.Messages || empty.Messages.length === 0, JSON.stringify(empty));

  await assert.rejects(call("getQueueUrl", { QueueName: "no-such-queue" }),
    (e) => e.code === "AWS.SimpleQueueService.NonExistentQueue" && e.statusCode === 400);
  await call("deleteQueue", { QueueUrl: q });
  console.log("ok");
}

main().catch((e) => { console.error(e); process.exit(1); });
