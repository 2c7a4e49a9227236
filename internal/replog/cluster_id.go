package replog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/fifoq/fifoq/internal/engine"
)

// Node ids and incarnations tell the members of one cluster apart; they do
// not tell one cluster from another. Two clusters can have members of the
// same id: a backup of a cluster restored beside it (its first node given
// the id of one of the original's, as people do), or two clusters started
// with the same --node-id names whose --peers or `fifoq cluster add` named
// a node of the other by mistake. Within one cluster a hello believes the
// side whose replicated state is further along (peerMux.settle), since both
// states are prefixes of one log; a node of another cluster whose log is
// longer would be believed too, and its leader's entries could overwrite a
// member's log.
//
// So, as etcd gives each cluster an id that every message between members
// carries, a fifoq cluster has one: a random id its first leader records
// in the replicated state (the engine's metadata, key clusterIDKey) before
// it serves, that never changes but at a restore, which gives the restored
// data dir a new one before it serves. At every hello between two
// members that read entry format minVersionClusterID, the acceptor asks
// "cluster? ID\n" (ID: its own cluster's, "-" if none is recorded yet)
// before anything else, and the dialer answers "cluster ID\n". Two ids
// that differ refuse the connection ("other-cluster REASON\n" from the
// acceptor, a closed connection from the dialer), and neither side stops:
// the other cluster's node says nothing about this one.
//
// A node whose state records no id yet is a new member catching up, or a
// member back from a stop that began before the id was recorded. It is
// accepted by a node whose state records one only as a member, and never
// believed further along than such a node (a state that is ahead of one
// that records the id records it too). A node of a fifoq from before
// cluster ids says an older format in its hello: it is never asked, and
// judged by incarnations alone, as before.

// clusterIDKey is the engine metadata key of the cluster's id.
const clusterIDKey = "cluster/id"

// noClusterID stands in a hello for a cluster id not recorded yet.
const noClusterID = "-"

// newClusterID returns a random cluster id: 32 hex digits.
func newClusterID() (string, error) {
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(r[:]), nil
}

// clusterID returns the id this node's replicated state records for its
// cluster, "" if none.
func (l *Raft) clusterID() string {
	if l.host != nil {
		return l.host.clusterID() // the record is in the first group
	}
	var id string
	l.Read(func(e *engine.Engine) { id = e.Meta(clusterIDKey) })
	return id
}

// recordClusterID records a new id for the cluster if its state records
// none yet, and reports whether the leader may serve. A member that
// cannot apply the record (an older fifoq, format.go) is not sent it.
func (l *Raft) recordClusterID() bool {
	if l.cluster == nil || l.host != nil || l.format.Load() < uint32(minVersionSetMeta) {
		return true
	}
	if l.clusterID() != "" {
		return true
	}
	id, err := newClusterID()
	if err != nil {
		l.logger.Warn("could not make an id for the cluster", "err", err)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Of two leaders that each found none (the first's record committed
	// after the second looked), the first in the log wins, where every
	// member can tell which one that is.
	req := &engine.SetMetaRequest{Key: clusterIDKey, Value: id, IfAbsent: l.format.Load() >= uint32(minVersionShards)}
	if _, err := l.Apply(ctx, &engine.Command{Request: req}); err != nil {
		l.logger.Warn("could not record the cluster's id", "err", err)
		return false
	}
	l.logger.Info("recorded the cluster's id", "cluster_id", l.clusterID())
	return true
}

// refuseOtherCluster returns an ErrOtherCluster if the node at addr, about
// to be added as id, answers a hello as a node of another cluster: a node
// started with a data dir it kept from another cluster, or an address
// given by mistake, which the hello would refuse for good once it is a
// member. A node that does not answer (not started yet) or answers
// otherwise is not refused here: its hellos judge it once it is added.
func (l *Raft) refuseOtherCluster(ctx context.Context, id, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := l.cluster.mux.dial(ctx, addr, muxHTTP)
	if err == nil {
		conn.Close()
		return nil
	}
	if errors.Is(err, ErrOtherCluster) {
		return fmt.Errorf("cannot add %s at %s, which is not of this cluster (%w); a node joins with an empty data dir", id, addr, err)
	}
	return nil
}
