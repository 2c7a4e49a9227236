package integration

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/auth"
)

// The developer endpoint LocalStack documents (docs.localstack.cloud,
// "Internal Endpoints"; its SQS page, "Developer endpoints"), which test
// suites moving from LocalStack use to look at a queue without receiving
// from it. These tests read it as those suites do.

// devList is one message of the endpoint's XML answer.
type devList struct {
	Messages []struct {
		Body       string `xml:"Body"`
		MD5OfBody  string `xml:"MD5OfBody"`
		Handle     string `xml:"ReceiptHandle"`
		Attributes []struct {
			Name  string `xml:"Name"`
			Value string `xml:"Value"`
		} `xml:"Attribute"`
	} `xml:"ReceiveMessageResult>Message"`
}

// devGet lists a queue's messages through GET /_aws/sqs/messages with the
// given parameters, in XML.
func devGet(t *testing.T, env *Env, params url.Values) devList {
	t.Helper()
	resp, err := env.HTTP.Get(env.URL + "/_aws/sqs/messages?" + params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_aws/sqs/messages?%s: %d %s", params.Encode(), resp.StatusCode, b)
	}
	var l devList
	if err := xml.Unmarshal(b, &l); err != nil {
		t.Fatalf("the answer is not ReceiveMessage's XML: %v\n%s", err, b)
	}
	return l
}

func (l devList) bodies() []string {
	var out []string
	for _, m := range l.Messages {
		out = append(out, m.Body)
	}
	return out
}

func (l devList) attr(i int, name string) string {
	for _, a := range l.Messages[i].Attributes {
		if a.Name == name {
			return a.Value
		}
	}
	return ""
}

// devJSON lists through GET with Accept: application/json, and returns
// the decoded document.
func devJSON(t *testing.T, env *Env, path string, params url.Values) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.URL+path+"?"+params.Encode(), nil)
	req.Header.Set("Accept", "application/json")
	resp, err := env.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("GET %s with Accept: application/json: not JSON: %v", path, err)
	}
	return resp.StatusCode, doc
}

// dig follows keys through nested JSON objects.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestDevMessagesNoSideEffects lists a standard queue before and after a
// receive: the listing shows the receive count as it stands and changes
// nothing, not even the count of messages in flight.
func TestDevMessagesNoSideEffects(t *testing.T) {
	t.Parallel()
	env := Start(t)
	c := v2Client{env.V2}
	u := mustCreate(t, c, "dev", nil)
	mustSend(t, c, u, SendIn{Body: "message-1", Attrs: map[string]Attr{"k": {DataType: "String", String: "v"}}})
	mustSend(t, c, u, SendIn{Body: "message-2"})

	q := url.Values{"QueueUrl": {u}}
	for range 2 {
		l := devGet(t, env, q)
		if got := l.bodies(); !slices.Equal(got, []string{"message-1", "message-2"}) {
			t.Fatalf("listed %v", got)
		}
		if l.attr(0, "ApproximateReceiveCount") != "0" || l.attr(0, "SenderId") == "" || l.attr(0, "SentTimestamp") == "" {
			t.Fatalf("attributes of the first message: %+v", l.Messages[0].Attributes)
		}
		if l.Messages[0].Handle != "SQS/BACKDOOR/ACCESS" || l.Messages[0].MD5OfBody != bodyMD5("message-1") {
			t.Fatalf("first message: %+v", l.Messages[0])
		}
	}
	if n := numAttr(t, c, u, "ApproximateNumberOfMessagesNotVisible"); n != 0 {
		t.Fatalf("%d messages in flight after listing, want 0", n)
	}
	msgs, err := c.Receive(ctxT(t), u, RecvIn{Max: 1})
	if err != nil || len(msgs) != 1 || msgs[0].Body != "message-1" {
		t.Fatalf("receive: %v, %v", msgs, err)
	}
	ok(t, c.ChangeVisibility(ctxT(t), u, msgs[0].Handle, 0))
	l := devGet(t, env, q)
	if l.attr(0, "ApproximateReceiveCount") != "1" || l.attr(1, "ApproximateReceiveCount") != "0" {
		t.Fatalf("receive counts listed after one receive: %+v", l.Messages)
	}
	// The path form names the queue too; another region's does not exist.
	status, doc := devJSON(t, env, "/_aws/sqs/messages/"+Region+"/"+Account+"/dev", nil)
	if status != http.StatusOK || len(dig(doc, "ReceiveMessageResponse", "ReceiveMessageResult", "Message").([]any)) != 2 {
		t.Fatalf("path form: %d %v", status, doc)
	}
	status, doc = devJSON(t, env, "/_aws/sqs/messages/eu-west-1/"+Account+"/dev", nil)
	if status != http.StatusBadRequest || dig(doc, "ErrorResponse", "Error", "Code") != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("another region's queue: %d %v", status, doc)
	}
	status, doc = devJSON(t, env, "/_aws/sqs/messages", nil)
	if status != http.StatusBadRequest || dig(doc, "ErrorResponse", "Error", "Code") != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("no QueueUrl: %d %v", status, doc)
	}
}

