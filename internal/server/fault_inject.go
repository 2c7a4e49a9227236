//go:build fifoq_faults

package server

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// A binary built with -tags fifoq_faults misbehaves on purpose when the
// environment variable FIFOQ_TEST_FAULT names a fault, as KIND:N (every Nth
// request of the kind):
//
//   - lose-send:N acknowledges every Nth SendMessage with a made-up
//     MessageId and never applies it, as a node that answered before its
//     log entry committed and then lost it would;
//   - drop-delete:N acknowledges every Nth DeleteMessage without applying it.
//
// The cluster failover test (internal/clustertest) runs such a node to show
// that its history check fails.
//
// FIFOQ_TEST_CLOCK_SKEW, a duration, sets the server's wall clock that far
// off the machine's, as a node whose NTP failed would be.
//
// FIFOQ_TEST_DO_ENVELOPES=1 makes the node route requests to other members
// as a fifoq from before POST /cluster/do's query form did (envelopes
// only), as the older version of a rolling upgrade.
func init() {
	faultEnvelopesOnly = os.Getenv("FIFOQ_TEST_DO_ENVELOPES") == "1"
	if d, err := time.ParseDuration(os.Getenv("FIFOQ_TEST_CLOCK_SKEW")); err == nil {
		faultClockSkew = d
	}
	kind, every, ok := strings.Cut(os.Getenv("FIFOQ_TEST_FAULT"), ":")
	n, err := strconv.Atoi(every)
	if !ok || err != nil || n < 1 {
		return
	}
	var count atomic.Int64
	hit := func() bool { return count.Add(1)%int64(n) == 0 }
	switch kind {
	case "lose-send":
		faultHook = func(req api.Request) (api.Response, bool) {
			r, ok := req.(*api.SendMessageRequest)
			if !ok || !hit() {
				return nil, false
			}
			return &api.SendMessageResult{MessageId: newUUID(), MD5OfMessageBody: api.MD5OfBody(r.MessageBody),
				SequenceNumber: "10000000000000000000"}, true
		}
	case "drop-delete":
		faultHook = func(req api.Request) (api.Response, bool) {
			if _, ok := req.(*api.DeleteMessageRequest); !ok || !hit() {
				return nil, false
			}
			return api.Empty{}, true
		}
	}
}
