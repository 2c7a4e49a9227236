package replog

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Versions 1 to 3 of the entry format (see entryFormatVersion) wrote each
// command as JSON. No fifoq writes them any more; they are read so that
// the logs of the fifoq before version 4 replay, and kept here, apart
// from the current format, so that codec.go and codec_binary.go read as
// the format a fifoq writes today. Their bytes are frozen in
// testdata/entries (TestFrozenEntryFormats).

// minVersionEmptyIDs is the first version in which a command may carry "ei".
const minVersionEmptyIDs = 2

// minVersionHousekeep is the first version in which a command may be a
// fifoq:Housekeep.
const minVersionHousekeep = 3

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
	// EmptyIDs says, per message of a SendMessage or SendMessageBatch,
	// which FIFO ids the client sent empty (emptyDedupID, emptyGroupID):
	// the request's JSON cannot tell an id sent empty from one not sent,
	// and the engine refuses the former (InvalidParameterValue), so
	// without it a replay would accept a message the client was told
	// failed. Absent when no id was sent empty, and in version 1 entries.
	EmptyIDs []int `json:"ei,omitempty"`
}

// Flags of wireCommand.EmptyIDs.
const (
	emptyDedupID = 1 << iota
	emptyGroupID
	emptyIDsMask = emptyDedupID | emptyGroupID
)

// decodeJSONCommand decodes one command of a version 1 to 3 entry strictly: a field it does not know, in
// the command or in its request, or an action it does not know, is an
// error, never skipped.
func decodeJSONCommand(b []byte, version byte) (*engine.Command, error) {
	var w wireCommand
	if err := decodeStrict(b, &w); err != nil {
		return nil, err
	}
	if w.EmptyIDs != nil && version < minVersionEmptyIDs {
		return nil, fmt.Errorf(`field "ei" in a version %d entry`, version)
	}
	if w.Action == engine.ActionHousekeep && version < minVersionHousekeep || w.Action == engine.ActionSetMeta ||
		isMoveAction(w.Action) || isOutboxAction(w.Action) || isPartitionAction(w.Action) || w.Action == engine.ActionHoldDepartures {
		return nil, fmt.Errorf("action %s in a version %d entry", w.Action, version)
	}
	req, ok := engine.NewInternalRequest(w.Action)
	if !ok {
		req, ok = api.NewRequest(w.Action)
	}
	if !ok {
		return nil, fmt.Errorf("unknown action %q", w.Action)
	}
	if err := decodeStrict(w.Request, req); err != nil {
		return nil, fmt.Errorf("%s request: %w", w.Action, err)
	}
	if err := setSentIDs(req, w.EmptyIDs); err != nil {
		return nil, fmt.Errorf("%s request: %w", w.Action, err)
	}
	return &engine.Command{
		Time: w.Time, Caller: w.Caller, Queue: api.QueueKey{Account: w.Account, Name: w.Queue},
		Request: req, MessageIDs: w.MessageIDs, Entropy: w.Entropy,
		RecreateDelay: time.Duration(w.RecreateDelay), PurgeDelay: time.Duration(w.PurgeDelay),
	}, nil
}
