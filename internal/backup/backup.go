// Package backup is the file format of a fifoq backup: one server's whole
// state at one moment (every queue with its attributes, tags and policy;
// every message in its state, with its body and attributes; FIFO
// deduplication and receive-attempt records; sequence numbers; move
// tasks), as the command log's snapshot of it, framed so that a restore
// can tell a backup from anything else, refuse a version it does not
// read, and find damage anywhere before it installs a byte.
//
// A backup of one group (a server alone, or a cluster without shards) is
// a file of format 1:
//
//	8 bytes   magic "FQBACKUP"
//	4 bytes   format version (1), big-endian
//	4 bytes   length of the header, big-endian
//	...       the header: JSON (Header)
//	...       the snapshot: Header.Size bytes, the command log's snapshot
//	          frame with the message bodies in it (docs/storage.md)
//	32 bytes  SHA-256 of everything before it
//
// A backup of a cluster with shards is a file of format 2: one part per
// group, each a whole format-1 backup of that group's state (its header's
// Shard says which), after a header that lists them:
//
//	8 bytes   magic "FQBACKUP"
//	4 bytes   format version (2), big-endian
//	4 bytes   length of the header, big-endian
//	...       the header: JSON (Header, with Groups: the parts' shards
//	          in the order they follow)
//	32 bytes  SHA-256 of everything before it
//	...       the parts, one format-1 backup each
//
// Each group's part is that group's state as of one of its log entries:
// a queue lives in one group, so each queue is whole as of one moment.
// The first group (0), whose state maps queues to shards, comes last, so
// that its map names every queue the parts before it hold. A fifoq that
// reads only format 1 refuses format 2 rather than restore a part of it.
//
// Either is written and read in one pass, in constant memory: a backup
// can be streamed to standard output and a restore read from standard
// input.
package backup

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// Magic starts every backup file.
const Magic = "FQBACKUP"

// FormatVersion is the version of the backup format this fifoq writes for
// one group, and GroupsVersion the one it writes for several; it reads
// both.
const (
	FormatVersion = 1
	GroupsVersion = 2
)

// maxHeader bounds a header's length: a damaged length must not make a
// restore allocate gigabytes.
const maxHeader = 1 << 20

// Header describes a backup's snapshot.
type Header struct {
	// Created is when the backup was taken (the server's clock).
	Created time.Time `json:"created"`
	// Node is the id of the node the backup was taken on, and Version the
	// fifoq version it ran.
	Node    string `json:"node,omitempty"`
	Version string `json:"version,omitempty"`
	// Region is the region of the server the backup was taken of, which
	// its state belongs to (its queues' ARNs are of it); a restore makes a
	// data dir of that region. Empty in a backup of a fifoq from before
	// the field: the snapshot's own header then says it.
	Region string `json:"region,omitempty"`
	// Index and Term are those of the command log's entry the state is
	// as of.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// Size is the snapshot's length in bytes.
	Size int64 `json:"size"`
	// Messages is about the number of messages the state holds, for the
	// operator: counted as the backup began, so writes applied while the
	// snapshot was taken may make it differ a little; 0 if unknown.
	Messages int64 `json:"messages,omitempty"`
	// Shard is the group a part of a format-2 backup is of: 0 for the
	// cluster's first group (and for every format-1 backup).
	Shard uint32 `json:"shard,omitempty"`
	// Groups, in the header of a format-2 backup, lists the shards of its
	// parts in the order they follow (the first group, 0, last); Index,
	// Term and Size are then each part's own, in its own header.
	Groups []uint32 `json:"groups,omitempty"`
}

// ErrNotBackup is returned by Read for input that is not a backup.
var ErrNotBackup = errors.New("not a fifoq backup")

// ErrDamaged is returned when a backup's checksum does not match, or it
// ends early.
var ErrDamaged = errors.New("backup damaged")

