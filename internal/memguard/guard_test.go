package memguard

import (
	"errors"
	"runtime"
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
	step(700, 750, true) // live reaches 70 %
	step(650, 660, true) // under 70 % but not under 60 %: still refusing
	step(590, 600, false)
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
