package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/backup"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// BackupPath is where a server answers GET with a backup of its whole
// state (internal/backup's format), for `fifoq backup`. Only an admin key
// of the server's own account may take one: a backup holds every queue's
// messages.
const BackupPath = "/admin/backup"

// clusterBackupPath is where a member answers another's GET with a backup
// of one shard it holds a replica of (?shard=N), on the node-to-node port
// only: the member that asked verified the caller. It holds every message
// of the shard, so it is answered only to a trusted peer (trustedPeer:
// over mutual TLS, or where no credentials are configured).
const clusterBackupPath = "/cluster/backup"

// backupLog is a command log that can take a backup: the durable one.
type backupLog interface {
	Backup(w io.Writer, version string) (backup.Header, error)
}

// serveBackup streams a backup of this node's state. On a cluster member
// it is the member's own state, once it has applied what its leader had
// committed (catchUp): a follower serves it as well as the leader, and
// spares the leader the work. On a member of a cluster with shards it is a backup of every
// group (backupGroups).
func (s *Server) serveBackup(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.verifyAdmin(w, r, nil, "take a backup"); !ok {
		return
	}
	bl, ok := s.log.(backupLog)
	if !ok {
		writeJSONError(w, http.StatusBadRequest, "this server keeps its state in memory (--in-memory): there is nothing durable to back up")
		return
	}
	// A backup takes as long as its size does: the server's write
	// timeout, made for API answers, would cut it.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", `attachment; filename="fifoq.backup"`)
	if s.sharded() {
		cw := &countWriter{w: w}
		groups, err := s.backupGroups(r.Context(), cw, bl)
		if err != nil {
			// Once bytes have gone out the status cannot change; the file
			// is then cut short, which a restore refuses.
			s.logger.Error("backup failed", "err", err)
			if cw.n == 0 {
				writeJSONError(w, http.StatusServiceUnavailable, "backup failed: "+err.Error())
			}
			return
		}
		s.logger.Info("backup taken", "groups", groups, "bytes", strconv.FormatInt(cw.n, 10))
		return
	}
	if s.cluster != nil {
		s.catchUp(r.Context(), 0, s.cluster)
	}
	var hdr backup.Header
	cw := &countWriter{w: w}
	err := retryPart(r.Context(), cw, func(w io.Writer) (err error) {
		hdr, err = bl.Backup(w, s.cfg.Version)
		return err
	})
	if err != nil {
		s.logger.Error("backup failed", "err", err)
		if cw.n == 0 {
			writeJSONError(w, http.StatusServiceUnavailable, "backup failed: "+err.Error())
		}
		return
	}
	s.logger.Info("backup taken", "index", hdr.Index, "bytes", strconv.FormatInt(hdr.Size, 10), "messages", hdr.Messages)
}

// backupGroups writes a backup of every group of a cluster with shards
// (format 2): each shard's state, from this node's replica or else from
// one of the shard's replicas (serveClusterBackup), then the first
// group's, taken last so that its map names every queue the shards' parts
// hold. Each part is its group's state as of one of its entries; what
// leaves one group for another meanwhile is held in its source until the
// last part is read (holdDepartures), so that it is in one part or both.
func (s *Server) backupGroups(ctx context.Context, w io.Writer, first backupLog) ([]uint32, error) {
	groups := append(s.shards.Named(), 0)
	defer s.holdDepartures(ctx, groups)()
	hdr := backup.Header{Created: time.Now().UTC(), Node: s.cluster.NodeID(), Version: s.cfg.Version, Region: s.cfg.Region, Groups: groups}
	if err := backup.WriteGroupsHeader(w, hdr); err != nil {
		return groups, err
	}
	for _, id := range groups[:len(groups)-1] {
		if err := s.backupShard(ctx, w, id); err != nil {
			return groups, fmt.Errorf("shard %d: %w", id, err)
		}
	}
	s.catchUp(ctx, 0, s.cluster)
	err := retryPart(ctx, w, func(w io.Writer) error {
		_, err := first.Backup(w, s.cfg.Version)
		return err
	})
	return groups, err
}

