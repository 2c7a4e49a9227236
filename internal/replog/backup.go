package replog

import (
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

// Backup writes a backup of the log's state to w, and returns its header.
func (l *Raft) Backup(w io.Writer, version string) (backup.Header, error) {
	meta, rc, err := l.snapshotForBackup()
	if err != nil {
		return backup.Header{}, err
	}
	defer rc.Close()
	hdr := backup.Header{Created: time.Now().UTC(), Node: l.cfg.NodeID, Version: version,
		Index: meta.Index, Term: meta.Term, Size: meta.Size}
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

// RestoreBackup installs the backup that r reads into the log, which must
// be new: a log of one node with nothing applied but its start. It returns
// the backup's header.
func (l *Raft) RestoreBackup(r io.Reader, timeout time.Duration) (backup.Header, error) {
	hdr, snap, err := backup.Read(r)
	if err != nil {
		return hdr, err
	}
	if l.cluster != nil {
		return hdr, errors.New("a backup is restored into a new data dir of one node, which others then join")
	}
	if err := l.waitReady(); err != nil {
		return hdr, err
	}
	var held int
	l.Read(func(e *engine.Engine) { held = e.QueueCount() + e.MessageCount() })
	if held != 0 {
		return hdr, errors.New("the data dir holds queues already: a backup is restored into a new one")
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: hdr.Index, Term: hdr.Term, Size: hdr.Size}
	if err := l.raft.Restore(meta, snap, timeout); err != nil {
		return hdr, fmt.Errorf("install the backup: %w", err)
	}
	l.refreshFormat()
	// The incarnations the backup records are another cluster's.
	var stale []string
	l.Read(func(e *engine.Engine) { stale = e.MetaKeys(memberKey("")) })
	slices.Sort(stale)
	for _, key := range stale {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := l.setMeta(ctx, key, "")
		cancel()
		if err != nil {
			return hdr, fmt.Errorf("forget the incarnation of the backup's member %s: %w", strings.TrimPrefix(key, memberKey("")), err)
		}
	}
	return hdr, nil
}
