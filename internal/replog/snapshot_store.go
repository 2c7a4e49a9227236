package replog

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/engine"
)

// snapshotStore is Raft's file snapshot store, with the bodies put back
// into a snapshot that refers to the body store when Raft opens it to send
// it to another node.
//
// Raft opens a snapshot for two things: to send it to a follower
// (InstallSnapshot), and to restore one a leader sent, which carries its
// bodies already. The node's own snapshot is restored at start by
// restoreLatestSnapshot, which reads the file itself. So every snapshot
// Open returns carries its bodies: one of version 4 or 5 is written out inline,
// as version 3, to a spool file beside the snapshots first, since Raft
// must announce the snapshot's size before it sends a byte of it. The
// spool file costs disk, not memory, and goes when the reader is closed.
//
// A failed write of a snapshot being made, the node's own or one a leader
// sends, is a storage fault (fault.go).
type snapshotStore struct {
	*raft.FileSnapshotStore
	dir    string // the data dir, where spool files are made
	bodies *bodies
	faults *faultStop
}

// Create implements raft.SnapshotStore.
func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, s.faults.fail("create a snapshot", err)
	}
	return &faultSink{SnapshotSink: sink, faults: s.faults}, nil
}

// faultSink is a snapshot sink whose failed writes are storage faults.
// Cancel is not: Raft cancels a snapshot whose sender failed.
type faultSink struct {
	raft.SnapshotSink
	faults *faultStop
}

func (s *faultSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	if err != nil {
		return n, s.faults.fail("write a snapshot", err)
	}
	return n, nil
}

// Close implements raft.SnapshotSink: it syncs and renames the snapshot
// into place.
func (s *faultSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return s.faults.fail("write a snapshot", err)
	}
	return nil
}

// spoolPattern names the spool files in the data dir.
const spoolPattern = "inline-snapshot-*.tmp"

// removeSpoolFiles removes the spool files a process left behind.
func removeSpoolFiles(dir string) error {
	old, err := filepath.Glob(filepath.Join(dir, spoolPattern))
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// Open implements raft.SnapshotStore.
func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.FileSnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(rc, 64<<10)
	hdr, err := br.Peek(12)
	if err != nil || s.bodies == nil || binary.BigEndian.Uint32(hdr[8:12]) < snapshotRefsVersion {
		// Carries its bodies, or is too short to say: the restore that
		// reads it reports what is wrong with it.
		return meta, readCloser{Reader: br, Closer: rc}, nil
	}
	defer rc.Close()
	size, spool, err := s.inline(br)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: put its message bodies back in: %w", id, err)
	}
	inlined := *meta
	inlined.Size = size
	return &inlined, spool, nil
}

// inline writes the snapshot of version 4 or 5 that br reads, with its bodies
// in it, to a spool file, and returns its size and a reader of it that
// removes it when closed.
func (s *snapshotStore) inline(br *bufio.Reader) (int64, io.ReadCloser, error) {
	// No body file is removed meanwhile: the snapshot may be older than
	// the newest by now.
	s.bodies.views.Add(1)
	defer s.bodies.views.Add(-1)
	var hdr [20]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return 0, nil, err
	}
	f, err := os.CreateTemp(s.dir, spoolPattern)
	if err != nil {
		return 0, nil, err
	}
	fail := func(err error) (int64, io.ReadCloser, error) {
		f.Close()
		os.Remove(f.Name())
		return 0, nil, err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	binary.BigEndian.PutUint32(hdr[8:12], snapshotInlineVersion)
	w.Write(hdr[:12])
	if err := engine.InlineBodies(w, br, s.bodies.Get); err != nil {
		return fail(err)
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return fail(err)
	}
	return size, &spoolFile{File: f}, nil
}

// readCloser reads from Reader and closes Closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// spoolFile is a spool file that is removed when closed.
type spoolFile struct{ *os.File }

func (s *spoolFile) Close() error {
	err := s.File.Close()
	if rerr := os.Remove(s.File.Name()); err == nil {
		err = rerr
	}
	return err
}
