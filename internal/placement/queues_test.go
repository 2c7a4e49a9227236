package placement

import (
	"fmt"

	"github.com/fifoq/fifoq/internal/api"

	"math/rand/v2"
	"slices"
	"testing"
)

func TestBalanceQueues(t *testing.T) {
	held := map[ShardID][]string{1: {"a", "b", "c"}, 2: {"d"}, 3: {}}
	mv, ok := BalanceQueues(held, nil, nil)
	if !ok || mv != (QueueMove{Queue: "c", From: 1, To: 3}) {
		t.Fatalf("BalanceQueues = %+v %v, want c from 1 to 3", mv, ok)
	}
	// Within one of each other: no move.
	if mv, ok := BalanceQueues(map[ShardID][]string{1: {"a", "b"}, 2: {"c"}}, nil, nil); ok {
		t.Fatalf("a move between shards of 2 and 1 queues: %+v", mv)
	}
	// Queues that cannot move are passed over, then the next fullest shard.
	skip := func(q string) bool { return q == "c" || q == "b" || q == "a" }
	held = map[ShardID][]string{1: {"a", "b", "c"}, 2: {"d", "e", "f"}, 3: {"g"}, 4: {}}
	if mv, ok := BalanceQueues(held, skip, nil); !ok || mv != (QueueMove{Queue: "f", From: 2, To: 4}) {
		t.Fatalf("BalanceQueues with skips = %+v %v, want f from 2 to 4", mv, ok)
	}
	if _, ok := BalanceQueues(map[ShardID][]string{1: {"a", "b", "c"}}, nil, nil); ok {
		t.Fatal("a move with one shard")
	}
}

// TestBalanceQueuesConverges applies the moves BalanceQueues asks for to
// random placements until it asks for none: then no two shards differ by
// more than one queue, unless queues that cannot move hold them apart,
// and it took no more moves than queues.
func TestBalanceQueuesConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		shards := 1 + rng.IntN(8)
		held := map[ShardID][]string{}
		fixed := map[string]bool{}
		n := rng.IntN(40)
		for id := range shards {
			held[ShardID(id+1)] = nil
		}
		for i := range n {
			q := fmt.Sprintf("q%02d", i)
			id := ShardID(1 + rng.IntN(max(1, shards/2)))
			held[id] = append(held[id], q)
			if rng.IntN(5) == 0 {
				fixed[q] = true
			}
		}
		moves := 0
		for {
			mv, ok := BalanceQueues(held, func(q string) bool { return fixed[q] }, nil)
			if !ok {
				break
			}
			if moves++; moves > n {
				t.Fatalf("round %d: more moves than queues", round)
			}
			from := held[mv.From]
			for i, q := range from {
				if q == mv.Queue {
					held[mv.From] = append(from[:i:i], from[i+1:]...)
				}
			}
			held[mv.To] = append(held[mv.To], mv.Queue)
		}
		lo, hi := n, 0
		for _, qs := range held {
			lo, hi = min(lo, len(qs)), max(hi, len(qs))
		}
		if len(fixed) == 0 && hi-lo > 1 {
			t.Fatalf("round %d: balanced to %v", round, held)
		}
	}
}

func TestDrainFirstGroup(t *testing.T) {
	first := []api.QueueKey{{Account: "1", Name: "b"}, {Account: "1", Name: "a"}}
	held := map[ShardID][]string{1: {"x", "y"}, 2: {"z"}, 3: {"w"}}
	if mv, ok := DrainFirstGroup(first, held, nil, nil); !ok || mv != (QueueMove{Queue: "1/a", From: 0, To: 2}) {
		t.Fatalf("DrainFirstGroup = %+v %v, want 1/a from 0 to 2", mv, ok)
	}
	skip := func(q string) bool { return q == "1/a" }
	if mv, ok := DrainFirstGroup(first, held, skip, nil); !ok || mv.Queue != "1/b" {
		t.Fatalf("DrainFirstGroup passing over 1/a = %+v %v", mv, ok)
	}
	if _, ok := DrainFirstGroup(nil, held, nil, nil); ok {
		t.Fatal("a move out of an empty first group")
	}
	if _, ok := DrainFirstGroup(first, map[ShardID][]string{}, nil, nil); ok {
		t.Fatal("a move with no shard to go to")
	}
}

// TestMovesTakeTheIdlestQueue: of the queues a balancing move may take,
// it takes the one of the least load, so that the busy queues' clients
// see no fence; with loads tied, the choice is by name as without loads.
func TestMovesTakeTheIdlestQueue(t *testing.T) {
	load := map[string]uint64{"a": 50, "b": 3, "c": 900, "1/a": 700, "1/b": 0, "1/c": 0}
	held := map[ShardID][]string{1: {"a", "b", "c"}, 2: {}}
	if mv, ok := BalanceQueues(held, nil, func(q string) uint64 { return load[q] }); !ok || mv.Queue != "b" {
		t.Fatalf("BalanceQueues with loads = %+v %v, want b, the idlest", mv, ok)
	}
	skip := func(q string) bool { return q == "b" }
	if mv, ok := BalanceQueues(held, skip, func(q string) uint64 { return load[q] }); !ok || mv.Queue != "a" {
		t.Fatalf("BalanceQueues with loads, b unmovable = %+v %v, want a", mv, ok)
	}
	first := []api.QueueKey{{Account: "1", Name: "c"}, {Account: "1", Name: "a"}, {Account: "1", Name: "b"}}
	if mv, ok := DrainFirstGroup(first, map[ShardID][]string{1: {}}, nil, func(q string) uint64 { return load[q] }); !ok || mv.Queue != "1/b" {
		t.Fatalf("DrainFirstGroup with loads = %+v %v, want 1/b (idle, and before 1/c by key)", mv, ok)
	}
}

