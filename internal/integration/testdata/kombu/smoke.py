"""Smoke test of fifoq through kombu's SQS transport (Debian's python3-kombu,
5.2, the transport Celery uses). kombu creates queues and sends through
boto3 (Debian's: AWS Query), and a consumer on kombu's event loop receives
through kombu's own asynchronous HTTP client: form-encoded Query requests
posted to the queue's URL, whose XML answers botocore parses.
Usage: python3 smoke.py ENDPOINT. Prints "ok"."""
import sys
import time
from urllib.parse import urlparse

from kombu import Connection, Consumer, Exchange, Producer, Queue
from kombu.asynchronous import Hub, set_event_loop
from kombu.asynchronous.aws.sqs import connection as asyncsqs

# Count the receives that go through kombu's asynchronous Query client, so
# that the test fails if kombu ever fell back to boto3 for them.
async_receives = []
_receive = asyncsqs.AsyncSQSConnection.receive_message
def counting_receive(self, *args, **kwargs):
    async_receives.append(1)
    return _receive(self, *args, **kwargs)
asyncsqs.AsyncSQSConnection.receive_message = counting_receive

endpoint = urlparse(sys.argv[1])
hub = Hub()
set_event_loop(hub)
conn = Connection(
    f"sqs://test:test@{endpoint.hostname}:{endpoint.port}",
    transport_options={
        "region": "us-east-1", "is_secure": False,
        "wait_time_seconds": 1, "polling_interval": 0.1,
        # CreateQueue with attributes beyond kombu's own FifoQueue and
        # VisibilityTimeout.
        "sqs-creation-attributes": {"ContentBasedDeduplication": "false"},
    })
conn.connect()
name = "kombu-orders.fifo"
queue = Queue(name, Exchange(name, type="direct"), routing_key=name)
producer = Producer(conn.channel())
for i in range(3):
    producer.publish({"n": i}, exchange=queue.exchange, routing_key=name, declare=[queue],
                     MessageGroupId="g", MessageDeduplicationId=f"d{i}")

channel = conn.channel()
sqs = channel.sqs(queue=name)
url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
assert url.endswith("/000000000000/" + name), url
attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
assert attrs["FifoQueue"] == "true" and attrs["ContentBasedDeduplication"] == "false", attrs

got, counts = [], []
def on_message(body, message):
    counts.append(message.delivery_info["sqs_message"]["Attributes"]["ApproximateReceiveCount"])
    if body["n"] == 0 and not message.delivery_info.get("redelivered") and len(got) == 0 and counts == ["1"]:
        # The first delivery of the first message goes back to the queue:
        # kombu sets its visibility timeout to 0 (ChangeMessageVisibility).
        got.append("requeued")
        message.requeue()
        return
    got.append(body["n"])
    message.ack()  # DeleteMessage

conn.register_with_event_loop(hub)
# One message per receive, so that the order of deliveries is the queue's:
# a FIFO group hands out its requeued first message again before the rest.
consumer = Consumer(channel, [queue], callbacks=[on_message], accept=["json"], prefetch_count=1)
consumer.consume()
deadline = time.time() + 30
while len(got) < 4 and time.time() < deadline:
    hub.run_once()
assert got == ["requeued", 0, 1, 2], (got, counts)
assert counts[:2] == ["1", "2"], counts
assert async_receives, "no receive went through kombu's asynchronous client"

consumer.cancel()
queue(channel).delete()  # kombu's delete purges the queue (PurgeQueue)
assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])[
    "Attributes"]["ApproximateNumberOfMessages"] == "0"
sqs.delete_queue(QueueUrl=url)  # through the boto3 client kombu made
try:
    sqs.get_queue_url(QueueName=name)
except sqs.exceptions.QueueDoesNotExist:
    pass
else:
    raise AssertionError("the deleted queue is still there")
conn.release()
print("ok")
