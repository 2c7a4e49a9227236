package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/fifoq/fifoq/internal/auth"
)

// This file holds the recorded answers about the wire protocols: which
// name an error has in each protocol (the AWS JSON __type, the Query code
// that AWS JSON answers carry in x-amzn-query-error, the Query wording),
// and how SQS answers Query requests sent to a queue's URL, without an
// action or with one that does not belong there.

// TestRecordedErrorIdentities replays recorded errors whose names differ
// between the protocols: boto3 showed the JSON answers' x-amzn-query-error
// code as Error.Code and their __type as Error.QueryErrorCode.
func TestRecordedErrorIdentities(t *testing.T) {
	runRecorded(t, []recordedCase{
		{
			name:   "receive more than 10 messages",
			source: "localstack test_sqs.snapshot.json: test_send_receive_max_number_of_messages/send_max_number_of_messages",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "eleven", nil)
				return "ReceiveMessage", params{"QueueUrl": u, "MaxNumberOfMessages": 11}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Type: "InvalidParameterValueException",
				Message: "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided."},
		},
		{
			name: "fifo send without a message group id",
			source: "localstack test_sqs.snapshot.json: test_posting_to_fifo_requires_deduplicationid_group_id/missing-parameter " +
				"and /missing-parameter-query",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "groupless.fifo", map[string]string{"FifoQueue": "true"})
				return "SendMessage", params{"QueueUrl": u, "MessageBody": "b", "MessageDeduplicationId": "d"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "MissingParameter", Type: "MissingRequiredParameterException",
				Message: "The request must contain the parameter MessageGroupId."},
		},
		{
			name: "fifo send without a deduplication id",
			source: "localstack test_sqs.snapshot.json: test_posting_to_fifo_requires_deduplicationid_group_id/invalid-parameter-value " +
				"and /invalid-parameter-value-query",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "dedupless.fifo", map[string]string{"FifoQueue": "true"})
				return "SendMessage", params{"QueueUrl": u, "MessageBody": "b", "MessageGroupId": "g"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Type: "InvalidParameterValueException",
				Message: "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"},
		},
		{
			name: "missing queue by name",
			source: "localstack test_sqs.snapshot.json: test_non_existent_queue/queue-does-not-exist " +
				"and /queue-does-not-exist-query",
			call: func(t *testing.T, s *scene) (string, params) {
				return "GetQueueUrl", params{"QueueName": "no-such-queue"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.NonExistentQueue", Type: "QueueDoesNotExist",
				Message:      "The specified queue does not exist.",
				QueryMessage: "The specified queue does not exist for this wsdl version."},
		},
		{
			name: "missing queue by url",
			source: "localstack test_sqs.snapshot.json: test_non_existent_queue/queue-does-not-exist-url; " +
				"Query wording: localstack test_sqs.py TestSqsQueryApi::test_get_on_deleted_queue_fails (aws validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				return "GetQueueAttributes", params{"QueueUrl": s.env.URL + "/" + Account + "/no-such-queue", "AttributeNames": []string{"All"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.NonExistentQueue", Type: "QueueDoesNotExist",
				Message:      "The specified queue does not exist.",
				QueryMessage: "The specified queue does not exist for this wsdl version."},
		},
		{
			name:   "too many entries in a batch",
			source: "localstack test_sqs.snapshot.json: test_delete_message_batch_with_too_large_batch/error_response",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "twenty", nil)
				var entries []params
				for i := range 20 {
					entries = append(entries, params{"Id": "e" + strings.Repeat("x", i), "ReceiptHandle": "h"})
				}
				return "DeleteMessageBatch", params{"QueueUrl": u, "Entries": entries}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", Type: "TooManyEntriesInBatchRequest",
				Message: "Maximum number of entries per request are 10. You have sent 20."},
		},
		{
			name:   "invalid batch entry id",
			source: "localstack test_sqs.snapshot.json: test_delete_message_batch_invalid_msg_id[invalid:id]/error_response",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "badid", nil)
				return "DeleteMessageBatch", params{"QueueUrl": u, "Entries": []params{{"Id": "invalid:id", "ReceiptHandle": "h"}}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.InvalidBatchEntryId", Type: "InvalidBatchEntryId",
				Message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		},
		{
			name: "unknown attribute name",
			source: "localstack test_sqs.py TestSqsQueryApi::test_get_queue_attributes_with_invalid_arg_returns_error (aws validated); " +
				"JSON name: localstack test_sqs.snapshot.json: test_set_unsupported_attribute_fifo/invalid-attr-name-1",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "attrs", nil)
				return "GetQueueAttributes", params{"QueueUrl": u, "AttributeNames": []string{"Foobar"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName", Message: "Unknown Attribute Foobar."},
		},
	})
}