// TestDevMessagesJSONAndFlags reads the JSON form, and what ShowInvisible
// and ShowDelayed add.
func TestDevMessagesJSONAndFlags(t *testing.T) {
	t.Parallel()
	env := Start(t)
	c := v2Client{env.V2}
	u := mustCreate(t, c, "flags", nil)
	for _, b := range []string{"message-1", "message-2", "message-3"} {
		mustSend(t, c, u, SendIn{Body: b})
	}
	mustSend(t, c, u, SendIn{Body: "later", Delay: i32(60)})
	mustReceive(t, c, u, 1) // message-1 is in flight

	list := func(params url.Values) []any {
		t.Helper()
		params.Set("QueueUrl", u)
		status, doc := devJSON(t, env, "/_aws/sqs/messages", params)
		msgs := dig(doc, "ReceiveMessageResponse", "ReceiveMessageResult", "Message")
		if status != http.StatusOK {
			t.Fatalf("%v: %d %v", params, status, doc)
		}
		if one, ok := msgs.(map[string]any); ok { // one message: an object, as LocalStack writes it
			return []any{one}
		}
		out, _ := msgs.([]any)
		return out
	}
	attrOf := func(m any, name string) any {
		attrs, _ := dig(m, "Attribute").([]any)
		for _, a := range attrs {
			if dig(a, "Name") == name {
				return dig(a, "Value")
			}
		}
		return nil
	}
	body := func(ms []any) []string {
		var out []string
		for _, m := range ms {
			out = append(out, dig(m, "Body").(string))
		}
		return out
	}
	if got := body(list(url.Values{})); !slices.Equal(got, []string{"message-2", "message-3"}) {
		t.Fatalf("visible messages: %v", got)
	}
	all := list(url.Values{"ShowInvisible": {"true"}})
	if got := body(all); !slices.Equal(got, []string{"message-1", "message-2", "message-3"}) {
		t.Fatalf("with ShowInvisible: %v", got)
	}
	if attrOf(all[0], "IsVisible") != "false" || attrOf(all[1], "IsVisible") != "true" || dig(all[1], "MD5OfBody") != bodyMD5("message-2") {
		t.Fatalf("with ShowInvisible: %v", all)
	}
	delayed := list(url.Values{"ShowDelayed": {"1"}})
	if got := body(delayed); !slices.Equal(got, []string{"message-2", "message-3", "later"}) {
		t.Fatalf("with ShowDelayed: %v", got)
	}
	if attrOf(delayed[2], "IsDelayed") != "true" || attrOf(delayed[0], "IsDelayed") != "false" {
		t.Fatalf("with ShowDelayed: %v", delayed)
	}
	if n := numAttr(t, c, u, "ApproximateNumberOfMessagesNotVisible"); n != 1 {
		t.Fatalf("%d messages in flight after listing, want 1", n)
	}
}

// TestDevMessagesAsSDKEndpoint uses the endpoint as an SDK's endpoint
// URL: ReceiveMessage returns every message of a FIFO queue, in order,
// received by no one, whatever MaxNumberOfMessages says; a message a
// group's in-flight message holds back is not visible; any other action
// is refused.
func TestDevMessagesAsSDKEndpoint(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "sdk.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		mustSend(t, c, u, SendIn{Body: "message-1", Group: "1"})
		mustSend(t, c, u, SendIn{Body: "message-2", Group: "1"})
		mustSend(t, c, u, SendIn{Body: "message-3", Group: "2"})

		dev := Client(v2Client{newV2Client(env.URL+"/_aws/sqs/messages", env.HTTP, "test", "test")})
		if c.Proto() == "query" {
			dev = v1Client{newV1Client(env.URL+"/_aws/sqs/messages", env.HTTP, "test", "test")}
		}
		ctx := ctxT(t)
		for range 2 {
			msgs, err := dev.Receive(ctx, u, RecvIn{Max: 1})
			if err != nil {
				t.Fatal(err)
			}
			wantBodies(t, msgs, "message-1", "message-2", "message-3")
			if msgs[1].Sys["MessageGroupId"] != "1" || msgs[2].Sys["MessageGroupId"] != "2" || msgs[0].Sys["ApproximateReceiveCount"] != "0" {
				t.Fatalf("attributes: %+v", msgs)
			}
		}
		// A receive holds group 1: its second message is not visible.
		got := mustReceive(t, c, u, 1)
		wantBodies(t, got, "message-1")
		msgs, err := dev.Receive(ctx, u, RecvIn{Max: 10})
		if err != nil {
			t.Fatal(err)
		}
		wantBodies(t, msgs, "message-3")
		_, err = dev.Send(ctx, u, SendIn{Body: "x", Group: "g"})
		wantErr(t, err, "InvalidRequest")
	})
}

