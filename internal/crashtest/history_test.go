package crashtest

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/historycheck"
)

// TestHistoryReportsWrongBodies: the property only the crash test checks,
// beside historycheck's, is that every body delivered is the one sent. A
// body that differs, and one that names no message of the test, are both
// reported; the rest of the history is good, so nothing else is.
func TestHistoryReportsWrongBodies(t *testing.T) {
	h := newHistory(0)
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const g = "p0-g1"
	sent := testMsg(0, 1, g)
	sent.ID = "m1"
	h.Add(historycheck.Op{Kind: historycheck.Send, Invoke: at(0), Return: at(10), Attempts: 1, Outcome: historycheck.OK, Msgs: []historycheck.Msg{sent}})
	rcv := historycheck.Op{Kind: historycheck.Receive, Client: 1, Invoke: at(20), Return: at(30), Attempts: 1, Outcome: historycheck.OK, Visibility: visibility}
	got, ok := h.received(rcv, []types.Message{
		{Body: aws.String(crashBody(0, 1, g, 0) + "!"), MessageId: aws.String("m1"), ReceiptHandle: aws.String("h1")},
		{Body: aws.String("not a message of the test"), MessageId: aws.String("m2"), ReceiptHandle: aws.String("h2")},
	})
	if !ok[0] || ok[1] || got[0].Dedup != sent.Dedup || got[0].Handle != "h1" {
		t.Fatalf("received: %+v, %v", got, ok)
	}
	h.Add(historycheck.Op{Kind: historycheck.Delete, Client: 1, Invoke: at(40), Return: at(50), Attempts: 1, Outcome: historycheck.OK, Msgs: got[:1]})
	h.drained(at(60))
	problems := h.check().Problems
	if len(problems) != 2 || !strings.HasPrefix(problems[0], "wrong body: "+sent.Dedup) || !strings.HasPrefix(problems[1], "wrong body: MessageId m2") {
		t.Fatalf("problems reported: %d, want the 2 wrong bodies:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
}
