package placement

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// mapFormat is the first byte of an encoded Map: the format's version, so
// that a later one can be told apart and refused by a node that does not
// read it.
const mapFormat byte = 1

// Limits of a Map that Decode takes: well above any cluster fifoq runs, and
// low enough that a damaged count cannot make it allocate much.
const (
	maxShards  = 1 << 16
	maxQueues  = 1 << 24
	maxNameLen = 1 << 10
)

// Validate reports what makes m unusable, or nil: shards numbered 0 up in
// order, each with 1 to MaxReplicas replicas on distinct, named nodes, and
// every queue named and in one of the shards.
func (m Map) Validate() error {
	if len(m.Shards) == 0 || len(m.Shards) > maxShards {
		return fmt.Errorf("placement: %d shards, not 1 to %d", len(m.Shards), maxShards)
	}
	for i, s := range m.Shards {
		if s.ID != ShardID(i) {
			return fmt.Errorf("placement: shard %d at place %d", s.ID, i)
		}
		if len(s.Replicas) == 0 || len(s.Replicas) > MaxReplicas {
			return fmt.Errorf("placement: shard %d has %d replicas, not 1 to %d", s.ID, len(s.Replicas), MaxReplicas)
		}
		for k, r := range s.Replicas {
			if r == "" || len(r) > maxNameLen {
				return fmt.Errorf("placement: shard %d has a replica on a node id of %d bytes", s.ID, len(r))
			}
			if slices.Contains(s.Replicas[:k], r) {
				return fmt.Errorf("placement: shard %d has two replicas on node %q", s.ID, r)
			}
		}
	}
	if len(m.Queues) > maxQueues {
		return fmt.Errorf("placement: %d queues, more than %d", len(m.Queues), maxQueues)
	}
	for q, s := range m.Queues {
		if q == "" || len(q) > maxNameLen {
			return fmt.Errorf("placement: a queue name of %d bytes", len(q))
		}
		if int(s) >= len(m.Shards) {
			return fmt.Errorf("placement: queue %q in shard %d of %d", q, s, len(m.Shards))
		}
	}
	return nil
}

// Encode returns m in its binary form, the same bytes for equal maps
// (queues in name order), so that replicas of the meta log can compare
// them. It refuses a map that Validate refuses.
func (m Map) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b := []byte{mapFormat}
	b = binary.AppendUvarint(b, m.Version)
	b = binary.AppendUvarint(b, uint64(len(m.Shards)))
	for _, s := range m.Shards {
		b = binary.AppendUvarint(b, uint64(len(s.Replicas)))
		for _, r := range s.Replicas {
			b = appendString(b, string(r))
		}
	}
	names := make([]string, 0, len(m.Queues))
	for q := range m.Queues {
		names = append(names, q)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, q := range names {
		b = appendString(b, q)
		b = binary.AppendUvarint(b, uint64(m.Queues[q]))
	}
	return b, nil
}

// uvarintLen is how many bytes binary.AppendUvarint writes for v.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// errShort is a map cut short.
var errShort = errors.New("placement: map cut short")

// Decode reads a map that Encode wrote, and refuses anything else: another
// format, damaged or trailing bytes, or a map that Validate refuses.
func Decode(b []byte) (Map, error) {
	if len(b) == 0 {
		return Map{}, errShort
	}
	if b[0] != mapFormat {
		return Map{}, fmt.Errorf("placement: map format %d; this fifoq reads %d", b[0], mapFormat)
	}
	d := decoder{b: b[1:]}
	m := Map{Version: d.uvarint()}
	shards := d.count(maxShards)
	m.Shards = make([]Shard, 0, shards)
	for i := range shards {
		s := Shard{ID: ShardID(i)}
		for range d.count(MaxReplicas) {
			s.Replicas = append(s.Replicas, NodeID(d.string()))
		}
		m.Shards = append(m.Shards, s)
	}
	queues := d.count(maxQueues)
	m.Queues = make(map[string]ShardID, queues)
	prev := ""
	for i := range queues {
		q, s := d.string(), d.uvarint()
		if d.err == nil && (i > 0 && q <= prev || s >= uint64(shards)) {
			d.err = fmt.Errorf("placement: queue %q out of order or in shard %d of %d", q, s, shards)
		}
		m.Queues[q], prev = ShardID(s), q
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("placement: %d bytes after the map", len(d.b))
	}
	if d.err != nil {
		return Map{}, d.err
	}
	if err := m.Validate(); err != nil {
		return Map{}, err
	}
	return m, nil
}

// decoder reads uvarints and strings until its first error, after which
// it returns zeros.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	if n != uvarintLen(v) {
		// Padded with 0x80 bytes: one map, one encoding.
		d.err = fmt.Errorf("placement: a number in %d bytes, not the %d it takes", n, uvarintLen(v))
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of at most limit items, each taking a byte or more,
// so that a damaged count is refused before anything is allocated for it.
func (d *decoder) count(limit int) int {
	v := d.uvarint()
	if d.err == nil && (v > uint64(limit) || v > uint64(len(d.b))) {
		d.err = fmt.Errorf("placement: a count of %d, more than the map can hold", v)
	}
	if d.err != nil {
		return 0
	}
	return int(v)
}

func (d *decoder) string() string {
	n := d.count(maxNameLen)
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
