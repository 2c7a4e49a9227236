package replog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fifoq/fifoq/internal/engine"
)

// A cluster's members are all of one region. The log's commands name a
// request's region only when it is not the node's own (region.go), so a
// member started with another --region would apply the leader's commands
// to queues of its own region: its state would differ from the others'
// without a word, and show once it leads; and it could not restore a
// snapshot the leader sends, which the leader would send again and again.
//
// So the cluster records its region in its replicated state (the engine's
// metadata, key clusterRegionKey). A leader records its own when no region
// is recorded yet: before it serves as leader (watchLeadership), or, while
// some member cannot apply the record, once every member can (keepFormat);
// a
// member whose region is another stops before it applies the record or a
// snapshot of another region, as a fenced member does, saying how to bring
// it back. A node started with --join says its region, and the member it
// asks refuses another before adding it (the server's serveClusterAdd).
//
// In a cluster started with --peers, the region of the node that leads
// first becomes the cluster's: with one node misconfigured, either that
// node stops or, if it happened to lead first, the others do, each naming
// the region the cluster has. Either way no member serves queues of a
// region that is not the cluster's.

// clusterRegionKey is the engine metadata key of the cluster's region.
const clusterRegionKey = "cluster/region"

// regionRefusal is why a member of region stops: its cluster's queues are
// of region clusterRegion.
func regionRefusal(nodeID, region, clusterRegion string) error {
	return &fencedError{msg: fmt.Sprintf("node %s was started with --region %s, and its cluster's queues are of region %s: "+
		"a member cannot be of another region. On a running member run `fifoq cluster remove %s`, "+
		"then start this node with --region %s, an empty data dir and --join",
		nodeID, region, clusterRegion, nodeID, clusterRegion)}
}

// checkRegionRecord returns the refusal of a member whose region is not
// the one cmds record as the cluster's, or nil.
func (f *fsm) checkRegionRecord(cmds []*engine.Command) error {
	if f.region == "" {
		return nil
	}
	for _, c := range cmds {
		if m, ok := c.Request.(*engine.SetMetaRequest); ok && m.Key == clusterRegionKey && m.Value != f.region {
			return regionRefusal(f.nodeID, f.region, m.Value)
		}
	}
	return nil
}

// installRegionRefusal turns a snapshot the leader sent that is of another
// region into the member's refusal, or returns nil.
func (f *fsm) installRegionRefusal(err error) error {
	var re *engine.RegionError
	if f.region == "" || !errors.As(err, &re) {
		return nil
	}
	return regionRefusal(f.nodeID, f.region, re.Snapshot)
}

// recordRegion records this leader's region as the cluster's if none is
// recorded yet, and reports whether the leader may serve. A member that
// cannot apply the record (an older fifoq, format.go) is not sent it.
func (l *Raft) recordRegion() bool {
	if l.format.Load() < uint32(minVersionSetMeta) {
		return true
	}
	var recorded string
	l.Read(func(e *engine.Engine) { recorded = e.Meta(clusterRegionKey) })
	if recorded != "" {
		// Applying a record of another region stopped this node.
		return recorded == l.cfg.Engine.Region
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.setMeta(ctx, clusterRegionKey, l.cfg.Engine.Region); err != nil {
		l.logger.Warn("could not record the cluster's region", "err", err)
		return false
	}
	l.logger.Info("recorded the cluster's region", "region", l.cfg.Engine.Region)
	return true
}
