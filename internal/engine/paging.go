package engine

import (
	"encoding/base64"
	"sort"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// A list token names the last queue of the page it ends, so that the next
// page starts after it even if queues were created or deleted in between.
// It is opaque to clients: a version prefix and the name, base64-encoded.
const tokenPrefix = "fifoq-v1:"

func encodeToken(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(tokenPrefix + last))
}

// ListToken returns the list token of a page that ends with the queue
// name last: how a server that lists several engines' queues as one
// (a cluster's shards) ends its merged page.
func ListToken(last string) string { return encodeToken(last) }

func decodeToken(tok string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || !strings.HasPrefix(string(b), tokenPrefix) {
		return "", false
	}
	return strings.TrimPrefix(string(b), tokenPrefix), true
}

// paginate sorts names and returns the page after token. Without
// maxResults it returns up to MaxListQueuesResults names and no token, as
// SQS does; with it, a token whenever names remain.
func paginate(names []string, token string, maxResults *int) (page []string, next string, err error) {
	sort.Strings(names)
	if token != "" {
		last, ok := decodeToken(token)
		if !ok {
			return nil, "", api.ErrInvalidParameterValue("Invalid NextToken value.")
		}
		names = names[sort.SearchStrings(names, last):]
		if len(names) > 0 && names[0] == last {
			names = names[1:]
		}
	}
	limit := api.MaxListQueuesResults
	if maxResults != nil {
		limit = min(max(*maxResults, 1), api.MaxListQueuesResults)
	}
	if len(names) <= limit {
		return names, "", nil
	}
	page = names[:limit]
	if maxResults != nil {
		next = encodeToken(page[len(page)-1])
	}
	return page, next, nil
}