// queryAt sends a Query request to a URL of the server (a queue's URL, or
// the endpoint) as a GET with the given query string, as the recordings of
// LocalStack's TestSqsQueryApi did, with any extra headers.
func queryAt(t *testing.T, env *Env, method, u string, q url.Values, header map[string]string) rawResponse {
	t.Helper()
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return rawDo(t, env, req)
}

// wantQueryError fails the test unless r is a Query ErrorResponse with
// status, code and a message that starts with msg, and fault Sender.
func wantQueryError(t *testing.T, r rawResponse, status int, code, msg, source string) {
	t.Helper()
	got := decodeErrorAnswer(t, "query", r)
	if r.status != status || got.code != code || got.fault != "Sender" || !strings.HasPrefix(got.message, msg) {
		t.Errorf("HTTP %d %s (%s) %q, recorded %d %s (Sender) %q... (%s)", r.status, got.code, got.fault, got.message, status, code, msg, source)
	}
}

// wantQueryOK fails the test unless r is a 200 answer whose body holds
// every one of parts.
func wantQueryOK(t *testing.T, r rawResponse, source string, parts ...string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("HTTP %d, recorded 200 (%s): %.400s", r.status, source, r.body)
	}
	for _, p := range parts {
		if !strings.Contains(string(r.body), p) {
			t.Errorf("answer lacks %q (%s): %.600s", p, source, r.body)
		}
	}
}