// Write writes a backup of the snapshot that snap reads (hdr.Size bytes)
// to w, and returns the bytes written.
func Write(w io.Writer, hdr Header, snap io.Reader) (int64, error) {
	head, err := json.Marshal(hdr)
	if err != nil {
		return 0, err
	}
	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 256<<10)
	var pre [16]byte
	copy(pre[:8], Magic)
	binary.BigEndian.PutUint32(pre[8:12], FormatVersion)
	binary.BigEndian.PutUint32(pre[12:16], uint32(len(head)))
	if _, err := bw.Write(pre[:]); err != nil {
		return 0, err
	}
	if _, err := bw.Write(head); err != nil {
		return 0, err
	}
	n, err := io.CopyN(bw, snap, hdr.Size)
	if err != nil {
		return 0, fmt.Errorf("copy the snapshot (%d of %d bytes): %w", n, hdr.Size, err)
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	if _, err := w.Write(sum.Sum(nil)); err != nil {
		return 0, err
	}
	return int64(len(pre)+len(head)) + n + sha256.Size, nil
}

// Read reads a backup's header from r and returns it with a reader of its
// snapshot. The snapshot reader checks the checksum as it reaches the
// end: its last Read returns ErrDamaged instead of io.EOF if the file was
// damaged or cut short, so that whatever consumes it stops before
// treating the snapshot as whole.
func Read(r io.Reader) (Header, io.Reader, error) {
	sum := sha256.New()
	br := bufio.NewReaderSize(r, 256<<10)
	tee := io.TeeReader(br, sum)
	var pre [16]byte
	if _, err := io.ReadFull(tee, pre[:]); err != nil {
		return Header{}, nil, fmt.Errorf("%w: %v", ErrNotBackup, err)
	}
	if string(pre[:8]) != Magic {
		return Header{}, nil, fmt.Errorf("%w: it does not begin with %q", ErrNotBackup, Magic)
	}
	switch v := binary.BigEndian.Uint32(pre[8:12]); {
	case v == GroupsVersion:
		return Header{}, nil, fmt.Errorf("%w: a backup of several groups (format %d), where one group's (format %d) was expected", ErrNotBackup, v, FormatVersion)
	case v > GroupsVersion || v == 0:
		return Header{}, nil, tooNew(v)
	}
	n := binary.BigEndian.Uint32(pre[12:16])
	if n > maxHeader {
		return Header{}, nil, fmt.Errorf("%w: a header of %d bytes", ErrDamaged, n)
	}
	head := make([]byte, n)
	if _, err := io.ReadFull(tee, head); err != nil {
		return Header{}, nil, fmt.Errorf("%w: the header: %v", ErrDamaged, err)
	}
	var hdr Header
	if err := json.Unmarshal(head, &hdr); err != nil || hdr.Size < 0 {
		return Header{}, nil, fmt.Errorf("%w: the header: %v", ErrDamaged, err)
	}
	return hdr, &checked{r: io.LimitReader(tee, hdr.Size), src: br, sum: sum, left: hdr.Size}, nil
}

// tooNew is the error for a backup of a format this fifoq does not read.
func tooNew(v uint32) error {
	return fmt.Errorf("backup format version %d: this fifoq reads versions up to %d; restore it with the fifoq that took it, or a newer one", v, GroupsVersion)
}

// checked reads a snapshot and, at its end, the checksum after it.
type checked struct {
	r    io.Reader // the snapshot's bytes, through the hash
	src  io.Reader // the file, after them
	sum  hash.Hash
	left int64
	err  error
}

func (c *checked) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err == io.EOF || (err == nil && c.left == 0) {
		c.err = c.verify()
		if c.err == io.EOF && n > 0 {
			return n, nil
		}
		return n, c.err
	}
	if err != nil {
		c.err = fmt.Errorf("%w: %v", ErrDamaged, err)
		return n, c.err
	}
	return n, nil
}

// verify checks the end of the snapshot against the checksum: io.EOF if
// they match.
func (c *checked) verify() error {
	if c.left > 0 {
		return fmt.Errorf("%w: it ends %d bytes before its snapshot does", ErrDamaged, c.left)
	}
	var stored [sha256.Size]byte
	if _, err := io.ReadFull(c.src, stored[:]); err != nil {
		return fmt.Errorf("%w: its checksum is missing: %v", ErrDamaged, err)
	}
	if got := c.sum.Sum(nil); string(got) != string(stored[:]) {
		return fmt.Errorf("%w: checksum mismatch (stored %x, computed %x)", ErrDamaged, stored[:8], got[:8])
	}
	return io.EOF
}
