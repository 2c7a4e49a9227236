package replog

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// encodeEntryJSON encodes a group of commands as one log entry in the JSON
// layout of format versions 1 to 3, in the lowest version its commands
// need, as fifoq wrote entries before version 4: the tests write entries
// with it to check that older logs still load.
func encodeEntryJSON(cmds []*engine.Command) ([]byte, error) {
	buf := make([]byte, 0, 256*len(cmds))
	buf = append(buf, 1)
	buf = binary.AppendUvarint(buf, uint64(len(cmds)))
	for _, c := range cmds {
		ei := emptyIDs(c.Request)
		if ei != nil {
			buf[0] = max(buf[0], minVersionEmptyIDs)
		}
		if c.Request.Action() == engine.ActionHousekeep {
			buf[0] = max(buf[0], minVersionHousekeep)
		}
		req, err := json.Marshal(c.Request)
		if err != nil {
			return nil, fmt.Errorf("encode %s request: %w", c.Request.Action(), err)
		}
		w, err := json.Marshal(wireCommand{
			Time: c.Time, Caller: c.Caller, Account: c.Queue.Account, Queue: c.Queue.Name,
			Action: c.Request.Action(), Request: req, MessageIDs: c.MessageIDs, Entropy: c.Entropy,
			RecreateDelay: int64(c.RecreateDelay), PurgeDelay: int64(c.PurgeDelay), EmptyIDs: ei,
		})
		if err != nil {
			return nil, fmt.Errorf("encode %s command: %w", c.Request.Action(), err)
		}
		buf = binary.AppendUvarint(buf, uint64(len(w)))
		buf = append(buf, w...)
	}
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli)), nil
}

// emptyIDs returns the EmptyIDs of a request (only the tests write
// versions 1 to 3 now), or nil if no FIFO id was sent
// empty. An id sent non-empty needs no flag: "sent" follows from the value.
func emptyIDs(req api.Request) []int {
	flags := func(dedup string, dedupSet bool, group string, groupSet bool) (f int) {
		if dedupSet && dedup == "" {
			f |= emptyDedupID
		}
		if groupSet && group == "" {
			f |= emptyGroupID
		}
		return f
	}
	var out []int
	switch r := req.(type) {
	case *api.SendMessageRequest:
		if f := flags(r.MessageDeduplicationId, r.MessageDeduplicationIdSet, r.MessageGroupId, r.MessageGroupIdSet); f != 0 {
			out = []int{f}
		}
	case *api.SendMessageBatchRequest:
		for i := range r.Entries {
			e := &r.Entries[i]
			if f := flags(e.MessageDeduplicationId, e.MessageDeduplicationIdSet, e.MessageGroupId, e.MessageGroupIdSet); f != 0 {
				if out == nil {
					out = make([]int, len(r.Entries))
				}
				out[i] = f
			}
		}
	}
	return out
}
