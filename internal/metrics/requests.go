package metrics

import (
	"time"
)

// UnknownAction is the action label of requests that failed before their
// action was known: refused by the signature check, too large, malformed.
const UnknownAction = "unknown"

// OutcomeOK is the outcome label of a request that succeeded.
const OutcomeOK = "ok"

// ObserveRequest counts one answered API request and its duration. action
// is the SQS action name (UnknownAction if not known), outcome OutcomeOK or
// the error code answered. Both must come from fixed sets, never from
// client input, so that the number of series stays bounded.
func (r *Registry) ObserveRequest(action, outcome string, took time.Duration) {
	if action == "" {
		action = UnknownAction
	}
	r.requests.WithLabelValues(action, outcome).Inc()
	r.duration.WithLabelValues(action).Observe(took.Seconds())
}
