package engine

import (
	"encoding/binary"
	"fmt"
	"io"
)

// From format version 2 on, a chunk's packed message and deduplication
// records travel beside its gob value instead of inside it:
//
//	snapChunk (gob, MessageData and DedupData empty)
//	len(MessageData) uvarint, MessageData
//	len(DedupData)   uvarint, DedupData
//
// encoding/gob reads every value into a buffer it allocates for that value
// alone, so a version 1 restore made a megabyte of garbage per chunk, as
// much garbage as the snapshot's size, and then copied each chunk out of it
// once more. Read beside gob, the records go straight into one buffer that
// the restore reuses for every chunk, and a restore allocates little
// besides the state it builds.

// maxChunkData bounds the record bytes a chunk may announce, so that a
// damaged length cannot make a restore allocate without bound before the
// checksum refuses the snapshot. Writers put about snapChunkBytes in a
// chunk, plus at most one record, of at most one message of the largest
// size a queue accepts, with its attributes.
const maxChunkData = 64 << 20

// writeChunkData writes a chunk's packed records after its gob value.
func writeChunkData(w io.Writer, msgs, dedups []byte) error {
	for _, b := range [][]byte{msgs, dedups} {
		var n [binary.MaxVarintLen64]byte
		if _, err := w.Write(binary.AppendUvarint(n[:0], uint64(len(b)))); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// chunkDataReader reads the packed records that follow a chunk's gob
// value into one buffer, reused from chunk to chunk: the records it
// returns are valid until the next read.
type chunkDataReader struct {
	buf []byte
}

// read reads a chunk's message and deduplication records from r.
func (c *chunkDataReader) read(r *crcReader) (msgs, dedups []byte, err error) {
	c.buf = c.buf[:0]
	var ends [2]int
	for i := range ends {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the length of the records: %w", noEOF(err))
		}
		if n > maxChunkData-uint64(len(c.buf)) {
			return nil, nil, fmt.Errorf("chunk of %d record bytes, at most %d are read", uint64(len(c.buf))+n, maxChunkData)
		}
		start := len(c.buf)
		if need := start + int(n); need > cap(c.buf) {
			// Grow once to what this chunk needs (plus room, since chunks
			// vary a little): every later chunk of a typical size fits.
			c.buf = append(make([]byte, 0, need+need/4), c.buf...)
		}
		c.buf = c.buf[:start+int(n)]
		if _, err := io.ReadFull(r, c.buf[start:]); err != nil {
			return nil, nil, fmt.Errorf("reading the records: %w", noEOF(err))
		}
		ends[i] = len(c.buf)
	}
	return c.buf[:ends[0]:ends[0]], c.buf[ends[0]:ends[1]:ends[1]], nil
}

// noEOF reports a snapshot that ends inside a chunk as truncated.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