// holdLife is how long a backup's hold of departures lasts unless the
// backup renews it, every holdRenew: a backup that dies leaves its hold
// for at most that long.
const (
	holdLife  = 2 * time.Minute
	holdRenew = 30 * time.Second
)

// holdDepartures holds, in every group of groups, what leaves it for
// another group (engine/hold.go: an outbox's settle, a moved queue's drop,
// a new move), until the returned function is called or the backup's
// context ends. Every group is held before the first part is read: then
// a source that forgets something only after its destination took it
// cannot forget it between the destination's part and its own. A group
// whose hold cannot be applied (no leader within stepWait, or a cluster
// that does not write log entry format 13 yet: a rolling upgrade) is
// backed up without one, and the log says what that risks.
func (s *Server) holdDepartures(ctx context.Context, groups []uint32) (lift func()) {
	id := "backup-" + newUUID()
	steps := moveSteps{s}
	// The first group first: where the cluster's record of its format is
	// not yet 13, its hold raises it (every member reads it), and the
	// shards' holds, which may not raise it themselves, then go through.
	order := append([]uint32{0}, slices.DeleteFunc(slices.Clone(groups), func(g uint32) bool { return g == 0 })...)
	hold := func(ctx context.Context, until time.Time) {
		for _, g := range order {
			req := &engine.HoldDeparturesRequest{ID: id}
			if !until.IsZero() {
				req.Until = until.UnixNano()
			}
			if err := steps.Step(ctx, g, api.QueueKey{}, req); err != nil && !until.IsZero() && ctx.Err() == nil {
				s.logger.Warn("backup: could not hold what leaves a group during the backup: a message dead-lettered, or a queue moved, from it to another group meanwhile may be in neither part",
					"group", g, "err", err)
			}
		}
	}
	hold(ctx, s.now().Add(holdLife))
	done := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(holdRenew)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				hold(ctx, s.now().Add(holdLife))
			}
		}
	}()
	return func() {
		close(done)
		<-renewed
		// Lifted even if the backup's request ended: its hold would
		// otherwise hold moves and dead letters for holdLife more.
		lctx, cancel := context.WithTimeout(context.Background(), stepWait)
		defer cancel()
		hold(lctx, time.Time{})
	}
}

// groupReplica is a node's replica of one group, as catchUp reads it.
type groupReplica interface {
	Leading() bool
	Status() replog.NodeStatus
}

// backupCatchUp bounds how long a follower's replica waits to apply what
// its leader had committed before a backup reads it.
const backupCatchUp = 5 * time.Second

