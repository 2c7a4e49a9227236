package engine

import (
	"maps"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// The engine keeps a few key-value pairs for the command log beside the
// queues: metadata of the log itself (the cluster's record of its members'
// incarnations, see internal/replog/identity.go) that must be replicated
// and snapshotted with the state, and that the engine neither reads nor
// interprets. SetMetaRequest changes them. The one exception is the keys
// under HoldPrefix, which the engine keeps itself (hold.go) and
// SetMetaRequest may not set.

// SetMetaRequest is an internal request, never sent by clients: it sets
// the metadata Key to Value, or removes it if Value is empty. With
// IfAbsent, it sets Key only if Key has no value, and changes nothing
// otherwise: of two commands that set the same key so, the first in the
// log wins, whoever applies them.
type SetMetaRequest struct {
	Key      string `json:"k"`
	Value    string `json:"v,omitempty"`
	IfAbsent bool   `json:"ia,omitempty"`
}

// ActionSetMeta names SetMetaRequest. It is not an SQS action.
const ActionSetMeta api.Action = "fifoq:SetMeta"

// Action implements api.Request.
func (*SetMetaRequest) Action() api.Action { return ActionSetMeta }

// The bounds of a metadata key and value, in bytes.
const maxMetaKey, maxMetaValue = 256, 4096

// setMeta applies a SetMetaRequest.
func (e *Engine) setMeta(r *SetMetaRequest) (api.Response, error) {
	switch {
	case r.Key == "" || len(r.Key) > maxMetaKey || len(r.Value) > maxMetaValue:
		return nil, api.ErrInvalidParameterValue("A metadata key takes 1 to %d bytes and a value at most %d.", maxMetaKey, maxMetaValue)
	case strings.HasPrefix(r.Key, HoldPrefix):
		return nil, api.ErrInvalidParameterValue("Metadata keys under %s are the engine's own.", HoldPrefix)
	}
	if r.IfAbsent && e.meta[r.Key] != "" {
		return api.Empty{}, nil
	}
	if r.Value == "" {
		delete(e.meta, r.Key)
		return api.Empty{}, nil
	}
	if e.meta == nil {
		e.meta = map[string]string{}
	}
	e.meta[r.Key] = r.Value
	return api.Empty{}, nil
}

// Meta returns the value of metadata key ("" if none).
func (e *Engine) Meta(key string) string { return e.meta[key] }

// MetaKeys returns the metadata keys that start with prefix, in no order.
func (e *Engine) MetaKeys(prefix string) []string {
	var out []string
	for k := range e.meta {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// metaCopy returns a copy of the metadata, nil if there is none.
func (e *Engine) metaCopy() map[string]string {
	if len(e.meta) == 0 {
		return nil
	}
	return maps.Clone(e.meta)
}
