// Package memguard keeps a fifoq server inside a memory budget. Given the
// budget (--max-memory, or the cgroup's limit), it sets the Go runtime's
// soft memory limit under it, watches how much memory the process needs,
// and tells the server when to refuse the writes that grow its state
// (sends, new queues) so that consumers can drain the backlog instead of
// the kernel killing the process. It knows nothing of HTTP or queues: the
// server asks Admit before such a write.
package memguard

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// The thresholds, as shares of the budget.
//
// The runtime's soft limit sits a tenth under the budget: the budget is
// usually the cgroup's limit, which also counts what the Go runtime does
// not see (the kernel's socket buffers, dirty pages being written back).
// Sends are refused once the memory still needed after a collection
// reaches refuseShare: what is left up to the soft limit carries the
// requests in flight (a 1 MiB message is held two or three times over
// while it is decoded, logged and applied), a snapshot being written, and
// the messages accepted before the next collection shows the growth.
// They are accepted again below resumeShare, so that the server does not
// flap at the line. Refusal and resumption are shares of the budget less
// the executable's resident code (Usage.Files), above it: the state's
// share of the room the code leaves. The gap between them is what
// deleting part of a backlog must free: a FIFO queue's deduplication
// records outlive its deleted messages by five minutes, and its maps keep
// their size, so deleting half a backlog frees well under half its
// memory: with the longest ids at the smallest budget, a gap of a tenth
// kept sends refused after consumers had drained half
// (TestMemoryLimitRefusesInsteadOfOOM).
const (
	softLimitShare = 0.90
	refuseShare    = 0.70
	resumeShare    = 0.65
	// inUseShare is the heap in use (live or not yet collected) past which
	// the guard collects at once to learn what is live, rather than wait
	// for the runtime to: between collections the live figure is stale.
	inUseShare = 0.80
)

// sampleEvery is how often the guard measures. Between two samples the
// server accepts what arrives; at the few hundred MB/s a 2-core server can
// take in, that is tens of MB, well inside the margin above refuseShare.
const sampleEvery = 100 * time.Millisecond

// minForcedGCInterval bounds the collections the guard itself asks for.
// A collection's marking is proportional to the objects holding pointers
// (the messages' records, not their bodies): a few hundred milliseconds of
// CPU for millions of queued messages.
const minForcedGCInterval = 2 * time.Second

// Usage is one measurement of the process's memory, in bytes.
type Usage struct {
	// Live is what the process would need right after a collection: the
	// heap found live by the last one, plus the runtime's memory outside
	// the heap's objects (stacks, metadata, fragmentation).
	Live int64
	// InUse is what the runtime holds now, collectable garbage included,
	// but not memory returned or free to return to the system.
	InUse int64
	// OutsideHeap is memory the process holds in mappings of its own,
	// which the runtime neither counts nor collects (the engine's message
	// records), and Files; Live and InUse include it.
	OutsideHeap int64
	// Files is the process's resident pages of mapped files, its
	// executable's code above all (residentFileBytes): a floor the state
	// cannot shrink, so the guard's thresholds are shares of the budget
	// less it. OutsideHeap includes it.
	Files int64
}

// Guard watches the process's memory against a budget.
type Guard struct {
	budget    int64
	softLimit int64
	refuseAt  int64
	resumeAt  int64
	inUseAt   int64
	logger    *slog.Logger

	read    func() Usage // ReadUsage and the memory outside the heap, or a test's
	collect func()       // runtime.GC, or a test's
	// setLimit sets the runtime's soft limit (debug.SetMemoryLimit), nil
	// where the guard does not own it (GOMEMLIMIT set a lower one, a
	// test); runtimeLimit is what it last set.
	setLimit func(int64)
	// limitMu orders the changes of the runtime's soft limit: the
	// sampling goroutine and OutsideHeapChanged's callers both make them.
	limitMu      sync.Mutex
	runtimeLimit int64 // under limitMu
	now          func() time.Time
	lastGC       time.Time
	refusing     atomic.Bool
	live         atomic.Int64
	// fileBytes is the resident file-backed memory the last sample found
	// (residentFileBytes), for OutsideHeapChanged.
	fileBytes atomic.Int64
}