// TestRecordedQueryAtQueueURL replays the Query requests that LocalStack's
// TestSqsQueryApi sent to a queue's URL against AWS (marked aws validated
// in tests/aws/services/sqs/test_sqs.py), with what AWS answered.
func TestRecordedQueryAtQueueURL(t *testing.T) {
	t.Parallel()
	env := Start(t)
	c := v1Client{env.V1}
	q := mustCreate(t, c, "at-url", nil)
	other := mustCreate(t, c, "at-url-other", nil)
	fifo := mustCreate(t, c, "at-url.fifo", map[string]string{"FifoQueue": "true"})
	get := func(t *testing.T, u string, kv ...string) rawResponse {
		t.Helper()
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return queryAt(t, env, http.MethodGet, u, v, nil)
	}

	t.Run("no query string", func(t *testing.T) {
		const source = "localstack test_sqs.py TestSqsQueryApi::test_get_without_query_returns_unknown_operation"
		for _, accept := range []string{"", "application/json"} {
			// With Accept: application/json the answer is the same XML
			// (test_get_without_query_json_format_returns_returns_xml).
			r := queryAt(t, env, http.MethodGet, q, nil, map[string]string{"Accept": accept})
			if r.status != http.StatusNotFound || !strings.Contains(string(r.body), "<UnknownOperationException") {
				t.Errorf("Accept %q: HTTP %d %q, recorded 404 <UnknownOperationException/> (%s)", accept, r.status, r.body, source)
			}
		}
	})
	t.Run("unknown action", func(t *testing.T) {
		wantQueryError(t, get(t, q, "Action", "FooBar", "Version", "2012-11-05"), http.StatusBadRequest,
			"InvalidAction", "The action FooBar is not valid for this endpoint.",
			"localstack test_sqs.py TestSqsQueryApi::test_invalid_action_raises_exception")
	})
	t.Run("missing parameter", func(t *testing.T) {
		wantQueryError(t, get(t, q, "Action", "SendMessage"), http.StatusBadRequest,
			"MissingParameter", "The request must contain the parameter MessageBody.",
			"localstack test_sqs.py TestSqsQueryApi::test_valid_action_with_missing_parameter_raises_exception")
	})
	t.Run("create queue at a queue url", func(t *testing.T) {
		wantQueryError(t, get(t, q, "Action", "CreateQueue", "QueueName", "at-url-new"), http.StatusBadRequest,
			"InvalidAction", "The action CreateQueue is not valid for this endpoint",
			"localstack test_sqs.py TestSqsQueryApi::test_get_create_queue_fails")
		if _, err := c.GetQueueURL(ctxT(t), "at-url-new"); err == nil {
			t.Error("the refused CreateQueue created its queue")
		}
	})
	t.Run("list queues at a queue url", func(t *testing.T) {
		wantQueryError(t, get(t, q, "Action", "ListQueues"), http.StatusBadRequest,
			"InvalidAction", "The action ListQueues is not valid for this endpoint",
			"localstack test_sqs.py TestSqsQueryApi::test_get_list_queues_fails")
	})
	t.Run("unknown attribute", func(t *testing.T) {
		wantQueryError(t, get(t, q, "Action", "GetQueueAttributes", "AttributeName.1", "Foobar"), http.StatusBadRequest,
			"InvalidAttributeName", "Unknown Attribute Foobar.",
			"localstack test_sqs.py TestSqsQueryApi::test_get_queue_attributes_with_invalid_arg_returns_error")
	})
	t.Run("attributes", func(t *testing.T) {
		wantQueryOK(t, get(t, q, "Action", "GetQueueAttributes", "AttributeName.1", "All"),
			"localstack test_sqs.py TestSqsQueryApi::test_get_queue_attributes_all",
			"<GetQueueAttributesResponse", "<Attribute><Name>QueueArn</Name><Value>arn:aws:sqs:",
			"<Attribute><Name>VisibilityTimeout</Name><Value>30", "at-url")
		r := get(t, q, "Action", "GetQueueAttributes", "AttributeName.1", "QueueArn")
		wantQueryOK(t, r, "localstack test_sqs.py TestSqsQueryApi::test_get_queue_attributes_with_query_args",
			"<GetQueueAttributesResponse", "<Attribute><Name>QueueArn</Name><Value>arn:aws:sqs:")
		if strings.Contains(string(r.body), "<Name>VisibilityTimeout</Name>") {
			t.Errorf("attributes not asked for were answered: %s", r.body)
		}
		wantQueryOK(t, get(t, fifo, "Action", "GetQueueAttributes", "AttributeName.1", "All"),
			"localstack test_sqs.py TestSqsQueryApi::test_get_queue_attributes_of_fifo_queue",
			"<Name>FifoQueue</Name><Value>true</Value>", "at-url.fifo")
	})
	t.Run("queue url parameter wins over the path", func(t *testing.T) {
		r := get(t, q, "Action", "GetQueueAttributes", "QueueUrl", other, "AttributeName.1", "QueueArn")
		wantQueryOK(t, r, "localstack test_sqs.py TestSqsQueryApi::test_overwrite_queue_url_in_params",
			"<Attribute><Name>QueueArn</Name><Value>arn:aws:sqs:", "at-url-other")
	})
	t.Run("get queue url", func(t *testing.T) {
		wantQueryOK(t, get(t, q, "Action", "GetQueueUrl", "QueueName", "at-url"),
			"localstack test_sqs.py TestSqsQueryApi::test_get_queue_url_works_for_same_queue",
			"<QueueUrl>"+q+"</QueueUrl>")
		r := get(t, q, "Action", "GetQueueUrl", "QueueName", "at-url-other")
		wantQueryOK(t, r, "localstack test_sqs.py TestSqsQueryApi::test_get_queue_url_work_for_different_queue",
			"<QueueUrl>"+other+"</QueueUrl>")
		if strings.Contains(string(r.body), q+"<") {
			t.Errorf("the answer names the queue it was sent to: %s", r.body)
		}
	})
	t.Run("send and receive", func(t *testing.T) {
		const source = "localstack test_sqs.py TestSqsQueryApi::test_get_send_and_receive_messages"
		s := mustCreate(t, c, "at-url-send", nil)
		empty := mustCreate(t, c, "at-url-empty", nil)
		wantQueryOK(t, get(t, s, "Action", "SendMessage", "MessageBody", "foobar"), source)
		r := get(t, empty, "Action", "ReceiveMessage")
		wantQueryOK(t, r, source, "<ReceiveMessageResult/>")
		wantQueryOK(t, get(t, s, "Action", "ReceiveMessage"), source, "<Body>foobar</Body>", "<MD5OfBody>")
	})
	t.Run("delete queue", func(t *testing.T) {
		d := mustCreate(t, c, "at-url-delete", nil)
		wantQueryOK(t, get(t, d, "Action", "DeleteQueue"),
			"localstack test_sqs.py TestSqsQueryApi::test_get_delete_queue", "<DeleteQueueResponse ")
		// Afterwards the queue is gone, and a request at its URL says so
		// (test_get_on_deleted_queue_fails).
		wantQueryError(t, get(t, d, "Action", "GetQueueAttributes", "AttributeName.1", "QueueArn"), http.StatusBadRequest,
			"AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist for this wsdl version",
			"localstack test_sqs.py TestSqsQueryApi::test_get_on_deleted_queue_fails")
	})
}

