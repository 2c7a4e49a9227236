package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Routing to the partitions of a split queue (docs/cluster.md, "One busy
// FIFO queue over many shards: partitions"). A FIFO queue split by the
// hash of MessageGroupId is a set of partitions, each a queue of the
// engine keyed by the queue's key and its number, each in a shard of its
// own record (shards/partitions.go). A request that names one message
// group, by its MessageGroupId or by a receipt handle that carries the
// group's hash (engine.HandleGroupHash), goes to the partition holding
// the group, by this node's copy of the queue's layout: routed to that
// partition's shard as any request is routed to its queue's, and served
// there on the partition (the command's queue key names it: partOf). A
// request forwarded to another member says the partition it was routed
// to (hdrPart); a layout that lags only sends a group to a partition
// that no longer holds it, which answers the retryable moving error.
//
// What names no single group, or several (receives, batches across
// partitions, handles from before the queue's first split, the queue's
// attributes), still goes to partition 0: routing those over every
// partition is the next step, and until it is built nothing splits a
// queue outside the tests.

// hdrPart names, on a request forwarded to another member, the partition
// of a split queue it was routed to; absent for partition 0.
const hdrPart = "X-Fifoq-Part"

// partCtxKey keys, in a request's context, the partition it is served on.
type partCtxKey struct{}

// withPart returns ctx serving its request on partition part of its queue.
func withPart(ctx context.Context, part uint32) context.Context {
	if part == 0 {
		return ctx
	}
	return context.WithValue(ctx, partCtxKey{}, part)
}

// partOf returns the partition ctx serves its request on: 0 unless
// withPart said another.
func partOf(ctx context.Context) uint32 {
	p, _ := ctx.Value(partCtxKey{}).(uint32)
	return p
}

// hintPart returns the partition a forwarded request was routed to.
func hintPart(r *http.Request) uint32 {
	n, err := strconv.ParseUint(r.Header.Get(hdrPart), 10, 32)
	if err != nil || n > engine.MaxPart {
		return 0
	}
	return uint32(n)
}

// partitionOf returns the partition of queue q that req goes to: the one
// holding the message group it names, if it names one, by this node's
// copy of the map; 0 for anything else, and for a queue never split.
func (s *Server) partitionOf(q api.QueueKey, req api.Request) uint32 {
	if s.shards == nil {
		return 0
	}
	var hashes []uint32
	unhashed := false // a receipt handle that carries no group's hash
	handle := func(h string) {
		hash, ok := engine.HandleGroupHash(h)
		unhashed = unhashed || !ok
		hashes = append(hashes, hash)
	}
	switch r := req.(type) {
	case *api.SendMessageRequest:
		if r.MessageGroupId != "" {
			hashes = append(hashes, api.GroupHash(r.MessageGroupId))
		}
	case *api.SendMessageBatchRequest:
		for _, e := range r.Entries {
			hashes = append(hashes, api.GroupHash(e.MessageGroupId))
		}
	case *api.DeleteMessageRequest:
		handle(r.ReceiptHandle)
	case *api.ChangeMessageVisibilityRequest:
		handle(r.ReceiptHandle)
	case *api.DeleteMessageBatchRequest:
		for _, e := range r.Entries {
			handle(e.ReceiptHandle)
		}
	case *api.ChangeMessageVisibilityBatchRequest:
		for _, e := range r.Entries {
			handle(e.ReceiptHandle)
		}
	}
	if len(hashes) == 0 || unhashed {
		// A handle of a queue never split, or from before its first
		// split: partition 0 has its message, or says it moved.
		return 0
	}
	part := s.shards.PartOf(q, hashes[0])
	for _, h := range hashes[1:] {
		if s.shards.PartOf(q, h) != part {
			return 0 // several partitions' groups: not routed by group yet
		}
	}
	return part
}
