package replog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/backup"
	"github.com/fifoq/fifoq/internal/engine"
)

// A backup is a snapshot of the log (the engine's whole state as of one
// log entry) taken on demand, with the message bodies put back in, in the
// frame a follower installs (snapshotStore.Open), wrapped in the backup
// file format (internal/backup). Raft takes it as it takes its own
// snapshots: the engine's state is viewed at one entry and written while
// commands go on being applied, so writes keep flowing. Any member can
// take one of its own state; a follower's is as of the entries it has
// applied.
//
// A restore hands the snapshot to Raft.Restore on a new, empty log of one
// node: Raft keeps that log's membership (the node restoring), installs the
// snapshot past its last entry, and the node then serves the backup's
// state; other nodes join it as a new cluster. The members' incarnations
// recorded in the backup are of another cluster's data dirs and are
// removed.
//
// A backup belongs to the region of the server it was taken of (its
// header's Region; in a backup of a fifoq from before that field, its
// snapshot's header says it), and is restored only into a data dir of that
// region (region.go). ReadBackup reads both headers before a restore
// writes anything, so that a backup this fifoq cannot install is refused
// before a data dir is made. The check must come first: hashicorp/raft
// panics when the state machine fails to restore a snapshot an operator
// hands it (restoreUserSnapshot). What the headers cannot tell (a state
// that fails the engine's checks past them) the state machine catches
// and RestoreBackup answers (fsm.Restore).

// Backup writes a backup of the log's state to w, and returns its header.
func (l *Raft) Backup(w io.Writer, version string) (backup.Header, error) {
	meta, rc, err := l.snapshotForBackup()
	if err != nil {
		return backup.Header{}, err
	}
	defer rc.Close()
	hdr := backup.Header{Created: time.Now().UTC(), Node: l.cfg.NodeID, Version: version, Region: l.cfg.Engine.Region,
		Index: meta.Index, Term: meta.Term, Size: meta.Size, Shard: l.Shard()}
	l.Read(func(e *engine.Engine) { hdr.Messages = int64(e.MessageCount()) })
	if _, err := backup.Write(w, hdr, rc); err != nil {
		return hdr, err
	}
	return hdr, nil
}

// snapshotForBackup takes a snapshot now, or opens the newest if nothing
// was applied since it.
func (l *Raft) snapshotForBackup() (*raft.SnapshotMeta, io.ReadCloser, error) {
	f := l.raft.Snapshot()
	err := f.Error()
	if err == nil {
		return f.Open()
	}
	if !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil, nil, fmt.Errorf("take a snapshot: %w", err)
	}
	snaps, err := l.store.List()
	if err != nil {
		return nil, nil, fmt.Errorf("list the snapshots: %w", err)
	}
	if len(snaps) == 0 {
		return nil, nil, errors.New("no snapshot to back up: Raft had nothing new to snapshot and holds none")
	}
	return l.store.Open(snaps[0].ID)
}

// ReadBackup reads the header of the backup of one group that r reads,
// and checks the head of its snapshot (CheckBackup).
func ReadBackup(r io.Reader) (backup.Header, io.Reader, error) {
	hdr, snap, err := backup.Read(r)
	if err != nil {
		return hdr, nil, err
	}
	return CheckBackup(hdr, snap)
}

// CheckBackup reads the head of the snapshot of one group's backup (hdr,
// snap: backup.Read's or backup.File.Next's): it returns the header, with
// its Region taken from the snapshot's state if the backup is of a fifoq
// that did not record it, and a reader of the whole snapshot for
// RestoreBackup. It refuses a backup this fifoq cannot install (a
// snapshot frame or engine state of a version it does not read, a
// snapshot without its bodies) or whose two headers disagree, having read
// only the heads.
func CheckBackup(hdr backup.Header, snap io.Reader) (backup.Header, io.Reader, error) {
	// The head read here is read again by the restore: keep it.
	var head bytes.Buffer
	version, region, err := snapshotRegion(io.TeeReader(snap, &head))
	switch {
	case errors.Is(err, backup.ErrDamaged):
		return hdr, nil, damage(err)
	case err != nil:
		return hdr, nil, fmt.Errorf("the backup's snapshot: %w", err)
	case version >= snapshotRefsVersion:
		return hdr, nil, fmt.Errorf("the backup's snapshot is of frame version %d, whose message bodies are in a node's body store: not one fifoq backup writes", version)
	case hdr.Region == "":
		hdr.Region = region
	case hdr.Region != region:
		return hdr, nil, fmt.Errorf("%w: its header says region %s, its snapshot region %s", backup.ErrDamaged, hdr.Region, region)
	}
	return hdr, io.MultiReader(&head, snap), nil
}

// damage returns the error in err's chain that says how the backup is
// damaged (backup.Read's), without what the readers above it add.
func damage(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if errors.Unwrap(e) == backup.ErrDamaged {
			return e
		}
	}
	return err
}

// RestoreBackup installs the snapshot of a backup that ReadBackup read
// (hdr, snap) into the log, which must be new: a log of one node with
// nothing applied but its start, of the backup's region. If the state
// machine fails to restore the snapshot, the log is left with the
// snapshot on disk and no state: the data dir is to be thrown away.
func (l *Raft) RestoreBackup(hdr backup.Header, snap io.Reader, timeout time.Duration) error {
	if l.cluster != nil {
		return errors.New("a backup is restored into a new data dir of one node, which others then join")
	}
	if hdr.Region != l.cfg.Engine.Region {
		return fmt.Errorf("a backup of region %s cannot be restored into a data dir of region %s (a data dir cannot change region)", hdr.Region, l.cfg.Engine.Region)
	}
	if err := l.waitReady(); err != nil {
		return err
	}
	var held int
	l.Read(func(e *engine.Engine) { held = e.QueueCount() + e.MessageCount() })
	if held != 0 {
		return errors.New("the data dir holds queues already: a backup is restored into a new one")
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: hdr.Index, Term: hdr.Term, Size: hdr.Size}
	l.fsm.installing.Store(true)
	err := l.raft.Restore(meta, snap, timeout)
	l.fsm.installing.Store(false)
	if failed := l.fsm.installErr.Load(); failed != nil && err == nil {
		err = *failed
	}
	if err != nil {
		return fmt.Errorf("install the backup: %w", err)
	}
	l.refreshFormat()
	// The incarnations the backup records are another cluster's, and so
	// is its id: the restored data dir is a new cluster's from its start
	// (cluster_id.go).
	var stale []string
	l.Read(func(e *engine.Engine) { stale = e.MetaKeys(memberKey("")) })
	slices.Sort(stale)
	for _, key := range stale {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := l.setMeta(ctx, key, "")
		cancel()
		if err != nil {
			return fmt.Errorf("forget the incarnation of the backup's member %s: %w", strings.TrimPrefix(key, memberKey("")), err)
		}
	}
	id, err := newClusterID()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := l.setMeta(ctx, clusterIDKey, id); err != nil {
		return fmt.Errorf("record a new cluster id: %w", err)
	}
	return nil
}