func TestBalanceLoad(t *testing.T) {
	loads := map[string]uint64{"busy-a": 600, "busy-b": 500, "idle": 1, "d": 50, "e": 40}
	load := func(q string) uint64 { return loads[q] }
	// Two busy queues in one shard: one of them goes to the idlest shard,
	// the one that leaves the busier of the two the least (busy-b: 600
	// against 550, where busy-a would leave 500 against 650).
	held := map[ShardID][]string{1: {"busy-a", "busy-b", "idle"}, 2: {"d"}, 3: {"e"}}
	if mv, ok := BalanceLoad(held, nil, load, 100); !ok || mv != (QueueMove{Queue: "busy-b", From: 1, To: 3}) {
		t.Fatalf("BalanceLoad = %+v %v, want busy-b from 1 to 3", mv, ok)
	}
	// A shard whose load is one queue's: moving it helps nothing.
	if mv, ok := BalanceLoad(map[ShardID][]string{1: {"busy-a", "idle"}, 2: {"d"}, 3: {}}, nil, load, 100); ok {
		t.Fatalf("moved %+v, which only makes another shard as busy", mv)
	}
	// Below the least load worth balancing: nothing moves.
	if mv, ok := BalanceLoad(held, nil, load, 2000); ok {
		t.Fatalf("moved %+v under the least load", mv)
	}
	// A gain under MinLoadGain percent is not worth a fence.
	loads2 := map[string]uint64{"a": 100, "b": 15, "c": 100}
	near := map[ShardID][]string{1: {"a", "b"}, 2: {"c"}}
	if mv, ok := BalanceLoad(near, nil, func(q string) uint64 { return loads2[q] }, 1); ok {
		t.Fatalf("moved %+v, which takes 15 of 115 off shard 1: under MinLoadGain", mv)
	}
	// Queues that cannot move are passed over.
	skip := func(q string) bool { return q == "busy-b" }
	if mv, ok := BalanceLoad(held, skip, load, 100); !ok || mv.Queue != "busy-a" {
		t.Fatalf("BalanceLoad with busy-b unmovable = %+v %v, want busy-a", mv, ok)
	}
	if _, ok := BalanceLoad(map[ShardID][]string{1: {"busy-a", "busy-b"}}, nil, load, 1); ok {
		t.Fatal("a move with one shard")
	}
}

// TestBalancingByCountAndLoadConverges runs the balancer's policy, a move
// by count (BalanceQueues) if any, else one by load (BalanceLoad), on
// random placements and loads until it asks for no move: it stops within
// a bound, and then no queue of the busiest shard could take MinLoadGain
// percent off it by going to the idlest.
func TestBalancingByCountAndLoadConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		shards := 2 + rng.IntN(7)
		held := map[ShardID][]string{}
		loads := map[string]uint64{}
		for id := range shards {
			held[ShardID(id+1)] = nil
		}
		n := 1 + rng.IntN(30)
		for i := range n {
			q := fmt.Sprintf("q%02d", i)
			id := ShardID(1 + rng.IntN(max(1, shards/2)))
			held[id] = append(held[id], q)
			if rng.IntN(3) > 0 {
				loads[q] = uint64(rng.IntN(1000))
			}
		}
		load := func(q string) uint64 { return loads[q] }
		moves := 0
		for ; ; moves++ {
			if moves > 20*n {
				t.Fatalf("round %d: still moving after %d moves: %v", round, moves, held)
			}
			mv, ok := BalanceQueues(held, nil, load)
			if !ok {
				mv, ok = BalanceLoad(held, nil, load, 1)
			}
			if !ok {
				break
			}
			i := slices.Index(held[mv.From], mv.Queue)
			if i < 0 {
				t.Fatalf("round %d: %+v moves a queue its shard does not hold", round, mv)
			}
			held[mv.From] = slices.Delete(held[mv.From], i, i+1)
			held[mv.To] = append(held[mv.To], mv.Queue)
		}
		total := map[ShardID]uint64{}
		for id, qs := range held {
			for _, q := range qs {
				total[id] += loads[q]
			}
		}
		var hot, cold ShardID = 1, 1
		for id := range held {
			if total[id] > total[hot] {
				hot = id
			}
			if total[id] < total[cold] {
				cold = id
			}
		}
		for _, q := range held[hot] {
			l := loads[q]
			if after := max(total[hot]-l, total[cold]+l); l > 0 && (total[hot]-min(after, total[hot]))*100 >= total[hot]*MinLoadGain {
				t.Fatalf("round %d: moving %s (%d) from %d (%d) to %d (%d) would gain enough, and was not made", round, q, l, hot, total[hot], cold, total[cold])
			}
		}
	}
}
