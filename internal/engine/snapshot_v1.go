package engine

import "fmt"

// Format version 1 of a snapshot (see snapshot.go), which no fifoq writes
// any more, is read so that the snapshots of the fifoq before version 2
// restore. Its readers are here, apart from the current format's, so that
// the restore reads as the format written today. Its bytes are frozen in
// testdata/snapshots/v1.bin (TestFrozenSnapshotFormats).
//
// Version 1 differs from version 2 in two places only:
//
//   - a chunk's packed message and deduplication records are inside its
//     gob value (snapChunk's MessageData and DedupData), not after it
//     (snapshot_frame.go);
//   - a deduplication record begins with the group string ("" unless the
//     scope was messageGroup) and the id string, where version 2 has the
//     key made of them (dedupKeyOf): a restore derives the key.
//
// Message records are those of version 2.

// decodeChunkV1 decodes the next chunk of a version 1 snapshot into c,
// with its records.
func (rs *restorer) decodeChunkV1(c *snapChunk) error {
	// Gob leaves alone the fields a value does not carry and decodes into
	// the slices it finds: reuse the byte slices, whose contents are
	// copied out, and nothing else.
	*c = snapChunk{MessageData: c.MessageData[:0], DedupData: c.DedupData[:0]}
	if err := rs.dec.Decode(c); err != nil {
		return fmt.Errorf("decoding records: %w", err)
	}
	return nil
}

// dedupV1 reads a deduplication record of a version 1 snapshot.
func (r *recordReader) dedupV1() (d dedupRecord, id msgID, err error) {
	group := r.raw()
	d.key = dedupKeyOf(string(group), string(r.raw()))
	d.at = r.varint()
	id = makeMsgIDBytes(r.raw())
	d.seq = r.uvarint()
	return d, id, r.err
}
