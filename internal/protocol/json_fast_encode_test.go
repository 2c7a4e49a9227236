package protocol

import (
	"bytes"
	"net/textproto"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// fastResult builds a result of one of the actions appendFastResult
// encodes from a few strings and numbers, so that the fuzzer can reach
// every member, empty or not, escaped or not.
func fastResult(kind uint8, a, b, c, d string, n uint8, flag bool) (api.Action, api.Response) {
	switch kind % 4 {
	case 0:
		return api.ActionSendMessage, &api.SendMessageResult{MD5OfMessageBody: a, MD5OfMessageAttributes: b, MD5OfMessageSystemAttributes: c, MessageId: d, SequenceNumber: a + d}
	case 1:
		r := &api.SendMessageBatchResult{}
		for i := range int(n % 4) {
			r.Successful = append(r.Successful, api.SendMessageBatchResultEntry{Id: a, MessageId: b, MD5OfMessageBody: c, MD5OfMessageAttributes: d[:len(d)*i%2], SequenceNumber: b + c})
		}
		for range int(n / 4 % 3) {
			r.Failed = append(r.Failed, api.BatchResultErrorEntry{Id: d, SenderFault: flag, Code: c, Message: b})
		}
		if flag && r.Successful == nil {
			r.Successful = []api.SendMessageBatchResultEntry{}
		}
		return api.ActionSendMessageBatch, r
	case 2:
		r := &api.DeleteMessageBatchResult{}
		for range int(n % 4) {
			r.Successful = append(r.Successful, api.BatchResultEntry{Id: a})
		}
		for range int(n / 4 % 3) {
			r.Failed = append(r.Failed, api.BatchResultErrorEntry{Id: b, SenderFault: !flag, Code: c, Message: d})
		}
		return api.ActionDeleteMessageBatch, r
	}
	r := &api.ReceiveMessageResult{}
	for i := range int(n % 3) {
		m := api.Message{MessageId: a, ReceiptHandle: b, MD5OfBody: c, Body: d, MD5OfMessageAttributes: a[:len(a)*i%2]}
		if flag {
			m.Attributes = map[string]string{a: b, c: d, "SenderId": "000000000000", "MessageGroupId": b}
		} else if n&8 != 0 {
			m.Attributes = map[string]string{}
		}
		if n&0x80 != 0 {
			m.MessageAttributes = map[string]api.MessageAttributeValue{"x": {DataType: "String", StringValue: &d}}
		}
		r.Messages = append(r.Messages, m)
	}
	if n&0x40 != 0 && r.Messages == nil {
		r.Messages = []api.Message{}
	}
	return api.ActionReceiveMessage, r
}

// checkFastEncode checks that appendFastResult, where it encodes a result,
// gives encodeJSONResult's bytes.
func checkFastEncode(t *testing.T, kind uint8, a, b, c, d string, n uint8, flag bool) bool {
	action, resp := fastResult(kind, a, b, c, d, n, flag)
	got, ok := appendFastResult(nil, action, resp)
	if !ok {
		return false
	}
	result, ok := resultOf(action, resp)
	if !ok {
		t.Fatalf("%s: result of the wrong type %T", action, resp)
	}
	want, err := encodeJSONResult(result)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s %#v:\nfast:          %s\nencoding/json: %s", action, resp, got, want)
	}
	return true
}

var fastEncodeSeeds = []struct {
	a, b, c, d string
}{
	{"d41d8cd98f00b204e9800998ecf8427e", "2b4c1d3e-0000-4000-8000-000000000000", "AQEB", "hello world"},
	{"", "", "", ""},
	{"a\"b", "c\\d", "e\nf", "g\x01h"},
	{"é", "☃", "𝄞", "\u2028"},
	{"\u2029", "\xff", "\xef\xbf\xbd", "<&>"},
	{"\x7f", "\t", "\b\f\r", "z"},
}

// TestFastEncodeMatchesEncodingJSON checks appendFastResult against
// encodeJSONResult on the seeds, and that plain results take the fast path.
func TestFastEncodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range fastEncodeSeeds {
		for kind := range uint8(4) {
			for _, n := range []uint8{0, 1, 2, 5, 9, 10, 0x42, 0x81} {
				for _, flag := range []bool{false, true} {
					checkFastEncode(t, kind, s.a, s.b, s.c, s.d, n, flag)
				}
			}
		}
	}
	s := fastEncodeSeeds[0]
	for kind := range uint8(4) {
		if !checkFastEncode(t, kind, s.a, s.b, s.c, s.d, 5, true) {
			t.Errorf("kind %d: a plain result did not take the fast path", kind)
		}
	}
	if _, ok := appendFastResult(nil, api.ActionSendMessageBatch, &api.SendMessageResult{}); ok {
		t.Error("a result of another action took the fast path")
	}
	if _, ok := appendFastResult(nil, api.ActionSendMessage, (*api.SendMessageResult)(nil)); ok {
		t.Error("a nil result took the fast path")
	}
}

// FuzzFastEncode compares appendFastResult with encodeJSONResult on
// results built from arbitrary strings: byte for byte the same body.
func FuzzFastEncode(f *testing.F) {
	for _, s := range fastEncodeSeeds {
		for kind := range uint8(4) {
			f.Add(kind, s.a, s.b, s.c, s.d, uint8(5), true)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, a, b, c, d string, n uint8, flag bool) {
		checkFastEncode(t, kind, a, b, c, d, n, flag)
	})
}

// TestResponseHeaderKeysCanonical guards writeBody's direct assignment of
// header keys: net/http looks headers up by their canonical form.
func TestResponseHeaderKeysCanonical(t *testing.T) {
	for _, k := range []string{"Content-Type", "Content-Length", headerRequestID} {
		if textproto.CanonicalMIMEHeaderKey(k) != k {
			t.Errorf("header key %q is not canonical", k)
		}
	}
}
