package replog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// entryFormatVersion is the newest version of a log entry's layout that this
// fifoq reads and writes. It is the entry's first byte, so that an entry
// written by a newer fifoq is refused, naming its version, instead of being
// misread.
//
//   - Version 1: the layout below.
//   - Version 2: version 1, and a command may carry "ei" (wireCommand's
//     EmptyIDs).
//   - Version 3: version 2, and a command may be the internal
//     fifoq:Housekeep (engine.HousekeepRequest).
//   - Version 4: the same frame, each command in a binary layout instead
//     of JSON (see minVersionBinary).
//   - Version 5: version 4, and a command may be the internal
//     fifoq:SetMeta (engine.SetMetaRequest). (Development builds wrote
//     it in version 4 entries before version 5 existed; those still read.)
//   - Version 6: version 5, and a command names its region and its
//     queue's (empty for the server's own): queues in other regions.
//   - Version 7: version 6, and a fifoq:SetMeta may set a key only if
//     it is absent ("ia"): how a cluster places queues in its shards, so
//     that every member routes by the shard map before any queue is put
//     in a shard other than the first group.
//   - Version 8: version 7, and a command may be one of the steps that
//     move a queue between groups (engine.FenceQueueRequest,
//     UnfenceQueueRequest, InstallQueueRequest, DropQueueRequest).
//   - Version 9: version 8, the same layout. It says that every member
//     keeps its new shard replicas in its node's shared log
//     (sharedlog.go), which a fifoq before it would open as empty logs of
//     their own: once the cluster writes it, such a fifoq is refused at
//     its hello, as for any newer format.
//   - Version 10: version 9, and a command may be one of the outbox's
//     (engine.TakeMessagesRequest, SettleOutboxRequest), or a
//     fifoq:FenceQueue that spans redrives ("spanning"): how a queue and
//     its dead-letter queue live in two shards.
//   - Version 11: version 10, and a command names its queue's partition
//     (api.QueueKey.Part), and may be a fifoq:SplitQueue or
//     fifoq:MergeQueue (engine.SplitQueueRequest, MergeQueueRequest):
//     how one FIFO queue is spread over several shards; and a
//     fifoq:FenceQueue may take a queue whose message move tasks have
//     ended ("ended").
//   - Version 12: version 11, and a fifoq:InstallQueue is written in a
//     binary layout (reqInstall) rather than as JSON: its image, often
//     hundreds of kilobytes, goes into the log as it is instead of as
//     base64, which a shard's every replica decoded on its way to the
//     moved queue's first answer (see minVersionImageBytes).
//   - Version 13: version 12, and a command may be a fifoq:HoldDepartures
//     (engine.HoldDeparturesRequest): how a backup of a cluster with
//     shards keeps what leaves one group for another in one of its parts.
//   - Version 14: version 13, the same layout. It says that the member
//     asks and answers the cluster's id at a hello (cluster_id.go), so
//     that two members that read it refuse a node of another cluster.
//
// Every version is still read, so that older logs replay. Which version a
// node writes is the cluster's choice, not the binary's: see format.go.
//
// An entry is one group commit: many commands made durable by one write.
//
//	byte     version (1 to 14)
//	uvarint  number of commands
//	per command:
//	  uvarint  length of the command
//	  bytes    the command as JSON (wireCommand, codec_v1to3.go; versions 1 to 3) or in
//	           the binary layout of versions 4 to 14
//	4 bytes  CRC-32C of everything before it, big-endian
//
// Every version, present and future, keeps the first byte as the version
// and the last four as a CRC-32C of everything before them, so that any
// fifoq can tell a newer entry from a damaged one.
//
// Entries are decoded strictly: a field or an action this fifoq does not
// know stops the node rather than being skipped, because skipping it would
// apply a different command than the one logged. So a change that adds a
// field to wireCommand or to any request type, or a new action, that an
// older fifoq would misapply must come with a new version, and the leader
// writes it only once every member reads it (format.go).
//
// raft-wal checks a checksum only over the last batch when it recovers a
// segment's tail; the entry's own CRC catches damage anywhere else.
const entryFormatVersion = 14

// minVersionClusterID is the first version whose fifoq asks and answers
// the cluster's id at a hello.
const minVersionClusterID = 14

// minVersionSetMeta is the first version in which a command may be a
// fifoq:SetMeta.
const minVersionSetMeta = 5

// minVersionRegions is the first version in which a command may name a
// region other than the server's own (engine.Command's Region and
// Queue.Region).
const minVersionRegions = 6

