package memguard

import (
	"errors"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// fakeRuntime stands in for the runtime's figures and its collector.
type fakeRuntime struct {
	usage     Usage
	afterGC   Usage // what a collection leaves
	collected int
	clock     time.Time
}

func (r *fakeRuntime) read() Usage { return r.usage }
func (r *fakeRuntime) collect()    { r.collected++; r.usage = r.afterGC }
func (r *fakeRuntime) now() time.Time {
	return r.clock
}

func newFake(budget int64) (*Guard, *fakeRuntime) {
	rt := &fakeRuntime{clock: time.Unix(1e9, 0)}
	return newGuard(budget, nil, rt.read, rt.collect, rt.now), rt
}

func TestGuardRefusesNearTheBudgetAndResumesBelowIt(t *testing.T) {
	const mib = 1 << 20
	g, rt := newFake(1000 * mib)
	if g.SoftLimit() != 900*mib {
		t.Fatalf("soft limit %d, want 90%% of the budget", g.SoftLimit())
	}
	step := func(live, inUse int64, wantRefusing bool) {
		t.Helper()
		rt.usage = Usage{Live: live * mib, InUse: inUse * mib}
		rt.afterGC = Usage{Live: live * mib, InUse: live * mib}
		rt.clock = rt.clock.Add(10 * time.Second) // no rate limit in the way
		g.sample()
		if g.Refusing() != wantRefusing {
			t.Fatalf("live %d MiB, in use %d MiB: refusing = %v, want %v", live, inUse, g.Refusing(), wantRefusing)
		}
		err := g.Admit()
		var apiErr *api.Error
		switch {
		case wantRefusing && (!errors.As(err, &apiErr) || apiErr.Code != "ServiceUnavailable" || apiErr.Status != 503):
			t.Fatalf("Admit while refusing = %v, want a 503 ServiceUnavailable", err)
		case !wantRefusing && err != nil:
			t.Fatalf("Admit = %v, want nil", err)
		}
	}
	step(100, 200, false)
	step(650, 700, false)
	step(700, 750, true)  // live reaches 70 %
	step(660, 670, true)  // under 70 % but not under 65 %: still refusing
	step(640, 645, false) // under 65 %
}

func TestGuardCollectsBeforeJudgingAStaleHeap(t *testing.T) {
	const mib = 1 << 20
	g, rt := newFake(1000 * mib)
	// 850 MiB in use, but the last collection found 200 MiB live, and a
	// collection now leaves 300: not a reason to refuse.
	rt.usage = Usage{Live: 200 * mib, InUse: 850 * mib}
	rt.afterGC = Usage{Live: 300 * mib, InUse: 300 * mib}
	g.sample()
	if rt.collected != 1 || g.Refusing() || g.Live() != 300*mib {
		t.Fatalf("collected %d, refusing %v, live %d: want one collection, no refusal, 300 MiB live", rt.collected, g.Refusing(), g.Live())
	}
	// A collection now finds 750 MiB live: refuse.
	rt.clock = rt.clock.Add(minForcedGCInterval)
	rt.usage = Usage{Live: 200 * mib, InUse: 850 * mib}
	rt.afterGC = Usage{Live: 750 * mib, InUse: 750 * mib}
	g.sample()
	if rt.collected != 2 || !g.Refusing() {
		t.Fatalf("collected %d, refusing %v: want a second collection and a refusal", rt.collected, g.Refusing())
	}
	// While refusing, consumers drain; the guard collects to see it, but
	// not more often than minForcedGCInterval.
	rt.afterGC = Usage{Live: 100 * mib, InUse: 100 * mib}
	rt.usage = Usage{Live: 750 * mib, InUse: 760 * mib}
	g.sample()
	if rt.collected != 2 || !g.Refusing() {
		t.Fatalf("collected %d, refusing %v: collected again within %v", rt.collected, g.Refusing(), minForcedGCInterval)
	}
	rt.clock = rt.clock.Add(minForcedGCInterval)
	g.sample()
	if rt.collected != 3 || g.Refusing() {
		t.Fatalf("collected %d, refusing %v: want a collection that ends the refusal", rt.collected, g.Refusing())
	}
	// Past the soft limit, with a collection just done, the runtime is
	// losing: refuse without waiting for the next one.
	rt.usage = Usage{Live: 300 * mib, InUse: 905 * mib}
	g.sample()
	if rt.collected != 3 || !g.Refusing() {
		t.Fatalf("collected %d, refusing %v: want a refusal past the soft limit", rt.collected, g.Refusing())
	}
}

// sink keeps TestReadUsage's allocation live where the compiler cannot see
// that nothing reads it.
var sink []byte

func TestReadUsage(t *testing.T) {
	sink = make([]byte, 64<<20)
	defer func() { sink = nil }()
	runtime.GC() // Live is what the last collection found
	u := ReadUsage()
	if u.Live < int64(len(sink)) || u.InUse < u.Live {
		t.Fatalf("ReadUsage = %+v with a 64 MiB slice live", u)
	}
}

// TestGuardCountsMemoryOutsideTheHeap: memory the process maps itself
// (the engine's message records) is in the figures New's reader gives,
// refuses sends as the heap would, and lowers the runtime's soft limit by
// as much, by steps of a hundredth of the budget at least and never under
// a quarter of the guard's limit.
func TestGuardCountsMemoryOutsideTheHeap(t *testing.T) {
	const mib = 1 << 20
	g, rt := newFake(1000 * mib)
	var limits []int64
	g.setLimit = func(n int64) { limits = append(limits, n) }
	sample := func(heap, outside int64) {
		t.Helper()
		u := Usage{Live: (heap + outside) * mib, InUse: (heap + outside) * mib, OutsideHeap: outside * mib}
		rt.usage, rt.afterGC = u, u
		rt.clock = rt.clock.Add(10 * time.Second)
		g.sample()
	}
	sample(100, 0)
	if len(limits) != 0 {
		t.Fatalf("the runtime's limit was set to %v with nothing outside the heap", limits)
	}
	sample(100, 5) // less than a hundredth of the budget: left as it is
	if len(limits) != 0 {
		t.Fatalf("the runtime's limit was set to %v for 5 MiB outside the heap", limits)
	}
	sample(100, 300)
	if len(limits) != 1 || limits[0] != 600*mib || g.Refusing() {
		t.Fatalf("300 MiB outside the heap: limits set %v, refusing %v; want the runtime's limit at 600 MiB, no refusal", limits, g.Refusing())
	}
	sample(100, 600) // 700 MiB in all: the budget's refusal line
	if !g.Refusing() || limits[len(limits)-1] != 300*mib {
		t.Fatalf("600 MiB outside the heap and 100 in it: refusing %v, runtime limit %d MiB; want a refusal and 300 MiB", g.Refusing(), limits[len(limits)-1]/mib)
	}
	sample(100, 880)
	if got := limits[len(limits)-1]; got != 900*mib/4 {
		t.Fatalf("880 MiB outside the heap: runtime limit %d MiB, want a quarter of 900", got/mib)
	}
	sample(100, 0)
	if g.Refusing() || limits[len(limits)-1] != 900*mib {
		t.Fatalf("drained: refusing %v, runtime limit %d MiB; want sends taken and the limit back at 900 MiB", g.Refusing(), limits[len(limits)-1]/mib)
	}
}

// TestGuardLeavesTheFilesOutOfItsShares: the executable's resident code
// (Usage.Files) is a floor the state cannot shrink below, so refusal and
// resumption are shares of what it leaves of the budget, above it. At
// 64 MiB with 16 MiB of code, sends are refused at 16 + 70 % of 48 MiB and
// taken again below 16 + 65 % of 48.
func TestGuardLeavesTheFilesOutOfItsShares(t *testing.T) {
	const mib = 1 << 20
	g, rt := newFake(64 * mib)
	const files = 16 * mib
	sample := func(state int64) {
		t.Helper()
		u := Usage{Live: state + files, InUse: state + files, OutsideHeap: files, Files: files}
		rt.usage, rt.afterGC = u, u
		rt.clock = rt.clock.Add(10 * time.Second)
		g.sample()
	}
	room := float64(48 * mib) // what the files leave of the budget
	refuseAt := int64(room * 0.70)
	resumeAt := int64(room * 0.65)
	sample(refuseAt - mib)
	if g.Refusing() {
		t.Fatalf("refusing with %d MiB of state and 16 MiB of code: the line is %d MiB of state", (refuseAt-mib)/mib, refuseAt/mib)
	}
	sample(refuseAt)
	if !g.Refusing() {
		t.Fatalf("not refusing at 70 %% of the 48 MiB the code leaves")
	}
	sample(resumeAt + mib/2)
	if !g.Refusing() {
		t.Fatalf("took sends again above 65 %% of the 48 MiB the code leaves")
	}
	sample(resumeAt - mib/2)
	if g.Refusing() {
		t.Fatalf("still refusing under 65 %% of the 48 MiB the code leaves")
	}
}

// TestOutsideHeapChangedFitsTheLimitAtOnce: the engine's report of its
// record memory moves the runtime's soft limit without waiting for a
// sample, counting the files the last sample found.
func TestOutsideHeapChangedFitsTheLimitAtOnce(t *testing.T) {
	const mib = 1 << 20
	g, _ := newFake(1000 * mib)
	var limits []int64
	g.setLimit = func(n int64) { limits = append(limits, n) }
	g.fileBytes.Store(20 * mib)
	g.OutsideHeapChanged(280 * mib)
	if len(limits) != 1 || limits[0] != 600*mib {
		t.Fatalf("280 MiB of records and 20 MiB of files: runtime limits set %v, want 600 MiB", limits)
	}
	g.OutsideHeapChanged(283 * mib) // less than a hundredth of the budget: left as it is
	if len(limits) != 1 {
		t.Fatalf("a change of 3 MiB set the runtime limit again: %v", limits)
	}
}

// TestNewReadsMemoryOutsideTheHeap: New's reader adds what outsideHeap
// reports, and the resident pages of mapped files, to the runtime's
// figures.
func TestNewReadsMemoryOutsideTheHeap(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	const outside = 64 << 20
	g := New(1<<40, func() int64 { return outside }, nil)
	runtime.GC()
	heap := ReadUsage()
	u := g.read()
	if u.OutsideHeap != outside+u.Files || u.Live < heap.Live+outside/2 || u.InUse < outside {
		t.Fatalf("New's reader gives %+v, with %d bytes outside the heap and the runtime's figures %+v", u, outside, heap)
	}
	if runtime.GOOS == "linux" && u.Files <= 0 {
		t.Fatalf("New's reader found no resident file-backed memory on Linux, where this test's own code is: %+v", u)
	}
}
