package protocol

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// SQS answers a request of the AWS Query protocol that asks for JSON
// (Accept: application/json) in JSON rather than XML: the Query response
// document as JSON objects, its result's list members under lower-camel
// names, every member present (null when empty). Recorded for ListQueues
// only: LocalStack's AWS-validated test_get_list_queues_with_query_auth;
// AWS's answers quoted in localstack/localstack#3715 (2021: an empty list
// as []) and JuliaCloud/AWS.jl#127 (2020):
//
//	{"ListQueuesResponse": {"ListQueuesResult": {"NextExclusiveStartQueueName": null,
//	  "NextToken": null, "queueUrls": ["https://..."]},
//	  "ResponseMetadata": {"RequestId": "..."}}}
//
// Other actions, whose JSON form no recording shows, are answered in XML
// as before.

// WantsQueryJSON reports whether a Query request asks for a JSON answer.
func WantsQueryJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// WriteQueryJSON writes resp, the result of action, in the JSON form of
// the Query protocol, and reports whether it did: false when that form of
// the action is not known, and nothing was written.
func WriteQueryJSON(w http.ResponseWriter, action api.Action, resp api.Response, requestID string) bool {
	r, ok := resp.(*api.ListQueuesResult)
	if !ok || action != api.ActionListQueues {
		return false
	}
	urls := r.QueueUrls
	if urls == nil {
		urls = []string{}
	}
	var next *string
	if r.NextToken != "" {
		next = &r.NextToken
	}
	doc := map[string]any{"ListQueuesResponse": map[string]any{
		"ListQueuesResult": map[string]any{
			"NextExclusiveStartQueueName": nil,
			"NextToken":                   next,
			"queueUrls":                   urls,
		},
		"ResponseMetadata": map[string]string{"RequestId": requestID},
	}}
	body, err := json.Marshal(doc)
	if err != nil {
		return false
	}
	writeBody(w, http.StatusOK, "application/json", requestID, body)
	return true
}