// TestDevMessagesNeedsSignature: with credentials configured, the
// endpoint answers only a signed request.
func TestDevMessagesNeedsSignature(t *testing.T) {
	t.Parallel()
	key := auth.Credential{AccessKeyID: "AKIDEVENDPOINT000001", SecretAccessKey: "secret-of-the-dev-endpoint-test", Account: Account}
	env := StartWith(t, Options{Credentials: []auth.Credential{key}, AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey})
	c := v2Client{env.V2}
	u := mustCreate(t, c, "signed", nil)
	mustSend(t, c, u, SendIn{Body: "secret"})
	resp, err := env.HTTP.Get(env.URL + "/_aws/sqs/messages?QueueUrl=" + url.QueryEscape(u))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode >= 500 || strings.Contains(string(b), "secret<") {
		t.Fatalf("an unsigned listing answered %d %s", resp.StatusCode, b)
	}
	dev := sqsv2.New(env.V2.Options(), func(o *sqsv2.Options) { o.BaseEndpoint = awsv2.String(env.URL + "/_aws/sqs/messages") })
	out, err := dev.ReceiveMessage(context.Background(), &sqsv2.ReceiveMessageInput{QueueUrl: awsv2.String(u)})
	if err != nil || len(out.Messages) != 1 || awsv2.ToString(out.Messages[0].Body) != "secret" {
		t.Fatalf("a signed listing: %v, %v", out, err)
	}
}

// devMessages returns the messages of a JSON listing (an object when
// there is one, as LocalStack writes it), failing unless it answered 200.
func devMessages(t *testing.T, env *Env, params url.Values) []any {
	t.Helper()
	status, doc := devJSON(t, env, "/_aws/sqs/messages", params)
	if status != http.StatusOK {
		t.Fatalf("%v: %d %v", params, status, doc)
	}
	switch msgs := dig(doc, "ReceiveMessageResponse", "ReceiveMessageResult", "Message").(type) {
	case map[string]any:
		return []any{msgs}
	case []any:
		return msgs
	}
	return nil
}

// devAttr returns a system attribute of one message of a JSON listing.
func devAttr(m any, name string) any {
	attrs, _ := dig(m, "Attribute").([]any)
	for _, a := range attrs {
		if dig(a, "Name") == name {
			return dig(a, "Value")
		}
	}
	return nil
}

// TestDevMessagesFIFOHeldMessages lists a FIFO queue whose group 1 has
// its first message in flight, as LocalStack's
// test_fifo_list_messages_with_invisible_messages does
// (tests/aws/services/sqs/test_sqs_developer_api.py): without
// ShowInvisible only group 2's messages are listed (message-2 waits
// behind message-1, no receive would return it); with it all four are,
// and only the message in flight is IsVisible=false: message-2 is not in
// flight itself.
func TestDevMessagesFIFOHeldMessages(t *testing.T) {
	t.Parallel()
	env := Start(t)
	c := v2Client{env.V2}
	u := mustCreate(t, c, "held.fifo", fifoAttrs("ContentBasedDeduplication", "true", "VisibilityTimeout", "120"))
	for i, g := range []string{"1", "1", "2", "2"} {
		mustSend(t, c, u, SendIn{Body: fmt.Sprintf("message-%d", i+1), Group: g})
	}
	wantBodies(t, mustReceive(t, c, u, 1), "message-1")

	var got []string
	for _, m := range devMessages(t, env, url.Values{"QueueUrl": {u}, "ShowInvisible": {"false"}}) {
		got = append(got, fmt.Sprint(dig(m, "Body")))
	}
	if !slices.Equal(got, []string{"message-3", "message-4"}) {
		t.Fatalf("without ShowInvisible: %v, want message-3 and message-4", got)
	}
	visible := map[string]any{}
	for _, m := range devMessages(t, env, url.Values{"QueueUrl": {u}, "ShowInvisible": {"true"}}) {
		visible[fmt.Sprint(dig(m, "Body"))] = devAttr(m, "IsVisible")
	}
	want := map[string]any{"message-1": "false", "message-2": "true", "message-3": "true", "message-4": "true"}
	if !maps.Equal(visible, want) {
		t.Fatalf("IsVisible with ShowInvisible: %v, want %v", visible, want)
	}
}

