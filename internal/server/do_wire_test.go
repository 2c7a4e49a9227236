package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// routedActions are the actions a member routes to another (doAt).
var routedActions = []api.Action{
	api.ActionAddPermission, api.ActionCancelMessageMoveTask, api.ActionChangeMessageVisibility, api.ActionChangeMessageVisibilityBatch,
	api.ActionCreateQueue, api.ActionDeleteMessage, api.ActionDeleteMessageBatch, api.ActionDeleteQueue, api.ActionGetQueueAttributes,
	api.ActionGetQueueUrl, api.ActionListDeadLetterSourceQueues, api.ActionListMessageMoveTasks, api.ActionListQueueTags,
	api.ActionListQueues, api.ActionPurgeQueue, api.ActionReceiveMessage, api.ActionRemovePermission, api.ActionSendMessage,
	api.ActionSendMessageBatch, api.ActionSetQueueAttributes, api.ActionStartMessageMoveTask, api.ActionTagQueue, api.ActionUntagQueue,
}

// filledRequest returns action's request with every field set, and its
// AWS JSON.
func filledRequest(t *testing.T, action api.Action) (api.Request, []byte) {
	t.Helper()
	req, ok := api.NewRequest(action)
	if !ok {
		t.Fatalf("no request type for %s", action)
	}
	fill(reflect.ValueOf(req).Elem(), 0)
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("%s: encode the request: %v", action, err)
	}
	return req, b
}

// filledRequestJSON is filledRequest's JSON alone.
func filledRequestJSON(t *testing.T, action api.Action) []byte {
	t.Helper()
	_, b := filledRequest(t, action)
	return b
}

// TestRoutedQueryFormReadsBack sends every action's request in the query
// form (doQuery, the request's JSON as the body) and reads it as
// serveClusterDo does: what went must come back, the body untouched.
func TestRoutedQueryFormReadsBack(t *testing.T) {
	for _, action := range routedActions {
		for _, d := range []doRouted{
			{Shard: 3, Account: "000000000000", Action: action},
			{Shard: 4294967295, Part: 63, Peek: true, Account: "123456789012", Action: action},
		} {
			d.Request = filledRequestJSON(t, action)
			r := httptest.NewRequest(http.MethodPost, doQuery(d), bytes.NewReader(d.Request))
			got, query, err := readRouted(r)
			if err != nil || !query {
				t.Fatalf("%s: read back as query form %v, error %v", action, query, err)
			}
			if !reflect.DeepEqual(got, d) {
				t.Fatalf("%s: read back as %+v, sent %+v", action, got, d)
			}
		}
	}
	// The envelope, as a fifoq from before the query form sends it.
	d := doRouted{Shard: 2, Part: 1, Account: "000000000000", Action: api.ActionSendMessage, Request: filledRequestJSON(t, api.ActionSendMessage)}
	b, _ := json.Marshal(d)
	got, query, err := readRouted(httptest.NewRequest(http.MethodPost, clusterDoPath, bytes.NewReader(b)))
	if err != nil || query {
		t.Fatalf("an envelope read as query form %v, error %v", query, err)
	}
	if got.Shard != d.Shard || got.Part != d.Part || got.Account != d.Account || got.Action != d.Action || !bytes.Equal(got.Request, d.Request) {
		t.Fatalf("an envelope read back as %+v, sent %+v", got, d)
	}
	for _, bad := range []string{"shard=x&account=1&action=SendMessage", "shard=1&action=SendMessage", "shard=1&account=1", "shard=1&part=-1&account=1&action=SendMessage"} {
		_, query, err := readRouted(httptest.NewRequest(http.MethodPost, clusterDoPath+"?"+bad, strings.NewReader("{}")))
		if err == nil || !query {
			t.Fatalf("query %q: read as query form %v, error %v; want refused", bad, query, err)
		}
		if legacyDoRefusal(&peerRefusal{status: "400 Bad Request", msg: err.Error()}) {
			t.Fatalf("query %q: refused as a fifoq that reads only envelopes refuses (%v): its sender would take it for one", bad, err)
		}
	}
}

// TestEnvelopeReaderRefusesQueryForm reads every action's query form as a
// fifoq from before it does, which looks only at the body for an
// envelope: each must be refused, before anything is done, with the
// refusal its sender knows (legacyDoRefusal), or a cluster in a rolling
// upgrade would carry requests out wrongly, or not at all.
func TestEnvelopeReaderRefusesQueryForm(t *testing.T) {
	for _, action := range routedActions {
		d := doRouted{Shard: 1, Account: "000000000000", Action: action, Request: filledRequestJSON(t, action)}
		// What the older fifoq reads: the path without the query it
		// ignores.
		r := httptest.NewRequest(http.MethodPost, clusterDoPath, bytes.NewReader(d.Request))
		_, _, err := readRouted(r)
		if err == nil {
			t.Fatalf("%s's query form read as an envelope", action)
		}
		w := httptest.NewRecorder()
		writeJSONError(w, http.StatusBadRequest, err.Error())
		refusal := &peerRefusal{status: w.Result().Status, msg: strings.TrimSpace(w.Body.String())}
		if !legacyDoRefusal(refusal) {
			t.Fatalf("%s: the refusal %v is not known for an older fifoq's", action, refusal)
		}
	}
}

// TestEnvelopesSentForAMinute: a member that refused the query form is
// sent envelopes for legacyDoRecheck, then tried again.
func TestEnvelopesSentForAMinute(t *testing.T) {
	s := &Server{}
	if s.sendsEnvelopes("n2") {
		t.Fatal("a member never seen refuse the query form is sent envelopes")
	}
	s.legacyDo.Store("n2", time.Now())
	if !s.sendsEnvelopes("n2") || s.sendsEnvelopes("n3") {
		t.Fatal("a member that refused the query form is not sent envelopes, or another is")
	}
	s.legacyDo.Store("n2", time.Now().Add(-legacyDoRecheck))
	if s.sendsEnvelopes("n2") {
		t.Fatal("a member that refused the query form a minute ago is still sent envelopes")
	}
}
