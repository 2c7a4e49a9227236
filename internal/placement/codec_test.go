package placement

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// testMap is a map of 4 nodes and 6 shards with a few queues on it.
func testMap(t testing.TB) Map {
	m, err := Initial(nodeIDs(4), 6)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		s, _ := PlaceQueue(m)
		m.Queues[fmt.Sprintf("000000000000/queue-%d.fifo", i)] = s
	}
	m.Version = 42
	return m
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	m := testMap(t)
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode of Encode's bytes: %v", err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip gave %+v, want %+v", got, m)
	}
	again, _ := got.Encode()
	if !bytes.Equal(again, b) {
		t.Fatal("equal maps encode to different bytes")
	}
}

// TestDecodeRefusesDamage: every cut of a valid encoding, a trailing byte,
// another format and every map Validate refuses are refused.
func TestDecodeRefusesDamage(t *testing.T) {
	b, _ := testMap(t).Encode()
	for n := range len(b) {
		if _, err := Decode(b[:n]); err == nil {
			t.Fatalf("a map cut to %d of %d bytes was taken", n, len(b))
		}
	}
	if _, err := Decode(append(b[:len(b):len(b)], 0)); err == nil {
		t.Fatal("a map with a trailing byte was taken")
	}
	padded := append([]byte{b[0], b[1] | 0x80, 0x00}, b[2:]...) // the version in two bytes
	if _, err := Decode(padded); err == nil {
		t.Fatal("a map with a number padded to two bytes was taken")
	}
	other := append([]byte{mapFormat + 1}, b[1:]...)
	if _, err := Decode(other); err == nil {
		t.Fatal("a map of another format was taken")
	}
	bad := []Map{
		{},
		{Shards: []Shard{{ID: 1, Replicas: []NodeID{"a"}}}},
		{Shards: []Shard{{ID: 0}}},
		{Shards: []Shard{{ID: 0, Replicas: []NodeID{"a", "a"}}}},
		{Shards: []Shard{{ID: 0, Replicas: []NodeID{"a", "b", "c", "d"}}}},
		{Shards: []Shard{{ID: 0, Replicas: []NodeID{""}}}},
		{Shards: []Shard{{ID: 0, Replicas: []NodeID{"a"}}}, Queues: map[string]ShardID{"q": 1}},
		{Shards: []Shard{{ID: 0, Replicas: []NodeID{"a"}}}, Queues: map[string]ShardID{"": 0}},
	}
	for _, m := range bad {
		if _, err := m.Encode(); err == nil {
			t.Fatalf("Encode took the invalid map %+v", m)
		}
	}
}

// FuzzDecodeMap: Decode never panics, and what it takes encodes back to
// the same bytes.
func FuzzDecodeMap(f *testing.F) {
	b, _ := testMap(f).Encode()
	f.Add(b)
	one, _ := Map{Version: 1, Shards: []Shard{{ID: 0, Replicas: []NodeID{"a"}}}}.Encode()
	f.Add(one)
	f.Add([]byte{mapFormat, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		again, err := m.Encode()
		if err != nil {
			t.Fatalf("a decoded map does not encode: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("decoded %x, encoded back %x", data, again)
		}
	})
}