// TestRecordedJSONAtQueueURL: an AWS JSON request posted to a queue's URL
// is answered as one posted to the endpoint (localstack
// test_sqs.snapshot.json: test_send_message_via_queue_url_with_json_protocol/
// receive-json-on-queue-url, an empty receive answered 200).
func TestRecordedJSONAtQueueURL(t *testing.T) {
	t.Parallel()
	env := Start(t)
	q := mustCreate(t, v2Client{env.V2}, "json-at-url", nil)
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, q, strings.NewReader(`{"QueueUrl":"`+q+`","WaitTimeSeconds":0}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
	r := rawDo(t, env, req)
	if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != "{}" && !strings.Contains(string(r.body), `"Messages":[]`) {
		t.Fatalf("HTTP %d %s, recorded 200 with no messages", r.status, r.body)
	}
}

// perlSQSRequest builds a request as Debian's Perl client,
// libamazon-sqs-simple-perl 2.07 (Amazon::SQS::Simple::Base::_dispatch),
// sends every call: a POST to the endpoint or to the queue's URL, with a
// Date header, "x-amz-target: AmazonSQSv20121105.<Action>", a form
// Content-Type with a charset, and a form body that carries Version,
// Timestamp and AWSAccessKeyId beside the action's parameters, in no
// particular order, only MessageBody and ReceiptHandle percent-encoded;
// signed with SigV4 (AWS::Signature4, libaws-signature4-perl) over every
// header but Date, with an X-Amz-Date added, for the service "sqs" that
// signer reads from an sqs.REGION.amazonaws.com host name.
func perlSQSRequest(t *testing.T, u, key, secret string, params [][2]string) *http.Request {
	t.Helper()
	now := time.Now().UTC()
	action := ""
	parts := []string{"Version=2012-11-05", "Timestamp=" + now.Format("2006-01-02T15:04:05Z"), "AWSAccessKeyId=" + key}
	for _, p := range params {
		if p[0] == "Action" {
			action = p[1]
		}
		v := p[1]
		if p[0] == "MessageBody" || p[0] == "ReceiptHandle" {
			v = url.QueryEscape(v)
		}
		parts = append(parts, p[0]+"="+v)
	}
	body := strings.Join(parts, "&")
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "AmazonSQSv20121105."+action)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded;charset=utf-8")
	sum := sha256.Sum256([]byte(body))
	hash := hex.EncodeToString(sum[:])
	if err := v4.NewSigner().SignHTTP(context.Background(), awsv2.Credentials{AccessKeyID: key, SecretAccessKey: secret}, req, hash, "sqs", Region, now); err != nil {
		t.Fatal(err)
	}
	// Set after signing: AWS::Signature4 leaves Date out of the signature.
	req.Header.Set("Date", now.Format("20060102T150405Z"))
	return req
}

// TestPerlClientIsAnsweredAsQuery sends what Debian's Perl SQS client
// sends (see perlSQSRequest) and checks that each call is answered as the
// AWS Query protocol answers it, in XML, where fifoq used to take the
// X-Amz-Target header for AWS JSON and refuse every call as InvalidAction.
func TestPerlClientIsAnsweredAsQuery(t *testing.T) {
	t.Parallel()
	const key, secret, account = "AKIAFIFOQPERLAAAAAAA", "perl/0123456789abcdefghijklmnopqrstuvwxyz", "222222222222"
	env := StartWith(t, Options{
		Credentials: []auth.Credential{{AccessKeyID: key, SecretAccessKey: secret, Account: account}},
		AccessKeyID: key, SecretAccessKey: secret,
	})
	call := func(t *testing.T, u string, want string, params ...[2]string) string {
		t.Helper()
		r := rawDo(t, env, perlSQSRequest(t, u, key, secret, params))
		if r.status != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", params[0][1], r.status, r.body)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/xml") {
			t.Errorf("%s: Content-Type %q, want XML", params[0][1], ct)
		}
		if !strings.Contains(string(r.body), want) {
			t.Errorf("%s: answer lacks %q: %s", params[0][1], want, r.body)
		}
		return string(r.body)
	}
	// Amazon::SQS::Simple::CreateQueue posts to the endpoint.
	body := call(t, env.URL+"/", "<CreateQueueResponse", [2]string{"Action", "CreateQueue"}, [2]string{"QueueName", "perl"})
	q := env.URL + "/" + account + "/perl"
	if !strings.Contains(body, "<QueueUrl>"+q+"</QueueUrl>") {
		t.Fatalf("CreateQueue answered %s, want queue URL %s", body, q)
	}
	call(t, env.URL+"/", "<QueueUrl>"+q+"</QueueUrl>", [2]string{"Action", "ListQueues"})
	// The calls of Amazon::SQS::Simple::Queue post to the queue's URL and
	// name no QueueUrl. SetAttribute writes the map entry unnumbered.
	call(t, q, "<SetQueueAttributesResponse", [2]string{"Action", "SetQueueAttributes"},
		[2]string{"Attribute.Name", "VisibilityTimeout"}, [2]string{"Attribute.Value", "45"})
	call(t, q, "<Name>VisibilityTimeout</Name><Value>45</Value>", [2]string{"Action", "GetQueueAttributes"}, [2]string{"AttributeName", "All"})
	call(t, q, "<MD5OfMessageBody>", [2]string{"Action", "SendMessage"}, [2]string{"MessageBody", "hello + world & more"})
	body = call(t, q, "<Body>hello + world &amp; more</Body>", [2]string{"Action", "ReceiveMessage"})
	handle := between(body, "<ReceiptHandle>", "</ReceiptHandle>")
	if handle == "" {
		t.Fatalf("no receipt handle in %s", body)
	}
	call(t, q, "<ChangeMessageVisibilityResponse", [2]string{"Action", "ChangeMessageVisibility"},
		[2]string{"ReceiptHandle", handle}, [2]string{"VisibilityTimeout", "0"})
	call(t, q, "<DeleteMessageResponse", [2]string{"Action", "DeleteMessage"}, [2]string{"ReceiptHandle", handle})
	call(t, q, "<DeleteQueueResponse", [2]string{"Action", "DeleteQueue"})
}

// between returns the text of s between the first from and the next to.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

// TestRecordedJSONStringForInteger: SQS refuses an AWS JSON request whose
// Integer member is a string, even one of digits, with 400
// SerializationException "STRING_VALUE can not be converted to an Integer"
// (a client's capture of sqs.eu-central-1.amazonaws.com answering a
// ReceiveMessage whose VisibilityTimeout was sent as a string:
// async-aws/aws issue #1667).
func TestRecordedJSONStringForInteger(t *testing.T) {
	t.Parallel()
	env := Start(t)
	q := mustCreate(t, v2Client{env.V2}, "string-for-integer", nil)
	a := postJSON(t, env, "ReceiveMessage", `{"QueueUrl":"`+q+`","VisibilityTimeout":"30","WaitTimeSeconds":0}`)
	var body struct{ Message string }
	if err := json.Unmarshal(a.body, &body); err != nil {
		t.Fatalf("HTTP %d %s: %v", a.status, a.body, err)
	}
	if a.status != http.StatusBadRequest || a.jsonType != "SerializationException" || body.Message != "STRING_VALUE can not be converted to an Integer" {
		t.Fatalf("HTTP %d %s %q, recorded 400 SerializationException %q", a.status, a.jsonType, body.Message, "STRING_VALUE can not be converted to an Integer")
	}
}

// TestRecordedQueryListQueuesAsJSON sends a Query-protocol ListQueues that
// asks for JSON (Accept: application/json), as LocalStack's AWS-validated
// test_get_list_queues_with_query_auth does: AWS answers the Query
// document as JSON, the list under "queueUrls", an empty one as [] (AWS's
// answers quoted in localstack/localstack#3715, 2021, and
// JuliaCloud/AWS.jl#127, 2020), and in XML without the header.
func TestRecordedQueryListQueuesAsJSON(t *testing.T) {
	t.Parallel()
	env := Start(t)
	get := func(accept string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/?Action=ListQueues&Version=2012-11-05&QueueNamePrefix=json-", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := env.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	var doc struct {
		ListQueuesResponse struct {
			ListQueuesResult map[string]any
			ResponseMetadata struct{ RequestId string }
		}
	}
	resp, b := get("application/json")
	if err := json.Unmarshal(b, &doc); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("ListQueues asking for JSON: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if urls, ok := doc.ListQueuesResponse.ListQueuesResult["queueUrls"].([]any); !ok || len(urls) != 0 {
		t.Fatalf("no queue: queueUrls = %#v, want []", doc.ListQueuesResponse.ListQueuesResult["queueUrls"])
	}
	u := mustCreate(t, v2Client{env.V2}, "json-a", nil)
	_, b = get("application/json")
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	res := doc.ListQueuesResponse.ListQueuesResult
	if urls, _ := res["queueUrls"].([]any); len(urls) != 1 || urls[0] != u || res["NextToken"] != nil || doc.ListQueuesResponse.ResponseMetadata.RequestId == "" {
		t.Fatalf("one queue: %s", b)
	}
	if _, ok := res["NextExclusiveStartQueueName"]; !ok {
		t.Fatalf("NextExclusiveStartQueueName missing: %s", b)
	}
	if resp, b = get(""); !strings.Contains(string(b), "<ListQueuesResponse") || !strings.Contains(resp.Header.Get("Content-Type"), "xml") {
		t.Fatalf("without Accept: %s %s", resp.Header.Get("Content-Type"), b)
	}
}
