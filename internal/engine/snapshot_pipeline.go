package engine

import "sync/atomic"

// A queue's records are restored in two steps per chunk: readChunk reads
// the chunk off the stream, checks its checksum as it goes and decodes its
// records, allocating the messages and deduplication records; applyChunk
// adds them to the queue's maps, lists and heaps. The two take about the
// same time, and the maps' inserts are mostly waiting for memory (tables
// of a million entries do not fit a cache). For a large queue they run on
// two goroutines, the reader a few chunks ahead of the applier, so that a
// restore uses two cores; the state built, and the errors reported, are
// those of one goroutine doing both in turn.

// defaultRestorePipelineMin is the number of message and deduplication
// records from which a queue's chunks are read and applied on two
// goroutines: below it, a goroutine costs more than it saves
// (Config.pipelineMin: tests pipeline every queue).
const defaultRestorePipelineMin = 4 * snapChunkSize

// restorePipelineDepth is the number of chunks in the pipeline: one being
// read, one being applied, one read and waiting. Each holds its records'
// bytes (about snapChunkBytes) until it is applied.
const restorePipelineDepth = 3

// chunkBatch is one chunk as read and decoded, waiting to be applied. Its
// decoded messages refer to data's buffer (group ids, sender ids), so a
// batch is read again only once it has been applied.
type chunkBatch struct {
	c      snapChunk
	data   chunkDataReader // version 2: the chunk's packed records
	msgs   []decodedMessage
	dedups []decodedDedup
}

// decodedDedup is a deduplication record as read, with the MessageId of its
// message (kept beside the record, not in it; see dedupTable.push).
type decodedDedup struct {
	r  dedupRecord
	id msgID
}

// records reads and applies a queue's chunks, until the counts sq
// announces are reached.
func (rs *restorer) records(q *queue, sq *snapQueue) error {
	var got, ld queueLoad // records read; records applied
	more := func() bool {
		return got.msgs < sq.Messages || got.dedups < sq.Dedups || got.attempts < sq.Attempts || got.ordered < sq.Ordered
	}
	// An install reads on one goroutine: should the image fail half
	// way, every message it made is then in the queue, which frees it.
	if rs.install != nil || sq.Messages+sq.Dedups < rs.e.cfg.pipelineMin() {
		for more() {
			if err := rs.readChunk(&rs.batch, sq, &got); err != nil {
				return err
			}
			if err := rs.applyChunk(q, &rs.batch, &ld); err != nil {
				return err
			}
		}
		return nil
	}
	full := make(chan *chunkBatch, restorePipelineDepth)
	free := make(chan *chunkBatch, restorePipelineDepth)
	free <- &rs.batch
	for range restorePipelineDepth - 1 {
		free <- &chunkBatch{}
	}
	var applyErr error // of the applier; read once it is done
	var failed atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range full {
			if applyErr == nil {
				if applyErr = rs.applyChunk(q, b, &ld); applyErr != nil {
					failed.Store(true)
				}
			}
			free <- b
		}
	}()
	var readErr error
	for more() && !failed.Load() {
		b := <-free
		if readErr = rs.readChunk(b, sq, &got); readErr != nil {
			break
		}
		full <- b
	}
	close(full)
	<-done
	// The applier's error is about an earlier chunk than the reader's.
	if applyErr != nil {
		return applyErr
	}
	return readErr
}