// catchUp waits until this node's replica of group id (0, the first, or
// a shard) has applied what the group's leader had committed when asked,
// so that a backup read through a follower holds every write acknowledged
// before it began, as one read through the leader does: a follower
// learns that the last entries of a burst are committed only with the
// leader's next append (a shard's CommitTimeout, 1 s, later). A
// leader, or a follower whose leader does not answer, is backed up as it
// is; so is one that has not caught up within backupCatchUp.
func (s *Server) catchUp(ctx context.Context, id uint32, g groupReplica) {
	if g.Leading() {
		return
	}
	st := g.Status()
	if st.LeaderAddr == "" {
		return
	}
	info, err := s.askNode(ctx, st.LeaderAddr)
	if err != nil {
		return
	}
	target, ok := info.CommitIndex, info.State == "Leader"
	if id != 0 {
		ok = false
		for _, p := range info.Shards {
			if p.Shard == id && p.State == "Leader" {
				target, ok = p.CommitIndex, true
			}
		}
	}
	if !ok {
		return
	}
	deadline := time.Now().Add(backupCatchUp)
	for g.Status().AppliedIndex < target && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// backupPartWait bounds how long a backup waits for one group's part:
// a group formed a moment ago, or a replica just added to one, has
// applied nothing and has no state to back up until it has, and a
// replica asked may be restarting or moving away. An operator's backup
// so waits those seconds out rather than failing as a whole.
const backupPartWait = 30 * time.Second

// retryPart calls write until it succeeds, or fails after writing some
// of its part (the file is then cut short, which a restore refuses), or
// backupPartWait has passed, waiting a quarter of a second between tries.
func retryPart(ctx context.Context, w io.Writer, write func(w io.Writer) error) error {
	cw := &countWriter{w: w}
	deadline := time.Now().Add(backupPartWait)
	for {
		err := write(cw)
		if err == nil || cw.n > 0 || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// backupShard writes a backup of shard id: this node's replica's state if
// it holds one, else one replica's after another until one answers
// (retryPart).
func (s *Server) backupShard(ctx context.Context, w io.Writer, id uint32) error {
	return retryPart(ctx, w, func(w io.Writer) error { return s.backupShardOnce(ctx, w, id) })
}

// backupShardOnce tries this node's replica of shard id, if it holds one,
// then each other replica the map names, until one has written the part.
func (s *Server) backupShardOnce(ctx context.Context, w io.Writer, id uint32) error {
	var tried []string
	if l, ok := s.shards.Shard(id); ok {
		s.catchUp(ctx, id, l)
		cw := &countWriter{w: w}
		_, err := l.Backup(cw, s.cfg.Version)
		if err == nil || cw.n > 0 {
			return err
		}
		tried = append(tried, "this node's replica: "+err.Error())
	}
	for _, p := range s.shards.Replicas(id) {
		if p.ID == s.cluster.NodeID() {
			continue // its replica is open here, or not yet
		}
		sent, err := s.fetchShardBackup(ctx, w, p.Addr, id)
		if err == nil {
			return nil
		}
		if sent {
			return err // part of it went out: the file is cut here
		}
		tried = append(tried, fmt.Sprintf("replica %s: %v", p.ID, err))
	}
	if len(tried) == 0 {
		return errors.New("no replica in this node's map")
	}
	return errors.New(strings.Join(tried, "; "))
}

// fetchShardBackup copies a backup of shard id from the member at
// raftAddr to w, checking it as it goes (its format, its group, its
// checksum); sent reports whether any of it reached w.
func (s *Server) fetchShardBackup(ctx context.Context, w io.Writer, raftAddr string, id uint32) (sent bool, err error) {
	resp, err := s.askPeer(ctx, http.MethodGet, raftAddr, clusterBackupPath+"?shard="+strconv.FormatUint(uint64(id), 10), nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	cw := &countWriter{w: w}
	hdr, snap, err := backup.Read(io.TeeReader(resp.Body, cw))
	if err == nil && hdr.Shard != id {
		err = fmt.Errorf("it answered a backup of shard %d", hdr.Shard)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, snap)
	}
	return cw.n > 0, err
}

// serveClusterBackup answers another member's ask for a backup of one
// shard this node holds a replica of (fetchShardBackup).
func (s *Server) serveClusterBackup(w http.ResponseWriter, r *http.Request) {
	if !fromPeer(r) || s.shards == nil {
		writeJSONError(w, http.StatusNotFound, "no such endpoint")
		return
	}
	if !s.trustedPeer(r) {
		writeJSONError(w, http.StatusForbidden, "a shard's backup is given to another member only over mutual TLS between the members (--raft-tls-*) where credentials are configured; take the backup through a member that holds every shard, or give the members TLS")
		return
	}
	id, err := strconv.ParseUint(r.URL.Query().Get("shard"), 10, 32)
	if err != nil || id == 0 {
		writeJSONError(w, http.StatusBadRequest, "want ?shard=N, N from 1")
		return
	}
	l, ok := s.shards.Shard(uint32(id))
	if !ok {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("this node holds no replica of shard %d", id))
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	s.catchUp(r.Context(), uint32(id), l)
	w.Header().Set("Content-Type", "application/octet-stream")
	hdr, err := l.Backup(w, s.cfg.Version)
	if err != nil {
		s.logger.Error("backup of a shard for another member failed", "shard", id, "by", r.Header.Get(hdrForwardedBy), "err", err)
		if hdr.Size == 0 {
			writeJSONError(w, http.StatusServiceUnavailable, "backup failed: "+err.Error())
		}
	}
}

// countWriter counts the bytes it passes on.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

var _ backupLog = (*replog.Raft)(nil)
