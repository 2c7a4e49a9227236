package shards

import (
	"context"
	"slices"

	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// Leaving: a member to be removed gives its replicas up first.
//
// A member removed from the first group at once leaves each shard it held
// one replica short until the shard replaces it; a second removal before
// then can take a shard of three below its quorum, for good. So a removal
// (fifoq cluster remove) first marks the member leaving, in the first
// group's state: "shards/leaving/ID", the member's incarnation as the
// value. The map then counts it out (voters), so the first group's
// leader moves its replicas to the other members (rebalance) and each
// shard's leader adds the new replica before it removes the old one
// (replog's matchWanted), its quorum whole throughout. The removal itself
// is made once no shard holds a replica there, and then clears the mark.
//
// The mark names an incarnation so that it cannot outlive the data dir
// it was made for: a member removed and added again with an empty data
// dir (a new incarnation) is not leaving, whatever mark a removal
// interrupted between its two steps left behind.

// leavingPrefix starts the keys of the leaving marks.
const leavingPrefix = shardPrefix + "leaving/"

// leavingKey is member id's leaving mark.
func leavingKey(id string) string { return leavingPrefix + id }

// leaving returns the members marked leaving, of members: those whose
// mark names their present incarnation (or was made before the cluster
// knew it).
func (s *Set) leaving(members []replog.Member) map[string]bool {
	out := map[string]bool{}
	s.host.Read(func(e *engine.Engine) {
		for _, m := range members {
			inc := e.Meta(leavingKey(m.ID))
			if inc != "" && (inc == m.Incarnation || inc == noIncarnation) {
				out[m.ID] = true
			}
		}
	})
	return out
}

// noIncarnation is a leaving mark's value for a member whose incarnation
// the cluster had not recorded (a metadata value cannot be empty).
const noIncarnation = "-"

// Drain marks member id leaving, so that the map moves its replicas to
// the other members, and returns the shards whose replicas the map still
// wants on it; none once the map has moved them all (the shards
// themselves may not have yet: the server asks their leaders). The only
// voter keeps its replicas, having nowhere to move them. Only on the
// first group's leader.
func (s *Set) Drain(ctx context.Context, id string) ([]uint32, error) {
	members, err := s.host.Members()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(members, func(m replog.Member) bool { return m.ID == id })
	if i < 0 {
		return nil, nil
	}
	inc := members[i].Incarnation
	if inc == "" {
		inc = noIncarnation
	}
	if !s.leaving(members)[id] {
		if _, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: leavingKey(id), Value: inc}}); err != nil {
			return nil, err
		}
		s.cfg.Logger.Info("shards: a member is leaving; the map moves its replicas to the others", "node_id", id)
		if err := s.rebalance(); err != nil {
			return nil, err
		}
	}
	return s.wantedOn(id), nil
}

// Drained clears member id's leaving mark, once it is removed.
func (s *Set) Drained(ctx context.Context, id string) error {
	var marked bool
	s.host.Read(func(e *engine.Engine) { marked = e.Meta(leavingKey(id)) != "" })
	if !marked {
		return nil
	}
	_, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: leavingKey(id)}})
	return err
}

// wantedOn returns the shards whose replicas the map wants on node id.
func (s *Set) wantedOn(id string) []uint32 {
	var out []uint32
	for _, sh := range s.Named() {
		if slices.ContainsFunc(s.Replicas(sh), func(p replog.Peer) bool { return p.ID == id }) {
			out = append(out, sh)
		}
	}
	return out
}

// withoutLeaving returns voters less the members marked leaving, unless
// that leaves none.
func withoutLeaving[T ~string](voters []T, leaving map[string]bool) []T {
	out := slices.DeleteFunc(slices.Clone(voters), func(v T) bool { return leaving[string(v)] })
	if len(out) == 0 {
		return voters
	}
	return out
}