// New returns a guard for a budget of the given bytes (more than 0) and
// sets the runtime's soft memory limit under it, unless GOMEMLIMIT set a
// lower one. outsideHeap, if not nil, returns the memory the process holds
// outside the Go heap, in mappings the runtime does not see: the guard
// counts it with the runtime's figures, and lowers the runtime's soft
// limit by it, so that the collector keeps the whole process under the
// budget. It counts the process's resident pages of mapped files the same
// way (residentFileBytes). Run must be running for the guard to measure.
func New(budget int64, outsideHeap func() int64, logger *slog.Logger) *Guard {
	var g *Guard
	read := func() Usage {
		u, o, f := ReadUsage(), int64(0), residentFileBytes()
		if outsideHeap != nil {
			o = outsideHeap()
		}
		g.fileBytes.Store(f)
		u.Live += o + f
		u.InUse += o + f
		u.OutsideHeap = o + f
		u.Files = f
		return u
	}
	g = newGuard(budget, logger, read, runtime.GC, time.Now)
	if cur := debug.SetMemoryLimit(-1); cur > g.softLimit {
		debug.SetMemoryLimit(g.softLimit)
		g.setLimit = func(n int64) { debug.SetMemoryLimit(n) }
	} else {
		g.softLimit = cur
	}
	return g
}

// newGuard is New without touching the runtime.
func newGuard(budget int64, logger *slog.Logger, read func() Usage, collect func(), now func() time.Time) *Guard {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	share := func(f float64) int64 { return int64(float64(budget) * f) }
	return &Guard{
		budget: budget, softLimit: share(softLimitShare), runtimeLimit: share(softLimitShare),
		refuseAt: share(refuseShare), resumeAt: share(resumeShare), inUseAt: share(inUseShare),
		logger: logger, read: read, collect: collect, now: now,
	}
}

// Budget returns the budget in bytes.
func (g *Guard) Budget() int64 { return g.budget }

// SoftLimit returns the Go runtime's soft memory limit the guard set (or
// found lower), in bytes.
func (g *Guard) SoftLimit() int64 { return g.softLimit }

// Live returns the memory the process needed at the last sample (Usage.Live).
func (g *Guard) Live() int64 { return g.live.Load() }

// Refusing reports whether writes that grow the state are refused now.
func (g *Guard) Refusing() bool { return g.refusing.Load() }

// Admit returns nil if a write that grows the state may go ahead, or the
// retryable 503 ServiceUnavailable to answer it with. It costs one atomic
// load: it is asked on every send.
func (g *Guard) Admit() error {
	if !g.refusing.Load() {
		return nil
	}
	return api.ErrServiceUnavailable("The server is at its memory budget (%s); new messages are refused until consumers drain its queues. Retry later.", HumanSize(g.budget))
}

// Run measures every sampleEvery until ctx ends.
func (g *Guard) Run(ctx context.Context) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		g.sample()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample measures once and decides whether to refuse.
//
// The live figure is as old as the runtime's last collection, so the guard
// collects first (at most once per minForcedGCInterval) when that age
// matters: when the heap in use is high but the last collection found it
// mostly garbage (the runtime would soon free it; refusing on it would be
// wrong), and while it refuses (consumers free memory, but with sends
// refused the heap grows too slowly for the runtime to collect on its own,
// and the refusal would outlast its cause).
func (g *Guard) sample() {
	u := g.read()
	stale := g.refusing.Load() || u.InUse >= g.inUseAt && u.Live < g.refuseAt
	if stale && g.now().Sub(g.lastGC) >= minForcedGCInterval {
		g.collect()
		g.lastGC = g.now()
		u = g.read()
	}
	g.fitRuntimeLimit(u.OutsideHeap)
	g.live.Store(u.Live)
	refuseAt, resumeAt := g.refuseAt, g.resumeAt
	if f := u.Files; f > 0 {
		refuseAt, resumeAt = g.aboveFiles(f, refuseShare), g.aboveFiles(f, resumeShare)
	}
	over := u.Live >= refuseAt || u.InUse >= g.softLimit
	switch {
	case over && !g.refusing.Load():
		g.refusing.Store(true)
		g.logger.Warn("memory budget reached: refusing sends until consumers drain the queues",
			"budget_bytes", g.budget, "live_bytes", u.Live, "in_use_bytes", u.InUse, "outside_heap_bytes", u.OutsideHeap, "file_bytes", u.Files, "refuse_at_bytes", refuseAt)
	case !over && g.refusing.Load() && u.Live < resumeAt:
		g.refusing.Store(false)
		g.logger.Info("memory back under the budget: accepting sends",
			"budget_bytes", g.budget, "live_bytes", u.Live, "resume_at_bytes", resumeAt)
	}
}

