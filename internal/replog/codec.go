package replog

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// entryFormatVersion is the version of a log entry's layout. It is the
// entry's first byte, so that a future layout can be told apart from this one
// and an entry written by a newer fifoq is refused instead of misread.
//
// An entry is one group commit: many commands made durable by one write.
//
//	byte     version (1)
//	uvarint  number of commands
//	per command:
//	  uvarint  length of the command's JSON
//	  bytes    the command as JSON (wireCommand)
//	4 bytes  CRC-32C of everything before it, big-endian
//
// raft-wal checks a checksum only over the last batch when it recovers a
// segment's tail; the entry's own CRC catches damage anywhere else.
const entryFormatVersion = 1

// wireCommand is a Command as it is stored in the log. The request is kept
// as JSON of its api type under its action's name, so the log is readable
// with ordinary tools and independent of Go's memory layout.
type wireCommand struct {
	Time       int64           `json:"t"`
	Caller     string          `json:"c,omitempty"`
	Account    string          `json:"qa,omitempty"`
	Queue      string          `json:"qn,omitempty"`
	Action     api.Action      `json:"a"`
	Request    json.RawMessage `json:"r"`
	MessageIDs []string        `json:"m,omitempty"`
	Entropy    uint64          `json:"e,omitempty"`
	// RecreateDelay and PurgeDelay are the command's cool-downs in ns;
	// absent in entries written before they existed, which read as zero,
	// SQS's default, as those entries were applied.
	RecreateDelay int64 `json:"rd,omitempty"`
	PurgeDelay    int64 `json:"pd,omitempty"`
}

// encodeEntry encodes a group of commands as one log entry.
func encodeEntry(cmds []*engine.Command) ([]byte, error) {
	buf := make([]byte, 0, 256*len(cmds))
	buf = append(buf, entryFormatVersion)
	buf = binary.AppendUvarint(buf, uint64(len(cmds)))
	for _, c := range cmds {
		req, err := json.Marshal(c.Request)
		if err != nil {
			return nil, fmt.Errorf("encode %s request: %w", c.Request.Action(), err)
		}
		w, err := json.Marshal(wireCommand{
			Time: c.Time, Caller: c.Caller, Account: c.Queue.Account, Queue: c.Queue.Name,
			Action: c.Request.Action(), Request: req, MessageIDs: c.MessageIDs, Entropy: c.Entropy,
			RecreateDelay: int64(c.RecreateDelay), PurgeDelay: int64(c.PurgeDelay),
		})
		if err != nil {
			return nil, fmt.Errorf("encode %s command: %w", c.Request.Action(), err)
		}
		buf = binary.AppendUvarint(buf, uint64(len(w)))
		buf = append(buf, w...)
	}
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli)), nil
}

// errCorruptEntry marks a log entry that cannot be decoded.
var errCorruptEntry = errors.New("corrupt log entry")

// decodeEntry decodes a log entry written by encodeEntry.
func decodeEntry(data []byte) ([]*engine.Command, error) {
	if len(data) < 5 {
		return nil, fmt.Errorf("%w: %d bytes, too short", errCorruptEntry, len(data))
	}
	if data[0] != entryFormatVersion {
		return nil, fmt.Errorf("%w: format version %d, this fifoq reads version %d", errCorruptEntry, data[0], entryFormatVersion)
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
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
		cmd, err := decodeCommand(p[k : k+int(l)])
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

func decodeCommand(b []byte) (*engine.Command, error) {
	var w wireCommand
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	req, ok := engine.NewInternalRequest(w.Action)
	if !ok {
		req, ok = api.NewRequest(w.Action)
	}
	if !ok {
		return nil, fmt.Errorf("unknown action %q", w.Action)
	}
	if err := json.Unmarshal(w.Request, req); err != nil {
		return nil, fmt.Errorf("%s request: %w", w.Action, err)
	}
	return &engine.Command{
		Time: w.Time, Caller: w.Caller, Queue: api.QueueKey{Account: w.Account, Name: w.Queue},
		Request: req, MessageIDs: w.MessageIDs, Entropy: w.Entropy,
		RecreateDelay: time.Duration(w.RecreateDelay), PurgeDelay: time.Duration(w.PurgeDelay),
	}, nil
}
