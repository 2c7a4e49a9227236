// Smoke test of fifoq through the AWS SDK for JavaScript v3
// (@aws-sdk/client-sqs, AWS JSON 1.0) and the sqs-producer / sqs-consumer
// libraries built on it. Usage: node smoke.js ENDPOINT. Prints "ok".
"use strict";
const assert = require("node:assert/strict");
const sqs = require("@aws-sdk/client-sqs");
const { Producer } = require("sqs-producer");
const { Consumer } = require("sqs-consumer");

const endpoint = process.argv[2];
const client = new sqs.SQSClient({
  endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
});
const call = (Command, input) => client.send(new Command(input));

async function main() {
  const { QueueUrl: q } = await call(sqs.CreateQueueCommand, {
    QueueName: "jsv3.fifo",
    Attributes: { FifoQueue: "true", VisibilityTimeout: "30" },
  });
  assert.match(q, /\/000000000000\/jsv3\.fifo$/);

  const sent = await call(sqs.SendMessageCommand, {
    QueueUrl: q, MessageBody: "one", MessageGroupId: "g", MessageDeduplicationId: "d1",
    MessageAttributes: { k: { DataType: "String", StringValue: "v" } },
  });
  assert.ok(sent.MessageId && sent.SequenceNumber && sent.MD5OfMessageAttributes, JSON.stringify(sent));
  const batch = await call(sqs.SendMessageBatchCommand, {
    QueueUrl: q,
    Entries: [
      { Id: "a", MessageBody: "two", MessageGroupId: "g", MessageDeduplicationId: "d2" },
      { Id: "b", MessageBody: "three", MessageGroupId: "g", MessageDeduplicationId: "d3" },
    ],
  });
  assert.equal(batch.Successful.length, 2, JSON.stringify(batch));
  assert.ok(!batch.Failed || batch.Failed.length === 0, JSON.stringify(batch));

  const got = await call(sqs.ReceiveMessageCommand, {
    QueueUrl: q, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
    MessageSystemAttributeNames: ["All"], MessageAttributeNames: ["All"],
  });
  assert.deepEqual(got.Messages.map((m) => m.Body), ["one", "two", "three"]);
  const [m1, m2, m3] = got.Messages;
  assert.equal(m1.MessageId, sent.MessageId);
  assert.equal(m1.Attributes.MessageGroupId, "g");
  assert.equal(m1.Attributes.MessageDeduplicationId, "d1");
  assert.equal(m1.Attributes.ApproximateReceiveCount, "1");
  assert.equal(m1.MessageAttributes.k.StringValue, "v");
  assert.equal(m1.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);

  await call(sqs.DeleteMessageCommand, { QueueUrl: q, ReceiptHandle: m1.ReceiptHandle });
  const vis = await call(sqs.ChangeMessageVisibilityBatchCommand, {
    QueueUrl: q, Entries: [{ Id: "v", ReceiptHandle: m3.ReceiptHandle, VisibilityTimeout: 0 }],
  });
  assert.deepEqual(vis.Successful, [{ Id: "v" }], JSON.stringify(vis));
  await call(sqs.ChangeMessageVisibilityCommand, { QueueUrl: q, ReceiptHandle: m2.ReceiptHandle, VisibilityTimeout: 0 });
  const again = await call(sqs.ReceiveMessageCommand, { QueueUrl: q, MaxNumberOfMessages: 10 });
  assert.deepEqual(again.Messages.map((m) => m.Body), ["two", "three"]);
  const del = await call(sqs.DeleteMessageBatchCommand, {
    QueueUrl: q, Entries: again.Messages.map((m, i) => ({ Id: "m" + i, ReceiptHandle: m.ReceiptHandle })),
  });
  assert.equal(del.Successful.length, 2, JSON.stringify(del));
  const empty = await call(sqs.ReceiveMessageCommand, { QueueUrl: q, WaitTimeSeconds: 0 });
  assert.ok(!empty.Messages || empty.Messages.length === 0, JSON.stringify(empty));

  // sqs-producer sends, sqs-consumer receives and deletes.
  const producer = Producer.create({ queueUrl: q, sqs: client });
  await producer.send([{ id: "p1", body: "produced", groupId: "g2", deduplicationId: "p1" }]);
  const bodies = await new Promise((resolve, reject) => {
    const seen = [];
    const consumer = Consumer.create({
      queueUrl: q, sqs: client, waitTimeSeconds: 1, suppressFifoWarning: true,
      handleMessage: async (m) => { seen.push(m.Body); consumer.stop(); return m; },
    });
    consumer.on("error", reject);
    consumer.on("processing_error", reject);
    consumer.on("stopped", () => resolve(seen));
    consumer.start();
  });
  assert.deepEqual(bodies, ["produced"]);

  await assert.rejects(
    call(sqs.GetQueueUrlCommand, { QueueName: "no-such-queue" }),
    (e) => e instanceof sqs.QueueDoesNotExist && e.Code === "AWS.SimpleQueueService.NonExistentQueue" &&
      e.$metadata.httpStatusCode === 400,
  );
  await call(sqs.DeleteQueueCommand, { QueueUrl: q });
  await assert.rejects(
    call(sqs.GetQueueAttributesCommand, { QueueUrl: q, AttributeNames: ["All"] }),
    (e) => e instanceof sqs.QueueDoesNotExist,
  );
  const listed = await call(sqs.ListQueuesCommand, {});
  assert.ok(!listed.QueueUrls || listed.QueueUrls.length === 0, JSON.stringify(listed));
  console.log("ok");
}

main().catch((e) => { console.error(e); process.exit(1); });