// minVersionShards is the first version in which a fifoq:SetMeta may set a
// key only if it is absent, as the shard map's records are set.
const minVersionShards = 7

// minVersionMoves is the first version in which a command may be a step of
// a queue's move (isMoveAction).
const minVersionMoves = 8

// minVersionSharedLog is the first version whose clusters keep a node's
// new shard replicas in its shared log.
const minVersionSharedLog = 9

// minVersionOutbox is the first version in which a command may be one of
// the outbox's, or a fence that spans redrives (needsOutbox).
const minVersionOutbox = 10

// needsOutbox reports whether c is a command of the outbox's, or a fence
// that spans redrives: what only an engine that keeps outboxes may apply.
func needsOutbox(c *engine.Command) bool {
	switch r := c.Request.(type) {
	case *engine.TakeMessagesRequest, *engine.SettleOutboxRequest:
		return true
	case *engine.FenceQueueRequest:
		return r.Spanning
	}
	return false
}

// minVersionPartitions is the first version in which a command names its
// queue's partition, or may be a fifoq:SplitQueue or fifoq:MergeQueue or
// a fence of a queue whose move tasks ended (needsPartitions).
const minVersionPartitions = 11

// needsPartitions reports whether c names a partition of a split queue or
// splits or merges one: what only an engine that knows partitions may apply.
func needsPartitions(c *engine.Command) bool {
	switch r := c.Request.(type) {
	case *engine.TakeMessagesRequest:
		if r.Source.Part != 0 {
			return true // its source key, in JSON, names the partition
		}
	case *engine.FenceQueueRequest:
		if r.Ended {
			return true // a fence that takes a queue whose move tasks ended
		}
	}
	return c.Queue.Part != 0 || isPartitionAction(c.Request.Action())
}

// minVersionImageBytes is the first version in which a fifoq:InstallQueue
// is written in its binary layout (reqInstall). An install can still go in
// an older version's entry, as JSON: the cluster's format decides its
// layout, and nothing waits for the cluster to write this one.
const minVersionImageBytes = 12

// minVersionHold is the first version in which a command may be a
// fifoq:HoldDepartures.
const minVersionHold = 13

// isPartitionAction reports whether a splits or merges partitions of a
// queue.
func isPartitionAction(a api.Action) bool {
	return a == engine.ActionSplitQueue || a == engine.ActionMergeQueue
}

// isOutboxAction reports whether a is one of the outbox's requests.
func isOutboxAction(a api.Action) bool {
	return a == engine.ActionTakeMessages || a == engine.ActionSettleOutbox
}

// isMoveAction reports whether a is one of the steps of a queue's move.
func isMoveAction(a api.Action) bool {
	switch a {
	case engine.ActionFenceQueue, engine.ActionUnfenceQueue, engine.ActionInstallQueue, engine.ActionDropQueue:
		return true
	}
	return false
}

// setSentIDs restores the "sent" flags of a decoded request's FIFO ids: an
// id is sent if it is non-empty or flagged in ei (versions 2 and 3; a
// request the binary layouts write as JSON has no flags, ei nil).
func setSentIDs(req api.Request, ei []int) error {
	flag := func(i, f int) bool { return i < len(ei) && ei[i]&f != 0 }
	for _, f := range ei {
		if f&^emptyIDsMask != 0 {
			return fmt.Errorf("unknown empty-id flags %d", f)
		}
	}
	switch r := req.(type) {
	case *api.SendMessageRequest:
		if ei != nil && len(ei) != 1 {
			return fmt.Errorf("%d empty-id flags for one message", len(ei))
		}
		r.MessageDeduplicationIdSet = r.MessageDeduplicationId != "" || flag(0, emptyDedupID)
		r.MessageGroupIdSet = r.MessageGroupId != "" || flag(0, emptyGroupID)
	case *api.SendMessageBatchRequest:
		if ei != nil && len(ei) != len(r.Entries) {
			return fmt.Errorf("%d empty-id flags for %d entries", len(ei), len(r.Entries))
		}
		for i := range r.Entries {
			e := &r.Entries[i]
			e.MessageDeduplicationIdSet = e.MessageDeduplicationId != "" || flag(i, emptyDedupID)
			e.MessageGroupIdSet = e.MessageGroupId != "" || flag(i, emptyGroupID)
		}
	default:
		if ei != nil {
			return fmt.Errorf("empty-id flags on %s", req.Action())
		}
	}
	return nil
}

// encodeEntry encodes a group of commands as one log entry, in the newest
// format version.
func encodeEntry(cmds []*engine.Command) ([]byte, error) {
	data, _, err := encodeEntryHeld(cmds, entryFormatVersion)
	return data, err
}

