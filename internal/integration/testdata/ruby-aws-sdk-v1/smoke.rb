# Smoke test of fifoq through Debian's ruby-aws-sdk (the AWS SDK for Ruby
# v1, 1.67, AWS Query). That SDK predates FIFO queues: its request
# validation refuses MessageGroupId, so it drives a standard queue.
# Usage: ruby smoke.rb ENDPOINT. Prints "ok".
require "aws-sdk"
require "uri"

def check(ok, what)
  abort("FAILED: #{what}") unless ok
end

AWS.config(access_key_id: "test", secret_access_key: "test", region: "us-east-1",
           credential_provider: AWS::Core::CredentialProviders::StaticProvider.new(
             access_key_id: "test", secret_access_key: "test"))
endpoint = URI(ARGV[0])
sqs = AWS::SQS::Client.new(sqs_endpoint: endpoint.host, sqs_port: endpoint.port, use_ssl: false,
                           max_retries: 0)

q = sqs.create_queue(queue_name: "ruby-orders", attributes: { "VisibilityTimeout" => "30" })[:queue_url]
check(q.end_with?("/000000000000/ruby-orders"), "CreateQueue returns the queue URL: #{q}")
sent = sqs.send_message(queue_url: q, message_body: "one",
                        message_attributes: { "k" => { data_type: "String", string_value: "v" } })
check(sent[:message_id] && sent[:md5_of_message_attributes], "SendMessage: #{sent.inspect}")
batch = sqs.send_message_batch(queue_url: q, entries: [
  { id: "a", message_body: "two" }, { id: "b", message_body: "three" }
])
check(batch[:successful].size == 2 && batch[:failed].empty?, "SendMessageBatch: #{batch.inspect}")

got = []
3.times do
  got += sqs.receive_message(queue_url: q, max_number_of_messages: 10, wait_time_seconds: 1,
                             attribute_names: ["All"], message_attribute_names: ["All"])[:messages]
  break if got.size == 3
end
check(got.map { |m| m[:body] }.sort == %w[one three two], "ReceiveMessage: #{got.inspect}")
m1 = got.find { |m| m[:body] == "one" }
check(m1[:message_id] == sent[:message_id], "the message sent is received")
check(m1[:attributes]["ApproximateReceiveCount"] == "1", "attributes: #{m1[:attributes].inspect}")
check(m1[:message_attributes]["k"][:string_value] == "v", "message attributes: #{m1[:message_attributes].inspect}")
check(m1[:md5_of_message_attributes] == sent[:md5_of_message_attributes], "MD5OfMessageAttributes")
others = got - [m1]

sqs.delete_message(queue_url: q, receipt_handle: m1[:receipt_handle])
vis = sqs.change_message_visibility_batch(queue_url: q, entries: [
  { id: "v", receipt_handle: others[0][:receipt_handle], visibility_timeout: 0 }
])
check(vis[:successful] == [{ id: "v" }] && vis[:failed].empty?, "ChangeMessageVisibilityBatch: #{vis.inspect}")
sqs.change_message_visibility(queue_url: q, receipt_handle: others[1][:receipt_handle], visibility_timeout: 0)
again = []
3.times do
  again += sqs.receive_message(queue_url: q, max_number_of_messages: 10, wait_time_seconds: 1)[:messages]
  break if again.size == 2
end
check(again.size == 2, "the two messages made visible again are received: #{again.inspect}")
deleted = sqs.delete_message_batch(queue_url: q, entries: again.each_with_index.map { |m, i|
  { id: "m#{i}", receipt_handle: m[:receipt_handle] }
})
check(deleted[:successful].size == 2 && deleted[:failed].empty?, "DeleteMessageBatch: #{deleted.inspect}")
check(sqs.receive_message(queue_url: q)[:messages].empty?, "the queue is empty")

begin
  sqs.get_queue_url(queue_name: "no-such-queue")
  abort("FAILED: GetQueueUrl of a missing queue succeeded")
rescue AWS::SQS::Errors::NonExistentQueue => e
  check(e.code == "AWS.SimpleQueueService.NonExistentQueue" && e.http_response.status == 400,
        "error #{e.code} #{e.http_response.status}")
end
sqs.delete_queue(queue_url: q)
check(!sqs.list_queues[:queue_urls].include?(q), "the deleted queue is no longer listed")
puts "ok"
