package replog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// FuzzRestoreByReference feeds a start's restore of a snapshot that refers
// to the body store arbitrary engine states, with their checksum made
// right so that damage reaches the decoder and the store's checks: the
// references a damaged snapshot names must be refused by the store
// (recount), or read back as a body of the length they name or an error.
// Nothing may panic. The seed is a real snapshot by reference of messages
// of several sizes, with its store.
func FuzzRestoreByReference(f *testing.F) {
	b, err := openBodies(f.TempDir(), 64<<10)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.store.Close() })
	seed := refSnapshot(f, b)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, withEngineChecksum(data)} {
			eng := engine.New(engine.Config{Region: "us-east-1"})
			eng.SetBodyStore(b)
			if err := eng.Restore(bytes.NewReader(in)); err != nil {
				continue
			}
			if err := b.recount(eng); err != nil {
				continue // refused, as a start refuses
			}
			eng.BodyRefs(func(ref engine.BodyRef) {
				if body, err := b.Get(ref); err == nil && len(body) != int(ref.Len) {
					t.Fatalf("reference %+v read back %d bytes", ref, len(body))
				}
			})
		}
	})
}

// refSnapshot fills an engine whose bodies b keeps and returns its
// snapshot by reference (engine format 3).
func refSnapshot(t testing.TB, b *bodies) []byte {
	l := NewMemory(engine.Config{Region: "us-east-1", Bodies: b})
	eng := l.eng
	c := newClock()
	do := func(q api.QueueKey, req api.Request, ids ...string) {
		now := c.next()
		if _, err := l.Apply(t.Context(), &engine.Command{Time: now, Caller: q.Account, Queue: q, Request: req, MessageIDs: ids, Entropy: uint64(now)}); err != nil {
			t.Fatalf("%s: %v", req.Action(), err)
		}
	}
	do(api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	for i, size := range []int{10, 1000, 30_000, 100, 70_000} {
		do(bodyQueue, &api.SendMessageRequest{QueueUrl: bodyQueue.Path(), MessageBody: bigBody(i, size)}, fmt.Sprintf("id-%d", i))
	}
	if err := b.store.Flush(); err != nil {
		t.Fatal(err)
	}
	v, err := eng.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	v.BodiesByReference()
	var out bytes.Buffer
	if _, err := v.WriteTo(&out, &noopLocker{}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// noopLocker is the lock of a view nothing changes while it is written.
type noopLocker struct{}

func (*noopLocker) Lock()   {}
func (*noopLocker) Unlock() {}

// withEngineChecksum replaces the last four bytes of an engine state by
// the CRC-32C of the rest, as a writer would have made them.
func withEngineChecksum(data []byte) []byte {
	if len(data) < 16 {
		return data
	}
	out := bytes.Clone(data)
	binary.BigEndian.PutUint32(out[len(out)-4:], crc32.Checksum(out[:len(out)-4], castagnoli))
	return out
}
