package engine

import (
	"errors"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// Holding departures while a backup is taken. A cluster with shards is
// backed up one group after another, each as of one of its own log
// entries; what leaves one group for another between two of those
// moments could be in neither part. Two things leave a group so:
//
//   - a message relayed out of an outbox (outbox.go): the destination
//     takes it, then the source settles it and forgets it;
//   - a queue moved to another group (move.go): the target installs it,
//     then the source drops it.
//
// The source forgets only after the destination has taken, so if the
// source cannot forget during the backup, a source part taken after the
// destination's still holds what the destination's lacks, and the
// restored cluster carries it over again (a relay re-offers the entry and
// the destination takes nothing twice; a move is resumed from its
// record). A backup therefore first applies a HoldDeparturesRequest in
// every group, before it reads any part, and lifts it once the last part
// is read: while a hold lasts, SettleOutbox and DropQueue are refused with
// a retryable error, and so are the fence and install of a new move, so
// that no queue is left fenced, unserved, for the length of a backup.
// Messages wait in their outboxes meanwhile, and moves wait or are
// abandoned.
//
// A hold is kept in the engine's metadata (so that it is snapshotted
// with the state and every replica refuses alike), one key per backup,
// and ends by itself at its Until, so that a backup that dies leaves no
// hold behind for long.

// HoldPrefix starts the metadata key of each hold: HoldPrefix + ID. Keys
// under it are the engine's own; SetMetaRequest refuses them.
const HoldPrefix = "engine/hold/"

// maxHoldLife bounds how far ahead a hold may end: a backup renews its
// hold while it runs rather than setting one that outlives it.
const maxHoldLife = int64(60 * 60 * 1e9)

// HoldDeparturesRequest is an internal request: departures from this
// engine are held until Until (Unix ns of the engine's time), under the
// name ID; an Until not after the command's time lifts that hold.
type HoldDeparturesRequest struct {
	ID    string `json:"id"`
	Until int64  `json:"until"`
}

// ActionHoldDepartures names HoldDeparturesRequest. It is not an SQS
// action.
const ActionHoldDepartures api.Action = "fifoq:HoldDepartures"

// Action implements api.Request.
func (*HoldDeparturesRequest) Action() api.Action { return ActionHoldDepartures }

// heldMessage starts the message of every refusal for a hold.
const heldMessage = "Held while a backup is taken: "

// errHeld is the refusal of what a hold holds.
func errHeld(what string) error {
	return api.ErrServiceUnavailable("%s%s waits until it ends; retry.", heldMessage, what)
}

// IsHeld reports whether err is a refusal for a hold: the request is
// retried once the backup ends.
func IsHeld(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == "ServiceUnavailable" && strings.HasPrefix(ae.Message, heldMessage)
}

// holdDepartures applies a HoldDeparturesRequest.
func (e *Engine) holdDepartures(r *HoldDeparturesRequest, now int64) (api.Response, error) {
	key := HoldPrefix + r.ID
	switch {
	case r.ID == "" || len(key) > maxMetaKey:
		return nil, api.ErrInvalidParameterValue("A hold's name takes 1 to %d bytes.", maxMetaKey-len(HoldPrefix))
	case r.Until > now+maxHoldLife:
		return nil, api.ErrInvalidParameterValue("A hold ends within an hour.")
	}
	if r.Until <= now {
		delete(e.meta, key)
	} else {
		if e.meta == nil {
			e.meta = map[string]string{}
		}
		e.meta[key] = strconv.FormatInt(r.Until, 10)
	}
	// Holds of backups that died ended by themselves; their keys go now,
	// in the same pass that finds when the others end.
	e.heldUntil = 0
	for k, v := range e.meta {
		if !strings.HasPrefix(k, HoldPrefix) {
			continue
		}
		if until, _ := strconv.ParseInt(v, 10, 64); until <= now {
			delete(e.meta, k)
		} else {
			e.heldUntil = max(e.heldUntil, until)
		}
	}
	return api.Empty{}, nil
}

// holdsEnd returns when the last hold in the metadata ends (0 if none).
func (e *Engine) holdsEnd() int64 {
	var end int64
	for k, v := range e.meta {
		if !strings.HasPrefix(k, HoldPrefix) {
			continue
		}
		if until, err := strconv.ParseInt(v, 10, 64); err == nil {
			end = max(end, until)
		}
	}
	return end
}

// held reports whether departures are held at time now.
func (e *Engine) held(now int64) bool { return now < e.heldUntil }
