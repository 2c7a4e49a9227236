package shards

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fifoq/fifoq/internal/replog"
)

// A replica that forgot what it wrote must not take part in its shard
// again under its node's id: it has acknowledged entries that counted
// towards commits and cast votes, and a replica that answers as if it had
// done neither can let a leader be elected without a committed entry, or
// two leaders in one term. The node's incarnation catches a data dir lost
// whole (internal/replog, identity.go); a part of it lost, a shard's
// replica dir or the node's shared log, is caught here. The node keeps, in
// its data dir beside its first group and outside shards/, a record of the
// replicas it has made and of the shared log they write to: heldFile. A
// replica the record names whose dir holds no log, or a shared log that is
// not the one the record names, stops the node, as a fence does, with what
// an operator must do. A replica is added once it has opened, so a node
// whose data dir predates the record starts it from the replicas it
// opens: a loss before that is not seen.

// heldFile is the node's record of its shard replicas, in its data dir.
// Lines: "log ID", the shared log's id, once a replica writes there; and
// "shard N" for each replica made and not yet removed by its shard.
const heldFile = "shard-replicas"

// errReplicaLost is why a node stops on a lost replica or shared log.
var errReplicaLost = errors.New("lost")

// held is the node's record of its replicas (heldFile), read at Open and
// written through whole at each change.
type held struct {
	path string

	mu     sync.Mutex
	log    string
	shards map[uint32]bool
}

// loadHeld reads dir's record of its replicas, empty if it keeps none yet.
func loadHeld(dir string) (*held, error) {
	h := &held{path: filepath.Join(dir, heldFile), shards: map[uint32]bool{}}
	b, err := os.ReadFile(h.path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the node's record of its shard replicas: %w", err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		kind, val, _ := strings.Cut(line, " ")
		switch kind {
		case "log":
			if val == "" {
				return nil, fmt.Errorf("%s line %d: a log line without an id", h.path, i+1)
			}
			h.log = val
		case "shard":
			n, err := strconv.ParseUint(val, 10, 32)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("%s line %d: %q is not a shard", h.path, i+1, val)
			}
			h.shards[uint32(n)] = true
		default:
			return nil, fmt.Errorf("%s line %d: %q is neither a log nor a shard", h.path, i+1, line)
		}
	}
	return h, nil
}

// lostShard says whether the record names shard id's replica while its
// dir holds no log: present reports what the dir holds.
func (h *held) lostShard(id uint32, present bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shards[id] && !present
}

// logID returns the shared log the record names ("" if none).
func (h *held) logID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log
}

// setLog records the shared log the replicas write to.
func (h *held) setLog(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.log == id {
		return nil
	}
	prev := h.log
	h.log = id
	if err := h.writeLocked(); err != nil {
		h.log = prev
		return err
	}
	return nil
}

// add records shard id's replica, once its dir holds its log.
func (h *held) add(id uint32) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shards[id] {
		return nil
	}
	h.shards[id] = true
	if err := h.writeLocked(); err != nil {
		delete(h.shards, id)
		return err
	}
	return nil
}

// remove forgets shard id's replica once its shard has removed it from
// its membership: should the map want a replica here again, the shard's
// leader adds it as a new one, and its dir may be gone by then.
func (h *held) remove(id uint32) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.shards[id] {
		return nil
	}
	delete(h.shards, id)
	if err := h.writeLocked(); err != nil {
		h.shards[id] = true
		return err
	}
	return nil
}

// writeLocked writes the record whole (h.mu held).
func (h *held) writeLocked() error {
	var b strings.Builder
	if h.log != "" {
		fmt.Fprintf(&b, "log %s\n", h.log)
	}
	for _, id := range slices.Sorted(maps.Keys(h.shards)) {
		fmt.Fprintf(&b, "shard %d\n", id)
	}
	if err := replog.WriteFileSynced(h.path, b.String()); err != nil {
		return fmt.Errorf("write the node's record of its shard replicas: %w", err)
	}
	return nil
}

// lostMessage tells the operator of a node that lost a replica what to do.
func lostMessage(node, what string) error {
	return fmt.Errorf("this node %w %s, and may not take part in its shards again as %s: it would answer as if it had never acknowledged their entries or cast its votes. "+
		"On a running member run `fifoq cluster remove %s`, then start this node with an empty data dir and --join (a node alone: restore it from a backup)",
		errReplicaLost, what, node, node)
}
