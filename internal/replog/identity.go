package replog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/engine"
)

// A member of a cluster is not only its node id: it is its id and the data
// dir that holds its log, the terms it voted in, and what it acknowledged.
// A node whose data dir was lost (a volume replaced, a directory wiped) and
// that is started again with its usual flags would bootstrap an empty log
// and take part as itself: a voter with no memory of its votes, which can
// vote twice in a term and help elect a node that lacks an acknowledged
// write. So each data dir has an incarnation, a random id made with it
// (incarnationFile), and the cluster records each member's incarnation in
// its replicated state (the engine's metadata, key "member/ID", which the
// log applies and snapshots like any state: every member knows every
// other's). Every connection between members begins with a hello that
// names the dialer's id and incarnation and the incarnation it expects of
// the node it dials (peerMux.dial, answerHello); a node that finds itself
// or its peer to be another incarnation than the one recorded refuses the
// connection, and a node told it is stale stops (Raft.fence), saying to
// remove it and add it anew.
//
// The leader records incarnations it learns from hellos (and from join
// requests) only once it knows every member's: a member that speaks no
// hello is a fifoq from before incarnations, which could not apply the
// record (fifoq:SetMeta) and would stop at it. A node wiped before its
// incarnation was recorded is not caught. Adding an id that is already a
// member is refused: it must be removed first, which forgets its record.
// (Raft's own membership addresses could carry the record, but changing a
// member's address races in hashicorp/raft 1.8's replication, whose
// goroutines read the peer unlocked: hashicorp/raft#681.)

// incarnationFile holds the data dir's incarnation.
const incarnationFile = "incarnation"

// admittedFile holds the incarnation a join request added the data dir's
// node as (Raft.Admitted).
const admittedFile = "admitted"

// Admitted records that a member added this node to the cluster, as its
// present incarnation, at its join request: until the node's own log has
// caught up and records that itself, a member that claims another
// incarnation for it is behind, and does not stop it (peerMux.recordsSelf),
// nor does a record of its own earlier incarnation in its state, which
// then predates its admission. The record is kept in the data dir, for a
// joiner restarted before it caught up, and dropped once the node's state,
// and a snapshot of it, records it (forgetAdmitted). `fifoq serve --join`
// calls it once the join is answered.
func (l *Raft) Admitted() error {
	if l.cluster == nil {
		return nil
	}
	if err := WriteFileSynced(filepath.Join(l.cfg.Dir, admittedFile), l.incarnation+"\n"); err != nil {
		return fmt.Errorf("record that the cluster added this node: %w", err)
	}
	inc := l.incarnation
	l.cluster.mux.admitted.Store(&inc)
	return nil
}

