package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// TestPartLinesCarryAMessageWhole encodes the lines of a partition read
// as a member answers them and decodes them as the member that asked
// does: a listed message must arrive as it left, with its state, its
// system attributes and binary message attributes, and an error with its
// code, status and fault, so that the client is answered as by one node.
func TestPartLinesCarryAMessageWhole(t *testing.T) {
	text := "a string"
	sent := []partLine{
		{Message: &engine.ListedMessage{
			Message: api.Message{MessageId: "5fea7756-0ea4-451a-a703-a558b933e274", ReceiptHandle: devReceiptHandle,
				MD5OfBody: "098f6bcd4621d373cade4e832627b4f6", Body: "test <&> \u2603",
				Attributes:             map[string]string{api.MsgAttrMessageGroupId: "g", api.MsgAttrSequenceNumber: "11796405109232092167"},
				MD5OfMessageAttributes: "3ae8f24a165a8cedc005670c81a27295",
				MessageAttributes: map[string]api.MessageAttributeValue{
					"bin": {DataType: "Binary", BinaryValue: []byte{0, 1, 0xfe, 0xff}},
					"str": {DataType: "String", StringValue: &text},
				}},
			State: engine.StateInFlight, Held: true,
		}},
		{Error: api.ErrAccessDenied("denied")},
		{Complete: true},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, l := range sent {
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	dec := json.NewDecoder(&buf)
	for i, want := range sent {
		var got partLine
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d arrived as %+v, want %+v", i, got, want)
		}
	}
}
