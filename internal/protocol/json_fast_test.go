package protocol

import (
	"mime"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// fastActions are the actions decodeFast decodes.
var fastActions = []api.Action{api.ActionSendMessage, api.ActionSendMessageBatch, api.ActionReceiveMessage, api.ActionDeleteMessage, api.ActionDeleteMessageBatch}

// fastSeeds are bodies of the hot actions: the plain ones SDKs send, and
// the ones around them that decodeFast must leave to encoding/json.
var fastSeeds = []string{
	`{"MessageBody":"hello","MessageDeduplicationId":"d1","MessageGroupId":"g1","QueueUrl":"http://127.0.0.1:9324/000000000000/q.fifo"}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":5}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":-0}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":05}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":1.5}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":1e3}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":2147483648}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":999999999}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":"5"}`,
	`{"QueueUrl":"q","MessageBody":"x","DelaySeconds":null}`,
	`{"QueueUrl":"q","MessageBody":"a\"b\\c\n\u00e9"}`,
	`{"QueueUrl":"q","MessageBody":"é ☃ 𝄞"}`,
	`{"QueueUrl":"q","QueueUrl":"r"}`,
	`{"queueurl":"q"}`,
	`{"QueueUrl":"q","Unknown":1}`,
	`{"QueueUrl":"q","MessageGroupId":""}`,
	`{"QueueUrl":"q","MessageBody":"x","MessageAttributes":{"a":{"DataType":"String","StringValue":"v"}}}`,
	` { "QueueUrl" : "q" , "MessageBody" : "x" } `,
	`{"QueueUrl":"q",}`,
	`{"QueueUrl":"q"} x`,
	`{"QueueUrl":"q"}{}`,
	`{}`, `[]`, `"q"`, `null`, `1`, `{"QueueUrl":1}`, `{"QueueUrl":true}`,
	`{"Entries":[{"Id":"1","MessageBody":"a","MessageGroupId":"g","MessageDeduplicationId":"d"},{"Id":"2","MessageBody":"b","DelaySeconds":0}],"QueueUrl":"q"}`,
	`{"Entries":[],"QueueUrl":"q"}`,
	`{"Entries":[{}],"QueueUrl":"q"}`,
	`{"Entries":null,"QueueUrl":"q"}`,
	`{"Entries":[{"Id":"1","ReceiptHandle":"h"},{"Id":"2","ReceiptHandle":"i"}],"QueueUrl":"q"}`,
	`{"Entries":[{"Id":"1","Id":"2"}],"QueueUrl":"q"}`,
	`{"Entries":[1],"QueueUrl":"q"}`,
	`{"MaxNumberOfMessages":10,"MessageSystemAttributeNames":["All"],"QueueUrl":"q","WaitTimeSeconds":1}`,
	`{"AttributeNames":[],"MessageAttributeNames":["a","b"],"QueueUrl":"q","VisibilityTimeout":30,"ReceiveRequestAttemptId":"r"}`,
	`{"AttributeNames":["a",],"QueueUrl":"q"}`,
	`{"AttributeNames":[1],"QueueUrl":"q"}`,
	`{"QueueUrl":"q","ReceiptHandle":"h"}`,
	`{"QueueUrl":"q","ReceiptHandle":"h\u0000"}`,
	"{\"QueueUrl\":\"q\",\"ReceiptHandle\":\"h\x01\"}",
	"{\"QueueUrl\":\"q\tr\"}",
	"{\"QueueUrl\":\"q\xff\"}",
	`{"QueueUrl":"q"`,
	`{"QueueUrl"`,
	`{`,
}

// TestDecodeFastMatchesEncodingJSON checks decodeJSON with the fast decoder
// against encoding/json alone on the seeds, for each hot action.
func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	for _, body := range fastSeeds {
		for i := range fastActions {
			checkFastDecode(t, uint8(i), []byte(body))
		}
	}
	// The plain bodies must take the fast path, or the test proves nothing.
	for _, c := range []struct {
		req  api.Request
		body string
	}{
		{&api.SendMessageRequest{}, fastSeeds[0]},
		{&api.SendMessageBatchRequest{}, `{"Entries":[{"Id":"1","MessageBody":"a","MessageGroupId":"g","MessageDeduplicationId":"d","DelaySeconds":3}],"QueueUrl":"q"}`},
		{&api.ReceiveMessageRequest{}, `{"MaxNumberOfMessages":10,"MessageSystemAttributeNames":["All"],"QueueUrl":"q","WaitTimeSeconds":1}`},
		{&api.DeleteMessageRequest{}, `{"QueueUrl":"q","ReceiptHandle":"h"}`},
		{&api.DeleteMessageBatchRequest{}, `{"Entries":[{"Id":"1","ReceiptHandle":"h"}],"QueueUrl":"q"}`},
	} {
		if !decodeFast(c.req, []byte(c.body)) {
			t.Errorf("decodeFast(%T) refused the plain body %s", c.req, c.body)
		}
	}
}

// FuzzDecodeFast compares decodeJSON with and without the fast decoder on
// arbitrary bodies of the hot actions: the same action, request and error,
// word for word.
func FuzzDecodeFast(f *testing.F) {
	for _, body := range fastSeeds {
		for i := range fastActions {
			f.Add(uint8(i), []byte(body))
		}
	}
	f.Fuzz(checkFastDecode)
}

func checkFastDecode(t *testing.T, which uint8, body []byte) {
	action := fastActions[int(which)%len(fastActions)]
	r, err := http.NewRequest(http.MethodPost, "/", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set(headerTarget, targetPrefix+string(action))
	gotAction, gotReq, gotErr := decodeJSONWith(r, body, true)
	wantAction, wantReq, wantErr := decodeJSONWith(r, body, false)
	if gotAction != wantAction || !reflect.DeepEqual(gotReq, wantReq) || !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("%s %q:\nfast:          %q %#v %v\nencoding/json: %q %#v %v", action, body, gotAction, gotReq, gotErr, wantAction, wantReq, wantErr)
	}
}

// mediaTypeByMIME is mediaType as it was before its fast path.
func mediaTypeByMIME(contentType string) string {
	if contentType == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// FuzzMediaType compares mediaType with its mime.ParseMediaType form on
// arbitrary Content-Type headers.
func FuzzMediaType(f *testing.F) {
	for _, ct := range []string{"", "application/x-amz-json-1.0", "application/x-www-form-urlencoded", "Application/X-Amz-JSON-1.1",
		"application/x-www-form-urlencoded; charset=utf-8", " text/xml ", "text", "a/b/c", "a/", "/b", "a/b;", "a/b;x", "é/b", "a\x7f/b", "a@/b", "a/b\t"} {
		f.Add(ct)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		if got, want := mediaType(ct), mediaTypeByMIME(ct); got != want {
			t.Fatalf("mediaType(%q) = %q, mime.ParseMediaType's answer is %q", ct, got, want)
		}
	})
}