// forgetAdmitted drops the record Admitted made once this node's own
// state records its incarnation, and a snapshot on disk does too: from
// then on that state speaks for it, also after a restart (which starts
// from the newest snapshot), and a copy of the data dir restored after the
// node was replaced again holds no word that it was added.
func (l *Raft) forgetAdmitted() {
	c := l.cluster
	admitted := c.mux.admitted.Load()
	if admitted == nil || *admitted != l.incarnation {
		return
	}
	if c.selfRecordedAt == 0 {
		if rec, _ := l.recordedIncarnation(l.cfg.NodeID); rec != l.incarnation {
			return
		}
		c.selfRecordedAt = max(l.stateIndex(), 1)
	}
	if l.newestSnapshotIndex() < c.selfRecordedAt {
		return
	}
	if err := os.Remove(filepath.Join(l.cfg.Dir, admittedFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.logger.Warn("could not remove the record that a join added this node", "err", err)
		return
	}
	c.mux.admitted.Store(nil)
}

// stateIndex is the index of the log entry that the replicated state
// holds up to: a peer's hello is judged by it (peerMux.settle).
func (l *Raft) stateIndex() uint64 {
	if l.fsm.restored.Load() {
		// Restored from the newest snapshot, and nothing applied since.
		return l.newestSnapshotIndex()
	}
	return l.fsm.applied.Load()
}

// loadAdmitted tells mux the incarnation the data dir's node was added as
// by a join, if it was.
func loadAdmitted(dir string, mux *peerMux) {
	b, err := os.ReadFile(filepath.Join(dir, admittedFile))
	if err != nil {
		return
	}
	if inc := strings.TrimSpace(string(b)); validIncarnation(inc) {
		mux.admitted.Store(&inc)
	}
}

// loadIncarnation returns the incarnation of the data dir dir, making one
// if it has none: a new data dir, or one of a fifoq from before
// incarnations (its state proves it is the same node).
func loadIncarnation(dir string) (string, error) {
	path := filepath.Join(dir, incarnationFile)
	b, err := os.ReadFile(path)
	if err == nil {
		inc := strings.TrimSpace(string(b))
		if !validIncarnation(inc) {
			return "", fmt.Errorf("%s does not hold an incarnation (32 hex digits): %q", path, inc)
		}
		return inc, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	inc := hex.EncodeToString(r[:])
	if err := WriteFileSynced(path, inc+"\n"); err != nil {
		return "", fmt.Errorf("record the data dir's incarnation in %s: %w", path, err)
	}
	return inc, nil
}

// syncDirOf syncs the directory that holds path, so that a file made or
// renamed in it survives a crash.
func syncDirOf(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// validIncarnation reports whether s is an incarnation: 32 lowercase hex
// digits.
func validIncarnation(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// fencedError is why a node stopped: the cluster knows its id under
// another incarnation.
type fencedError struct{ msg string }

func (e *fencedError) Error() string { return e.msg }

// fenceMessage tells the operator of a stale node what to do.
func fenceMessage(id, detail string) string {
	return fmt.Sprintf("node %s is fenced: %s. Its data dir is not the one the cluster knows as %s (was it lost or replaced?); "+
		"on a running member run `fifoq cluster remove %s`, then start this node with an empty data dir and --join", id, detail, id, id)
}

// memberKey is the engine metadata key of member id's incarnation.
func memberKey(id string) string { return "member/" + id }

// recordedIncarnation returns the incarnation recorded for node id ("" if
// none), and whether id is a member.
func (l *Raft) recordedIncarnation(id string) (string, bool) {
	f := l.raft.GetConfiguration()
	if f.Error() != nil {
		return "", false
	}
	member := false
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			member = true
			break
		}
	}
	var inc string
	l.Read(func(e *engine.Engine) { inc = e.Meta(memberKey(id)) })
	return inc, member
}

// expectedAt returns the incarnation recorded for the member whose Raft
// address is addr, or "".
func (l *Raft) expectedAt(addr string) string {
	if id := l.memberAt(addr); id != "" {
		inc, _ := l.recordedIncarnation(id)
		return inc
	}
	return ""
}

// memberAt returns the id of the member whose Raft address is addr, or "".
func (l *Raft) memberAt(addr string) string {
	f := l.raft.GetConfiguration()
	if f.Error() != nil {
		return ""
	}
	for _, s := range f.Configuration().Servers {
		if string(s.Address) == addr {
			return string(s.ID)
		}
	}
	return ""
}

// Incarnation returns this node's incarnation (see identity.go).
func (l *Raft) Incarnation() string { return l.incarnation }

// learned is told of a node's incarnation by a hello, or by a join
// request. Every node keeps what it learns (a candidate's hellos may be
// the only ones: Raft keeps their connections for when it leads); the
// leader records, once it knows every member's, those of members with
// none recorded (recordKnown), and what it learned of others is dropped.
func (l *Raft) learned(id, incarnation string, format byte) {
	c := l.cluster
	c.learnMu.Lock()
	if c.learnedIncs == nil {
		c.learnedIncs = map[string]string{}
		c.learnedFormats = map[string]byte{}
	}
	c.learnedIncs[id] = incarnation
	if format != 0 {
		c.learnedFormats[id] = format
	}
	c.learnMu.Unlock()
	select {
	case c.learn <- struct{}{}:
	default: // the recorder has been told already
	}
}

// recordIncarnations records in the replicated state the incarnations the
// leader learns, off the goroutines that learn them. It holds them until
// it knows the incarnation of every member (see the gate above).
func (l *Raft) recordIncarnations() {
	defer l.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-l.cluster.learn:
		case <-tick.C:
		case <-l.quit:
			return
		}
		f := l.raft.GetConfiguration()
		if f.Error() != nil {
			continue
		}
		members := map[string]bool{}
		for _, srv := range f.Configuration().Servers {
			members[string(srv.ID)] = true
		}
		// What was learned of a node that is no longer a member is
		// forgotten: if it is added anew, its new data dir says hello.
		c := l.cluster
		c.learnMu.Lock()
		known := map[string]string{l.cfg.NodeID: l.incarnation}
		for id, inc := range c.learnedIncs {
			if members[id] {
				known[id] = inc
			} else {
				delete(c.learnedIncs, id)
				delete(c.learnedFormats, id)
			}
		}
		c.learnMu.Unlock()
		l.forgetAdmitted()
		if l.raft.State() != raft.Leader || l.fsm.fatal.Load() != nil || l.faults.err() != nil {
			continue
		}
		l.recordKnown(known)
	}
}

// recordKnown records the incarnations in known that are not recorded
// yet, if known (or the record) covers every member and every member
// reads the record (its entry format, format.go).
func (l *Raft) recordKnown(known map[string]string) {
	if l.format.Load() < uint32(minVersionSetMeta) {
		return
	}
	f := l.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	servers := f.Configuration().Servers
	recorded := make(map[string]string, len(servers))
	l.Read(func(e *engine.Engine) {
		for _, s := range servers {
			recorded[string(s.ID)] = e.Meta(memberKey(string(s.ID)))
		}
	})
	type record struct{ id, incarnation string }
	var missing []record
	for _, s := range servers {
		id := string(s.ID)
		switch rec := recorded[id]; {
		case rec != "":
		case known[id] != "":
			missing = append(missing, record{id: id, incarnation: known[id]})
		default:
			return // a member not heard from yet, or too old to say
		}
	}
	for _, m := range missing {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := l.setMeta(ctx, memberKey(m.id), m.incarnation)
		cancel()
		if err != nil {
			l.logger.Warn("could not record a member's incarnation", "node_id", m.id, "err", err)
			return
		}
		l.logger.Info("recorded a member's incarnation", "node_id", m.id, "incarnation", m.incarnation)
	}
}

// setMeta applies a change of the engine's metadata through the log. The
// command carries no time (the engine keeps the latest it has seen):
// metadata has nothing to do with the queues' clock.
func (l *Raft) setMeta(ctx context.Context, key, value string) error {
	_, err := l.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: key, Value: value}})
	return err
}

// fence stops this node: the cluster knows its id under another
// incarnation (see identity.go).
func (l *Raft) fence(detail string) {
	l.faults.halt(&fencedError{msg: fenceMessage(l.cfg.NodeID, detail)})
}

// outdated stops this node: it does not read the cluster's entry format
// (format.go).
func (l *Raft) outdated(detail string) {
	l.faults.halt(&fencedError{msg: fmt.Sprintf("node %s is older than its cluster: %s", l.cfg.NodeID, detail)})
}
