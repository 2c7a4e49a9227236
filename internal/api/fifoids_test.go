package api

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestNoteSentFIFOIDs: a FIFO id sent empty in an AWS JSON body is noted as
// sent, one left out or sent null as not sent.
func TestNoteSentFIFOIDs(t *testing.T) {
	decode := func(req Request, body string) {
		t.Helper()
		if err := json.Unmarshal([]byte(body), req); err != nil {
			t.Fatal(err)
		}
		if err := NoteSentFIFOIDs(req, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		body             string
		wantDedup, wantG bool
	}{
		{`{"MessageBody":"b"}`, false, false},
		{`{"MessageBody":"b","MessageGroupId":""}`, false, true},
		{`{"MessageBody":"b","MessageGroupId":null,"MessageDeduplicationId":""}`, true, false},
		{`{"MessageBody":"b","MessageGroupId":"g","MessageDeduplicationId":"d"}`, true, true},
	} {
		var r SendMessageRequest
		decode(&r, tc.body)
		if r.MessageDeduplicationIdSet != tc.wantDedup || r.MessageGroupIdSet != tc.wantG {
			t.Errorf("%s: dedup %v group %v, want %v %v", tc.body, r.MessageDeduplicationIdSet, r.MessageGroupIdSet, tc.wantDedup, tc.wantG)
		}
	}
	var b SendMessageBatchRequest
	decode(&b, `{"Entries":[{"Id":"1","MessageGroupId":""},{"Id":"2"},{"Id":"3","MessageGroupId":"g","MessageDeduplicationId":""}]}`)
	got := []bool{}
	for _, e := range b.Entries {
		got = append(got, e.MessageGroupIdSet, e.MessageDeduplicationIdSet)
	}
	if want := []bool{true, false, false, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("batch flags %v, want %v", got, want)
	}
}