// encodeEntryHeld encodes cmds as one entry of the given version (4 or
// newer: see format.go for who chooses it) and returns, beside it, the
// commands the leader applies in place of decoding the entry: cmds
// themselves, except that a command whose request went as JSON is the one
// decoded from its bytes, since JSON need not give back exactly what it was
// given (invalid UTF-8, for one). Binary layouts give back exactly their
// input (TestBinaryCodecExact), so the leader's state is the replay's.
func encodeEntryHeld(cmds []*engine.Command, version byte) (data []byte, held []*engine.Command, err error) {
	if version < minVersionBinary || version > maxEntryFormat {
		return nil, nil, fmt.Errorf("cannot write entry format version %d (this fifoq writes %d to %d)", version, minVersionBinary, maxEntryFormat)
	}
	size := 16
	for _, c := range cmds {
		if need := commandFormat(c); need > version {
			return nil, nil, fmt.Errorf("a %s command needs entry format version %d, and the cluster writes version %d", c.Request.Action(), need, version)
		}
		size += 64 + approxSize(c)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, version)
	buf = binary.AppendUvarint(buf, uint64(len(cmds)))
	held = cmds
	var scratch []byte
	for i, c := range cmds {
		cmd, asJSON, err := appendCommand(scratch[:0], c, version)
		if err != nil {
			return nil, nil, err
		}
		scratch = cmd
		if asJSON {
			d, err := decodeBinaryCommand(cmd, version)
			if err != nil {
				return nil, nil, fmt.Errorf("encode %s command: does not decode: %w", c.Request.Action(), err)
			}
			if &held[0] == &cmds[0] {
				// The first JSON command: held becomes a copy.
				held = slices.Clone(cmds)
			}
			held[i] = d
		}
		buf = binary.AppendUvarint(buf, uint64(len(cmd)))
		buf = append(buf, cmd...)
	}
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli)), held, nil
}

// errCorruptEntry marks a log entry that cannot be decoded.
var errCorruptEntry = errors.New("corrupt log entry")

// errNewerEntry marks a log entry in a format version newer than this fifoq
// reads: it was written by a newer fifoq.
var errNewerEntry = errors.New("log entry written by a newer fifoq")

// decodeEntry decodes a log entry written by encodeEntry. It refuses
// anything it does not fully understand (see entryFormatVersion).
func decodeEntry(data []byte) ([]*engine.Command, error) {
	if len(data) < 5 {
		return nil, fmt.Errorf("%w: %d bytes, too short", errCorruptEntry, len(data))
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	got := crc32.Checksum(body, castagnoli)
	switch v := data[0]; {
	case v > maxEntryFormat && got == sum:
		return nil, fmt.Errorf("%w: format version %d, and this fifoq reads versions up to %d; run a fifoq that reads version %d", errNewerEntry, v, maxEntryFormat, v)
	case v > maxEntryFormat:
		return nil, fmt.Errorf("%w: unknown format version %d (this fifoq reads versions up to %d) and checksum mismatch over %d bytes: stored %08x, computed %08x; damaged, or written by a newer fifoq", errCorruptEntry, v, maxEntryFormat, len(body), sum, got)
	case v == 0:
		return nil, fmt.Errorf("%w: format version 0 does not exist", errCorruptEntry)
	}
	if got != sum {
		return nil, fmt.Errorf("%w: checksum mismatch over %d bytes: stored %08x, computed %08x", errCorruptEntry, len(body), sum, got)
	}
	p := body[1:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return nil, fmt.Errorf("%w: bad command count", errCorruptEntry)
	}
	p = p[k:]
	cmds := make([]*engine.Command, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			return nil, fmt.Errorf("%w: command %d: bad length", errCorruptEntry, i)
		}
		var cmd *engine.Command
		var err error
		if data[0] >= minVersionBinary {
			cmd, err = decodeBinaryCommand(p[k:k+int(l)], data[0])
		} else {
			cmd, err = decodeJSONCommand(p[k:k+int(l)], data[0])
		}
		if err != nil {
			return nil, fmt.Errorf("%w: command %d: %v", errCorruptEntry, i, err)
		}
		cmds = append(cmds, cmd)
		p = p[k+int(l):]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorruptEntry, len(p))
	}
	return cmds, nil
}

// decodeStrict decodes exactly one JSON object into v, refusing unknown
// fields, a null or missing object, and anything after the object.
func decodeStrict(b []byte, v any) error {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) != 0 {
		return errors.New("data after the JSON object")
	}
	return nil
}
