package clustertest

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testenv"
)

// TestRoutedRequestFormsAcrossAnUpgrade upgrades, one member at a time,
// a cluster of three nodes with three shards from a fifoq that routes
// requests to other members only in POST /cluster/do's envelope form to
// one that sends its query form (internal/server/do_wire.go), while the
// failover workload's producers send batches of several groups to a
// high-throughput queue spread over the three shards: each batch is split
// by partition, and the parts another member leads are routed to it. The
// older version is a stand-in: the fifoq_faults build told to send and
// read envelopes only (FIFOQ_TEST_DO_ENVELOPES=1). An upgraded member must
// route to an older one (which refuses the query form, and is sent an
// envelope), an older member to an upgraded one (which still reads
// envelopes), and the history checker must find nothing acknowledged
// lost, nothing delivered twice and order kept in every group.
func TestRoutedRequestFormsAcrossAnUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover test runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "a rolling upgrade of the routed requests' form under load, about a minute")
	t.Parallel()
	bin := faultyBinary(t)
	older := []string{"FIFOQ_TEST_DO_ENVELOPES=1"}
	var first *node // the first member upgraded
	r := &run{
		sendGap:    50 * time.Millisecond,
		shards:     3,
		movable:    true,
		bins:       []string{bin, bin, bin},
		env:        [][]string{older, older, older},
		queueAttrs: map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"},
		nemesis: func(t *testing.T, c *cluster, _ *rand.Rand, pause func()) {
			waitPartitions(t, c, "failover.fifo", 3)
			t.Logf("nemesis: the queue spread over three shards")
			for _, nd := range c.nodes {
				pause()
				t.Logf("nemesis: %s: upgrade %s", time.Now().Format("15:04:05.000"), nd.id)
				c.sigterm(nd)
				nd.env = nil
				c.restart(nd)
				waitReady(t, nd)
				if first == nil {
					first = nd
				}
			}
			pause()
		},
	}
	runFailover(t, r)
	if len(r.problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", r.seed, strings.Join(r.problems, "\n  "))
	}
	// Every routed part of a batch must have been carried out: an older
	// member's refusal of the query form is for the member that routed
	// it to handle, not for the client to retry.
	if len(r.peerRefusals) > 0 {
		t.Errorf("%d requests were answered with a member's refusal of a routed request, the first: %s", len(r.peerRefusals), r.peerRefusals[0])
	}
	// While it was the only one upgraded, the first member routed parts
	// of batches to the older members, which refused the query form.
	if first != nil && !strings.Contains(first.tail(1<<30), "reads only the envelope form") {
		t.Errorf("%s, upgraded first, never found an older member refusing the query form: it routed nothing to one, or did not fall back; its log ends:\n%s", first.id, first.tail(30))
	}
}