// aboveFiles returns the threshold at share of the budget less files, the
// resident file-backed memory, plus files: the state's share of what the
// executable's code leaves of the budget. Counted as memory of its own at
// the smallest budget, the code would take a quarter of the room between
// refusing and resuming, which deletes could then never win back. At
// least half the budget is taken to be the state's, whatever a reading
// says.
func (g *Guard) aboveFiles(files int64, share float64) int64 {
	files = min(files, g.budget/2)
	return files + int64(float64(g.budget-files)*share)
}

// OutsideHeapChanged fits the runtime's soft limit to total, the memory
// the process now holds in mappings of its own (the outsideHeap New was
// given), at once rather than at the next sample: the engine calls it as
// it maps or gives back record memory (engine.WatchOutsideHeap). A
// restore at start maps a whole backlog's records within a sample or two,
// while the collector, held off or not, would let the heap grow to a
// limit that does not count them.
func (g *Guard) OutsideHeapChanged(total int64) {
	g.fitRuntimeLimit(total + g.fileBytes.Load())
}

// fitRuntimeLimit keeps the runtime's soft limit at the guard's less the
// memory outside the heap, so that the collector works to keep the whole
// process, not only its heap, under the guard's limit. It changes the
// limit only by a hundredth of the budget or more, and never sets it under
// a quarter of the guard's: by then sends are refused, and a lower limit
// would only make the collector run without end.
func (g *Guard) fitRuntimeLimit(outsideHeap int64) {
	if g.setLimit == nil {
		return
	}
	want := max(g.softLimit-outsideHeap, g.softLimit/4)
	g.limitMu.Lock()
	defer g.limitMu.Unlock()
	if d := want - g.runtimeLimit; d < g.budget/100 && -d < g.budget/100 {
		return
	}
	g.setLimit(want)
	g.runtimeLimit = want
}

// residentFileBytes returns the process's resident pages that are backed
// by files: its executable's code and data, tens of MB that a memory
// cgroup is charged for as it is for the heap, and that it can take back
// only by making the process read its own code from disk again and again.
// The runtime's metrics do not see them; at the smallest budget (64 MiB)
// they are a quarter of it. 0 where /proc/self/statm cannot be read (not
// Linux).
func residentFileBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	// size resident shared text lib data dt, in pages; shared is the
	// resident file-backed (and shared memory) pages.
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0
	}
	pages, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// usageSamples are the runtime metrics ReadUsage reads, in this order.
var usageSamples = []string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
}

// ReadUsage measures the process's memory from the runtime's metrics. It
// does not stop the world.
func ReadUsage() Usage {
	s := make([]metrics.Sample, len(usageSamples))
	for i, name := range usageSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	total, released, free, objects, live := v(0), v(1), v(2), v(3), v(4)
	inUse := total - released - free
	// What the heap's objects take beyond the live ones is garbage (or
	// new, not yet judged); everything else in use stays after a collection.
	return Usage{Live: inUse - objects + min(live, objects), InUse: inUse}
}
