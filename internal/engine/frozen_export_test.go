package engine

import (
	"bytes"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// What the frozen format tests (frozen_test.go, package engine_test, which
// imports internal/frozentest and so cannot be package engine) need of
// the package's own test helpers.

// FrozenRegion and FrozenAccount are the harness's region and account.
const FrozenRegion, FrozenAccount = testRegion, testAccount

// FrozenState returns the rich harness's state, as every snapshot fixture
// was made (testdata/snapshots/gen_snapshot.go.txt at older commits), and
// the time it is at. With refs, the engine keeps its bodies in a store,
// whose bodies (by BodyRef.Off; File is 1) are returned.
func FrozenState(t *testing.T, refs bool) (e *Engine, now int64, bodies func() []string) {
	harnessBodies = refs
	h := richHarness(t)
	harnessBodies = false
	s := api.QueueKey{Account: testAccount, Name: "s"}
	h.send(s, &api.SendMessageRequest{QueueUrl: s.Path(), MessageBody: "typed", MessageAttributes: map[string]api.MessageAttributeValue{
		"n":  {DataType: "Number", StringValue: strp("42")},
		"c":  {DataType: "String.custom", StringValue: strp("x")},
		"bl": {DataType: "Binary.bin", BinaryValue: []byte{9, 0}},
	}})
	bodies = func() []string { return nil }
	if refs {
		bodies = func() []string { return h.bodies.bodies }
	}
	return h.e, h.now, bodies
}

// FrozenSnapshotByRef writes e's snapshot with its bodies referred to in
// its store (format version 3), as a node writes its own.
func FrozenSnapshotByRef(e *Engine) ([]byte, error) {
	v, err := e.BeginSnapshot()
	if err != nil {
		return nil, err
	}
	defer v.Release()
	v.BodiesByReference()
	var b bytes.Buffer
	_, err = v.WriteTo(&b, noLock{})
	return b.Bytes(), err
}
