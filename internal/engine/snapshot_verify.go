package engine

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The frame around a snapshot's body: its magic number and format version
// before it, its checksum after it, read as a restore reads it and, by
// VerifySnapshot, without decoding the body.

// crcReader checksums what it reads. It is an io.ByteReader so that
// encoding/gob does not wrap it in a buffer of its own, which would read
// past the gob stream.
// n counts the bytes summed, for naming the range a mismatch covers.
type crcReader struct {
	r   *bufio.Reader
	sum uint32
	n   int64
	one [1]byte
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sum = crc32.Update(c.sum, snapCRCTable, p[:n])
	c.n += int64(n)
	return n, err
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.one[0] = b
		c.sum = crc32.Update(c.sum, snapCRCTable, c.one[:])
		c.n++
	}
	return b, err
}

// snapPrefix is a snapshot's magic number and format version.
type snapPrefix [len(snapMagic) + 4]byte

// readSnapPrefix reads a snapshot's magic number and format version, and
// checks that this engine reads that version.
func readSnapPrefix(r io.Reader) (pre snapPrefix, version uint32, err error) {
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return pre, 0, fmt.Errorf("reading the format header: %w", err)
	}
	if string(pre[:len(snapMagic)]) != snapMagic {
		return pre, 0, errors.New("not an engine snapshot (bad magic number)")
	}
	version = binary.BigEndian.Uint32(pre[len(snapMagic):])
	if version < snapOldest || version > snapVersionHeads {
		return pre, 0, fmt.Errorf("snapshot format version %d; this engine reads versions %d to %d", version, snapOldest, snapVersionHeads)
	}
	return pre, version, nil
}

// VerifySnapshot reads a snapshot written by Snapshot or a SnapshotView
// to its end and checks its header and checksum, without decoding it and
// in constant memory.
func VerifySnapshot(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	pre, _, err := readSnapPrefix(br)
	if err != nil {
		return fmt.Errorf("engine snapshot: %w", err)
	}
	sum := crc32.Update(0, snapCRCTable, pre[:])
	// The last 4 bytes are the checksum: hold them back from the sum.
	var tail []byte
	buf := make([]byte, 64<<10)
	var total int64 = int64(len(pre))
	for {
		n, err := br.Read(buf)
		if n > 0 {
			tail = append(tail, buf[:n]...)
			if len(tail) > 4 {
				sum = crc32.Update(sum, snapCRCTable, tail[:len(tail)-4])
				total += int64(len(tail) - 4)
				tail = append(tail[:0], tail[len(tail)-4:]...)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("engine snapshot: after byte offset %d: %w", total, err)
		}
	}
	if len(tail) < 4 {
		return fmt.Errorf("engine snapshot: truncated at byte offset %d", total+int64(len(tail)))
	}
	if got := binary.BigEndian.Uint32(tail); got != sum {
		return fmt.Errorf("engine snapshot: checksum mismatch over byte offsets 0-%d: stored %08x, computed %08x", total, got, sum)
	}
	return nil
}