// TestDevMessagesFirstReceiveTimestamp: every listed message carries
// ApproximateFirstReceiveTimestamp, in XML and in JSON, "0" for a message
// never received, as LocalStack writes it (its test_list_messages_as_json
// asserts the attribute is there); a received one its first receive's.
func TestDevMessagesFirstReceiveTimestamp(t *testing.T) {
	t.Parallel()
	env := Start(t)
	c := v2Client{env.V2}
	u := mustCreate(t, c, "first", nil)
	mustSend(t, c, u, SendIn{Body: "message-1"})
	mustSend(t, c, u, SendIn{Body: "message-2"})
	got := mustReceive(t, c, u, 1)
	first := got[0].Sys["ApproximateFirstReceiveTimestamp"]
	ok(t, c.ChangeVisibility(ctxT(t), u, got[0].Handle, 0))

	l := devGet(t, env, url.Values{"QueueUrl": {u}})
	if len(l.Messages) != 2 || l.attr(0, "ApproximateFirstReceiveTimestamp") != first || l.attr(1, "ApproximateFirstReceiveTimestamp") != "0" {
		t.Fatalf("XML listing: %+v, want ApproximateFirstReceiveTimestamp %s then 0", l.Messages, first)
	}
	msgs := devMessages(t, env, url.Values{"QueueUrl": {u}})
	if len(msgs) != 2 || devAttr(msgs[0], "ApproximateFirstReceiveTimestamp") != first || devAttr(msgs[1], "ApproximateFirstReceiveTimestamp") != "0" {
		t.Fatalf("JSON listing: %v, want ApproximateFirstReceiveTimestamp %s then 0", msgs, first)
	}
}

// TestDevMessagesInvalidAddress: a QueueUrl that is no queue's URL at all
// is 404 InvalidAddress, in LocalStack's ErrorResponse (XML, or JSON when
// asked), as its test_list_messages_with_invalid_queue_url expects, and
// through an SDK whose endpoint is the developer endpoint; a well-formed
// URL, or path, of a queue that does not exist is 400 NonExistentQueue
// (test_list_messages_with_non_existent_queue).
func TestDevMessagesInvalidAddress(t *testing.T) {
	t.Parallel()
	env := Start(t)
	nonsense := url.Values{"QueueUrl": {"http://localhost:4566/nonsense"}}
	status, doc := devJSON(t, env, "/_aws/sqs/messages", nonsense)
	if status != http.StatusNotFound || dig(doc, "ErrorResponse", "Error", "Code") != "InvalidAddress" {
		t.Fatalf("JSON listing of a URL of no queue: %d %v, want 404 InvalidAddress", status, doc)
	}
	resp, err := env.HTTP.Get(env.URL + "/_aws/sqs/messages?" + nonsense.Encode())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "<Code>InvalidAddress</Code>") {
		t.Fatalf("XML listing of a URL of no queue: %d %s, want 404 InvalidAddress", resp.StatusCode, b)
	}
	for _, path := range []string{
		"/_aws/sqs/messages?QueueUrl=" + url.QueryEscape("http://localhost:4566/"+Account+"/hopefullydoesnotexist"),
		"/_aws/sqs/messages/" + Region + "/" + Account + "/hopefullydoesnotexist",
	} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+path, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := env.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusBadRequest || dig(doc, "ErrorResponse", "Error", "Code") != "AWS.SimpleQueueService.NonExistentQueue" {
			t.Fatalf("GET %s: %d %v %v, want 400 NonExistentQueue", path, resp.StatusCode, doc, err)
		}
	}
	for _, dev := range []Client{
		v2Client{newV2Client(env.URL+"/_aws/sqs/messages", env.HTTP, "test", "test")},
		v1Client{newV1Client(env.URL+"/_aws/sqs/messages", env.HTTP, "test", "test")},
	} {
		_, err := dev.Receive(ctxT(t), "http://localhost:4566/nonsense", RecvIn{Max: 1})
		if e, found := apiErr(err); !found || e.Code != "InvalidAddress" || e.Status != http.StatusNotFound {
			t.Fatalf("%s ReceiveMessage of a URL of no queue through the endpoint: %v, want 404 InvalidAddress", dev.Proto(), err)
		}
	}
}
