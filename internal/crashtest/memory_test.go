package crashtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/memguard"
	"github.com/fifoq/fifoq/internal/testbin"
	"github.com/fifoq/fifoq/internal/testenv"
)

var (
	memLimitMiB         = flag.Int("memory.limit-mib", 256, "TestBacklogLargerThanMemory: the memory limit of the cgroup fifoq runs in, MiB (its budget too: no --max-memory is given)")
	memMessages         = flag.Int("memory.messages", 768, "TestBacklogLargerThanMemory: messages of 1,000,000 bytes offered (the default is three times the default limit)")
	memSmallLimitMiB    = flag.Int("memory.small-limit-mib", 64, "TestMemoryLimitRefusesInsteadOfOOM: the memory limit of the cgroup fifoq runs in, MiB")
	memSmallMessages    = flag.Int("memory.small-messages", 400_000, "TestMemoryLimitRefusesInsteadOfOOM: small FIFO messages offered at most (the offer ends at the first memRefusalsEnough refusals)")
	memStandardMessages = flag.Int("memory.standard-messages", 900_000, "TestStandardBacklogRefusesInsteadOfOOM: small standard messages offered at most, fewer than 1,000,000 (ids have six digits; the offer ends at the first memRefusalsEnough refusals)")
)

const (
	// memBodySize is the size of each large body offered: just under
	// SQS's maximum message size (1 MiB with the attributes, and these
	// have none).
	memBodySize = 1_000_000
	// memSmallBodySize is the size of each small body.
	memSmallBodySize = 100
	// memIDSize is the length of the group and deduplication ids of a
	// small message: SQS's maximum, 128.
	memIDSize = 128
	// memRefusalsEnough ends the offer: refusals are what is tested, and
	// once the budget is full every later send is refused until consumers
	// drain.
	memRefusalsEnough = 200
	// memOfferFor bounds the offering phase; the final drain ends after
	// memDrainStall without a delivery.
	// Both are bounds on loops, not expectations: the test does not fail
	// for being slow, it stops offering and checks what it has.
	memOfferFor   = 150 * time.Second
	memDrainStall = 60 * time.Second
	// memVisibility is the visibility timeout of the test's receives: longer
	// than the test, so that a message is never delivered twice because its
	// timeout ran out, and a duplicate is a bug.
	memVisibility = 600
)

// TestMemoryLimitRefusesInsteadOfOOM runs fifoq in a memory cgroup
// (-memory.small-limit-mib, 64 MiB), without --max-memory so that the
// budget comes from the cgroup, and offers it small FIFO messages, each in
// a group of its own with ids of SQS's maximum length, until it refuses
// them: what a node keeps in memory for every queued message (its record,
// ids and group; bodies and attributes are on disk) fills the budget. The
// server must refuse sends with ServiceUnavailable (503) rather than be
// killed by the OOM killer, let consumers receive and delete while it
// refuses, take sends again once they have drained half, and, once killed
// with SIGKILL and restarted in the same cgroup, recover within the limit
// and deliver every acknowledged message intact and nothing else.
func TestMemoryLimitRefusesInsteadOfOOM(t *testing.T) {
	runMemoryCgroup(t, memShape{body: memSmallBodySize, attr: 40, fifo: true, messages: *memSmallMessages, limitMiB: *memSmallLimitMiB, senders: 16}, refusesThenResumes)
}

// TestStandardBacklogRefusesInsteadOfOOM is TestMemoryLimitRefusesInsteadOfOOM
// with a standard queue and no ids: such a message keeps nothing on the Go
// heap, only its record, in memory the engine maps outside the heap
// (internal/engine/arena.go), so the budget must count that memory too or
// the backlog grows until the kernel kills the server.
func TestStandardBacklogRefusesInsteadOfOOM(t *testing.T) {
	runMemoryCgroup(t, memShape{body: memSmallBodySize, messages: *memStandardMessages, limitMiB: *memSmallLimitMiB, senders: 16, batch: 10}, refusesThenResumes)
}

// TestRestartAtTheMemoryBudget is TestStandardBacklogRefusesInsteadOfOOM
// killed as soon as sends are refused, with the largest backlog the
// budget lets in: the restart rebuilds all of it at once, and must fit in
// the same cgroup with room to spare, not only by the kernel evicting the
// server's own code from memory (which made restarts take minutes, or the
// OOM killer end them).
func TestRestartAtTheMemoryBudget(t *testing.T) {
	runMemoryCgroup(t, memShape{body: memSmallBodySize, messages: *memStandardMessages, limitMiB: *memSmallLimitMiB, senders: 16, batch: 10}, refusesThenKilled)
}

// TestBacklogLargerThanMemory offers a cgroup (-memory.limit-mib, 256 MiB)
// three times its limit in messages of 1 MB, the last 300 KB of each an
// attribute: bodies and attributes go to disk, so every one is
// acknowledged, none refused, and after a SIGKILL and a restart in the
// same cgroup every one is delivered intact.
func TestBacklogLargerThanMemory(t *testing.T) {
	runMemoryCgroup(t, memShape{body: memBodySize, attr: 300_000, messages: *memMessages, limitMiB: *memLimitMiB, senders: 4}, takesAll)
}

// memPlan is what runMemoryCgroup expects of the offer, and does before
// it kills the server.
type memPlan int

const (
	// takesAll: every message offered is taken (bodies on disk).
	takesAll memPlan = iota
	// refusesThenResumes: the messages fill the memory budget and sends
	// are refused; consumers drain half, and sends are taken again.
	refusesThenResumes
	// refusesThenKilled: the messages fill the budget, and the server is
	// killed at once, holding the most it ever holds.
	refusesThenKilled
)

// restartAnonShare bounds the anonymous memory (the heap, the engine's
// records; not the page cache, nor the executable's code) of a restart
// after sends were refused, as a share of the cgroup's limit: the state
// the server held when it refused (guarded to 70 % of the budget, counting
// its code) and a tenth for what the restore makes on the way.
const restartAnonShare = 0.80

// runMemoryCgroup is the tests above: messages of the given shape are
// offered to fifoq in a memory cgroup, as plan says.
func runMemoryCgroup(t *testing.T, shape memShape, plan memPlan) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	testenv.Long(t, "fills a memory cgroup's budget, a minute or two")
	dataDir := t.TempDir()
	if onTmpfs(dataDir) {
		// A tmpfs's pages are charged to the cgroup of the process that
		// writes them and cannot be reclaimed: the data would count against
		// the limit as if it were memory, and the test would measure that.
		unavailable(t, "the data dir %s is on a tmpfs, whose pages count as memory in the cgroup (set TMPDIR to a directory on a disk)", dataDir)
	}
	cgroupLimit := int64(shape.limitMiB) << 20
	cg := newMemoryCgroup(t, cgroupLimit)

	logs := serverLog(t)
	addr := freeAddr(t)
	proc := startWithCgroupBudget(t, cg, logs, addr, dataDir, cgroupLimit)

	client := newClient(addr)
	created, err := client.CreateQueue(context.Background(), shape.createQueue())
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	q := aws.ToString(created.QueueUrl)

	acked, refused, failure, deleted := offerMessages(t, client, q, shape)
	cg.logPeak(t, "offer", shape.limitMiB)

	// First whether the process lives: if it was killed, that explains any
	// failed send (give a process that a failed send suggests has died a
	// moment to be seen to).
	if failure != nil {
		proc.exited(2 * time.Second)
	}
	if !running(proc) {
		t.Fatalf("fifoq exited while messages were offered (%v; oom_kill count %s)", proc.err, cg.oomKillsText())
	}
	cg.requireNoOOMKill(t, "while messages were offered")
	if failure != nil {
		t.Fatalf("a send failed other than by a refusal: %v", failure)
	}
	switch plan {
	case takesAll:
		// The offer may end on its deadline on a loaded machine; what
		// was offered must all be taken, and be more than the limit.
		if refused != 0 {
			t.Fatalf("%d sends refused of %d acknowledged: with their bodies on disk, every one must be taken", refused, len(acked))
		}
		if int64(len(acked))*int64(shape.body) <= cgroupLimit {
			t.Fatalf("only %d messages were taken before the offer's deadline: not more than the memory limit", len(acked))
		}
	case refusesThenResumes:
		refusalsThenResume(t, client, q, shape, acked, deleted, refused)
	case refusesThenKilled:
		checkRefusals(t, shape, acked, deleted, refused)
	}

	// Kill it and restart it in the same cgroup: replaying what it stored
	// must fit in the limit too.
	if err := proc.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill fifoq: %v", err)
	}
	<-proc.done
	cg.resetPeak()
	stopWatch := cg.watchAnon()
	proc = startInCgroup(t, cg, logs, addr, dataDir)
	peakAnon := stopWatch()
	cg.requireNoOOMKill(t, "during recovery")
	t.Logf("peak anonymous memory of the cgroup during recovery: %.1f MiB of %d MiB", float64(peakAnon)/(1<<20), shape.limitMiB)
	if bound := int64(restartAnonShare * float64(cgroupLimit)); plan != takesAll && peakAnon > bound {
		t.Errorf("recovery took %.1f MiB of anonymous memory, more than %.0f%% of the %d MiB limit", float64(peakAnon)/(1<<20), restartAnonShare*100, shape.limitMiB)
	}

	problems := drainAndCheck(t, client, q, shape, acked, deleted)
	cg.logPeak(t, "recovery and drain", shape.limitMiB)
	if !running(proc) {
		t.Fatalf("fifoq exited during the drain after the restart (%v; oom_kill count %s)", proc.err, cg.oomKillsText())
	}
	cg.requireNoOOMKill(t, "during recovery and the drain")
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
		}
		t.Errorf("after the restart:\n  %s", strings.Join(problems, "\n  "))
	}
}

// startWithCgroupBudget starts fifoq in the memory cgroup cg, whose limit
// is cgroupLimit bytes, and checks that fifoq took that limit as its
// memory budget.
func startWithCgroupBudget(t *testing.T, cg *memCgroup, logs *os.File, addr, dataDir string, cgroupLimit int64) *fifoqProc {
	t.Helper()
	proc := startInCgroup(t, cg, logs, addr, dataDir)
	budget := logLine(proc.out.String(), "memory budget")
	if budget == "" {
		t.Fatalf("fifoq logged no line with %q at start", "memory budget")
	}
	// The budget must be the cgroup's limit.
	if want := `budget="` + memguard.HumanSize(cgroupLimit) + `"`; !strings.Contains(budget, want) {
		t.Fatalf("fifoq's budget is not its cgroup's limit of %d bytes (want %s): %s", cgroupLimit, want, budget)
	}
	t.Logf("fifoq in %s: %s", cg.dir, budget)
	return proc
}

// offerMessages offers messages of shape to the queue at q until the
// offer's deadline. Once the server first refuses, it receives and deletes
// a few while the senders go on: consumers must be able to drain a server
// that refuses sends. It returns the ids acknowledged, the number of sends
// refused, the first failure other than a refusal, and the ids deleted.
func offerMessages(t *testing.T, client *sqs.Client, q string, shape memShape) (acked map[int]bool, refused int, failure error, deleted map[int]bool) {
	t.Helper()
	ctx := context.Background()
	offer := newMemOffer(shape)
	offered := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(offered)
		offer.run(client, q, began.Add(memOfferFor))
	}()
	defer func() {
		offer.stop()
		<-offered
	}()
	deleted = map[int]bool{}
	ackedAtDrain := -1
	select {
	case <-offer.refusing:
		ids, err := receiveAndDelete(ctx, client, q, shape)
		if err != nil {
			t.Fatalf("consumer while the server refused sends: %v", err)
		}
		for _, id := range ids {
			deleted[id] = true
		}
		ackedAtDrain = offer.ackedCount()
	case <-offered:
	}
	<-offered
	acked, refused, failure = offer.result()
	t.Logf("offered messages of %d bytes (%d of them attributes; FIFO, a group each: %v) in %v: %d acknowledged, %d refused (ServiceUnavailable)",
		shape.body, shape.attr, shape.fifo, time.Since(began).Round(time.Millisecond), len(acked), refused)
	if ackedAtDrain >= 0 {
		t.Logf("a consumer received and deleted %d while sends were refused; %d sends were acknowledged after that", len(deleted), len(acked)-ackedAtDrain)
	}
	return acked, refused, failure, deleted
}

// refusalsThenResume checks the offer of runMemoryCgroup when it filled
// the budget: sends were refused, a consumer could receive and delete
// meanwhile, and once consumers drain half of what was acknowledged, the
// server takes sends again by itself (that send is added to acked).
func refusalsThenResume(t *testing.T, client *sqs.Client, q string, shape memShape, acked, deleted map[int]bool, refused int) {
	t.Helper()
	ctx := context.Background()
	checkRefusals(t, shape, acked, deleted, refused)

	// Consumers drain half of what was acknowledged: once the server's
	// memory falls, it must take sends again by itself.
	for len(deleted) < len(acked)/2 {
		ids, err := receiveAndDelete(ctx, client, q, shape)
		if err != nil {
			t.Fatalf("consumer draining half the queue: %v", err)
		}
		for _, id := range ids {
			deleted[id] = true
		}
	}
	resumed := shape.messages // an id never offered
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := client.SendMessage(ctx, shape.input(q, resumed))
		if err == nil {
			acked[resumed] = true
			break
		}
		if ferr := refusal(err); ferr != nil {
			t.Fatalf("send after half the queue was drained: %v", ferr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("sends still refused 30 s after %d of %d messages were deleted", len(deleted), len(acked))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("sends accepted again after %d of the %d acknowledged messages were deleted", len(deleted), len(acked)-1)
}

// checkRefusals checks that an offer filled the memory budget: sends were
// taken, then refused, and a consumer could receive and delete meanwhile.
func checkRefusals(t *testing.T, shape memShape, acked, deleted map[int]bool, refused int) {
	t.Helper()
	if refused == 0 {
		t.Fatalf("no send was refused with ServiceUnavailable, though %d messages were acknowledged by a budget of %d MiB", len(acked), shape.limitMiB)
	}
	if len(acked) == 0 {
		t.Fatal("no send was acknowledged: the test exercised nothing")
	}
	if len(deleted) == 0 {
		t.Fatal("no consumer received and deleted while the server refused sends")
	}
}

// unavailable ends the test when the machine cannot run it (not root, no
// memory cgroup controller, ...): it skips, except where
// FIFOQ_REQUIRE_ROOT_TESTS is set, where it fails. CI runs as root and
// sets it, so that the test cannot pass there by skipping, as TestDiskFull.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("FIFOQ_REQUIRE_ROOT_TESTS") != "" {
		t.Fatalf("%s, and FIFOQ_REQUIRE_ROOT_TESTS is set", msg)
	}
	t.Skip(msg)
}

// onTmpfs reports whether dir is on a tmpfs (or ramfs).
func onTmpfs(dir string) bool {
	const tmpfsMagic, ramfsMagic = 0x01021994, 0x858458f6
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == tmpfsMagic || st.Type == ramfsMagic
}

// memCgroup is a memory cgroup made for one test, and removed when the
// test ends.
type memCgroup struct {
	dir string // its directory in the cgroup file system
	v2  bool   // whether it is in the unified (v2) hierarchy
}

// newMemoryCgroup makes a memory cgroup limited to limit bytes, without
// swap, beside this process's: a child of its memory cgroup, or on cgroup
// v2 a sibling where the child cannot have the memory controller (see
// cgroupParent). The test ends through unavailable if it cannot.
// The cgroup is removed when the test ends, after the processes in it,
// whose cleanups are registered later and so run first.
func newMemoryCgroup(t *testing.T, limit int64) *memCgroup {
	t.Helper()
	own, ok := memguard.OwnCgroup()
	if !ok {
		unavailable(t, "no memory cgroup to put fifoq in (no cgroup file system in /proc/self/mountinfo)")
	}
	parent, v2 := own.Dir, own.V2
	if v2 {
		var err error
		if parent, err = cgroupParent(own.Mount, parent, "memory"); err != nil {
			unavailable(t, "cannot make a cgroup v2 with the memory controller: %v", err)
		}
	}
	dir, err := os.MkdirTemp(parent, "fifoq-memtest-")
	if err != nil {
		unavailable(t, "cannot make a memory cgroup (needs root): %v", err)
	}
	cg := &memCgroup{dir: dir, v2: v2}
	if err := cg.setLimit(limit); err != nil {
		_ = os.Remove(dir)
		unavailable(t, "cannot limit the memory of cgroup %s: %v", dir, err)
	}
	removeCgroupAtCleanup(t, dir)
	return cg
}

// removeCgroupAtCleanup removes the cgroup at dir when the test ends. The
// kernel may still be finishing the exit of the cgroup's last process, and
// rmdir fails with EBUSY until it has, so the removal is tried for up to
// five seconds.
func removeCgroupAtCleanup(t *testing.T, dir string) {
	t.Cleanup(func() {
		var err error
		for range 50 {
			if err = os.Remove(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("remove the test's cgroup: %v", err)
	})
}

// cgroupParent chooses where to make a v2 cgroup with the controller
// (memory, cpu), given this process's own cgroup directory. A child needs
// the controller in its parent's cgroup.subtree_control, and v2 lets a
// cgroup other than the root enable a controller there only while no
// process is in it: but this process is in its own. So the child goes into
// its own cgroup if the controller is enabled there or can be (the root),
// and otherwise beside it, into its parent, if the parent already enables
// it for its children (which is what gives this process's cgroup the
// controller). The parent's settings are not changed.
func cgroupParent(mount, own, controller string) (string, error) {
	enabled := func(dir string) bool {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		return err == nil && slices.Contains(strings.Fields(string(data)), controller)
	}
	if enabled(own) {
		return own, nil
	}
	werr := os.WriteFile(filepath.Join(own, "cgroup.subtree_control"), []byte("+"+controller), 0)
	if werr == nil {
		return own, nil
	}
	if own != filepath.Clean(mount) && enabled(filepath.Dir(own)) {
		return filepath.Dir(own), nil
	}
	return "", fmt.Errorf("enable %s in %s/cgroup.subtree_control (a cgroup with processes cannot): %v; and its parent does not enable it for its children", controller, own, werr)
}

// setLimit limits the cgroup's memory to limit bytes and its swap to none,
// so that going over the limit means reclaim or the OOM killer, not swap.
// A swap limit is set only where the kernel accounts swap.
func (cg *memCgroup) setLimit(limit int64) error {
	write := func(name, value string) error {
		if err := os.WriteFile(filepath.Join(cg.dir, name), []byte(value), 0); err != nil {
			return fmt.Errorf("write %s to %s: %w", value, name, err)
		}
		return nil
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(cg.dir, name))
		return err == nil
	}
	n := strconv.FormatInt(limit, 10)
	if cg.v2 {
		if !exists("memory.max") {
			return errors.New("no memory.max: the memory controller is not enabled")
		}
		if err := write("memory.max", n); err != nil {
			return err
		}
		if exists("memory.swap.max") {
			return write("memory.swap.max", "0")
		}
		return nil
	}
	if err := write("memory.limit_in_bytes", n); err != nil {
		return err
	}
	// memory+swap: a limit equal to the memory limit leaves no swap. It
	// must be set after the memory limit, which it may not be below; a
	// kernel without swap accounting refuses it, which is as good.
	if exists("memory.memsw.limit_in_bytes") {
		_ = write("memory.memsw.limit_in_bytes", n)
	}
	return nil
}

// oomKills returns how many processes of the cgroup the OOM killer has
// killed, from memory.oom_control (v1) or memory.events (v2); ok is false
// where the kernel does not count them.
func (cg *memCgroup) oomKills() (n int, ok bool) {
	name := "memory.oom_control"
	if cg.v2 {
		name = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(cg.dir, name))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, found := strings.CutPrefix(line, "oom_kill "); found {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// oomKillsText is the OOM kill count for a message.
func (cg *memCgroup) oomKillsText() string {
	if n, ok := cg.oomKills(); ok {
		return strconv.Itoa(n)
	}
	return "not counted by this kernel"
}

// requireNoOOMKill fails the test if the OOM killer has killed a process
// of the cgroup.
func (cg *memCgroup) requireNoOOMKill(t *testing.T, when string) {
	t.Helper()
	if n, ok := cg.oomKills(); ok && n != 0 {
		t.Fatalf("the OOM killer killed %d process(es) of fifoq's cgroup %s", n, when)
	}
}

// peakName is the file of the cgroup's highest memory use: it counts the
// page cache of the data files too, which the kernel can reclaim, so it
// may come near the limit while the server is within its budget.
func (cg *memCgroup) peakName() string {
	if cg.v2 {
		return "memory.peak"
	}
	return "memory.max_usage_in_bytes"
}

// logPeak logs the cgroup's highest memory use, where the kernel reports
// it.
func (cg *memCgroup) logPeak(t *testing.T, during string, limitMiB int) {
	data, err := os.ReadFile(filepath.Join(cg.dir, cg.peakName()))
	if err != nil {
		return
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return
	}
	t.Logf("peak memory of the cgroup (%s) during the %s: %.1f MiB of %d MiB; now %s", cg.peakName(), during, float64(n)/(1<<20), limitMiB, cg.split())
}

// split describes the cgroup's memory now as anonymous memory (the
// process's own, mostly its heap) and page cache (the data files, which
// the kernel reclaims under the limit), from memory.stat.
func (cg *memCgroup) split() string {
	anon, file, ok := cg.stat()
	if !ok {
		return "(no memory.stat)"
	}
	return fmt.Sprintf("%.1f MiB anonymous, %.1f MiB page cache", float64(anon)/(1<<20), float64(file)/(1<<20))
}

// stat returns the cgroup's anonymous memory and page cache now, in bytes,
// from memory.stat; ok is false if it cannot be read.
func (cg *memCgroup) stat() (anon, file int64, ok bool) {
	anonKey, fileKey := "rss", "cache"
	if cg.v2 {
		anonKey, fileKey = "anon", "file"
	}
	data, err := os.ReadFile(filepath.Join(cg.dir, "memory.stat"))
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, found := strings.Cut(line, " ")
		if !found {
			continue
		}
		switch k {
		case anonKey:
			anon, _ = strconv.ParseInt(v, 10, 64)
		case fileKey:
			file, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return anon, file, true
}

// watchAnon samples the cgroup's anonymous memory every millisecond until
// the returned function is called, which returns the highest seen. The
// kernel keeps a peak only of anonymous memory and page cache together
// (peakName), which the page cache of the files a restart reads fills up
// to the limit whatever the server needs; a restart's peak lasts tens of
// milliseconds, so sampling finds it.
func (cg *memCgroup) watchAnon() (stop func() int64) {
	done := make(chan struct{})
	var peak int64
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if anon, _, ok := cg.stat(); ok {
				peak = max(peak, anon)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return peak
	}
}

// resetPeak restarts the count of the cgroup's highest memory use, so that
// the peak of the recovery is seen apart from the offer's. Only v1 can:
// on v2, writing memory.peak resets it only for readers of the same open
// file.
func (cg *memCgroup) resetPeak() {
	if !cg.v2 {
		_ = os.WriteFile(filepath.Join(cg.dir, cg.peakName()), []byte("0"), 0)
	}
}

// startInCgroup starts "fifoq serve" on addr and dataDir in the cgroup,
// with no --max-memory, and waits until it answers over HTTP (startJoined:
// the budget must come from the cgroup, so neither the test's FIFOQ_
// variables, which could set one, nor a GOMEMLIMIT are passed on). The
// output goes both to logs (dumped if the test fails) and to the
// process's out.
func startInCgroup(t *testing.T, cg *memCgroup, logs *os.File, addr, dataDir string) *fifoqProc {
	t.Helper()
	return startJoined(t, cg.dir, []string{"FIFOQ_", "GOMEMLIMIT="}, nil, logs, addr, "serve", "--listen", addr, "--data-dir", dataDir)
}

// startJoined starts fifoq with args in the cgroup at dir and waits until
// it answers on addr. It cannot use launch, which starts the binary
// itself: a process moved into the cgroup once started would have run
// outside its limits first, and the test could miss its start-up. So a
// shell joins the cgroup and then execs fifoq, which keeps the shell's
// pid (the one the test signals). Its environment is the test's less the
// variables whose names begin with one of drop, plus env; its output goes
// to the process's out and, if logs is not nil, to logs too.
func startJoined(t *testing.T, dir string, drop, env []string, logs io.Writer, addr string, args ...string) *fifoqProc {
	t.Helper()
	testbin.Track(t)
	cmd := exec.Command("sh", append([]string{"-c", `echo $$ > "$1" && shift && exec "$@"`, "sh",
		filepath.Join(dir, "cgroup.procs"), binary}, args...)...)
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(drop, func(prefix string) bool { return strings.HasPrefix(kv, prefix) }) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p := &fifoqProc{cmd: cmd, out: &testenv.SyncBuffer{}, done: make(chan struct{})}
	var out io.Writer = p.out
	if logs != nil {
		out = io.MultiWriter(logs, p.out)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start fifoq in cgroup %s: %v", dir, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	p.waitReady(t, func() error {
		resp, err := http.Get("http://" + addr + "/?Action=ListQueues")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return p
}

// running reports whether the process has not exited, without waiting.
func running(p *fifoqProc) bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// logLine returns the first line of out that contains s, or "".
func logLine(out, s string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// memBody is the payload of message id, size bytes: "mem NNNNNN " and
// then letters from a generator seeded with id, so that every payload
// differs all along, can be checked byte for byte without the test keeping
// it, and does not compress.
func memBody(id, size int) string {
	b := make([]byte, size)
	n := copy(b, fmt.Sprintf("mem %06d ", id))
	x := uint64(id)*0x9e3779b97f4a7c15 | 1 // xorshift64: any state but 0
	for i := n; i < len(b); i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}

// memShape is the shape of the messages offered, and of the test.
type memShape struct {
	// body is the size of a message's payload (memBody); the last attr
	// bytes of it, if attr is more than 0, go in an attribute "pad".
	body, attr int
	// fifo makes the queue a FIFO queue, and puts each message in a group
	// of its own, with a group id and a deduplication id of memIDSize
	// bytes: state the engine keeps in memory for every message.
	fifo bool
	// messages is how many are offered at most (ids 0 to messages-1).
	messages int
	// limitMiB is the cgroup's memory limit; senders send concurrently.
	limitMiB, senders int
	// batch, if not 0, is how many messages each SendMessageBatch sends;
	// with 0 each message is a SendMessage.
	batch int
}

// createQueue is the creation of the test's queue.
func (sh memShape) createQueue() *sqs.CreateQueueInput {
	if sh.fifo {
		return &sqs.CreateQueueInput{QueueName: aws.String("memory.fifo"), Attributes: map[string]string{"FifoQueue": "true"}}
	}
	return &sqs.CreateQueueInput{QueueName: aws.String("memory")}
}

// input is the send of message id.
func (sh memShape) input(queueURL string, id int) *sqs.SendMessageInput {
	all := memBody(id, sh.body)
	in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(all[:len(all)-sh.attr])}
	if sh.attr > 0 {
		in.MessageAttributes = map[string]types.MessageAttributeValue{"pad": {DataType: aws.String("String"), StringValue: aws.String(all[len(all)-sh.attr:])}}
	}
	if sh.fifo {
		in.MessageGroupId = aws.String(memID("group", id))
		in.MessageDeduplicationId = aws.String(memID("dedup", id))
	}
	return in
}

// memID is an id of memIDSize bytes, of the given kind, for message id.
func memID(kind string, id int) string {
	s := fmt.Sprintf("%s-%06d-", kind, id)
	return s + strings.Repeat("x", memIDSize-len(s))
}

// check returns the id of a message received, and an error unless its
// body and attribute are exactly what input sent.
func (sh memShape) check(m types.Message) (int, error) {
	body := aws.ToString(m.Body)
	if len(body) < 11 || !strings.HasPrefix(body, "mem ") {
		return -1, fmt.Errorf("a body not of the test's (%d bytes, begins %q)", len(body), body[:min(len(body), 16)])
	}
	id, err := strconv.Atoi(body[4:10])
	if err != nil {
		return -1, fmt.Errorf("a body not of the test's (begins %q)", body[:min(len(body), 16)])
	}
	all := memBody(id, sh.body)
	got, want := body, all[:len(all)-sh.attr]
	if sh.attr > 0 {
		pad := m.MessageAttributes["pad"]
		got += aws.ToString(pad.StringValue)
		want = all
	}
	if got != want {
		at := 0
		for at < min(len(got), len(want)) && got[at] == want[at] {
			at++
		}
		return id, fmt.Errorf("message %d is corrupt: %d bytes of body and attribute, want %d, first difference at byte %d", id, len(got), len(want), at)
	}
	return id, nil
}

// memOffer is the offering phase: the shape's senders share out the ids
// 0..messages-1 and each offers its next id once, until memRefusalsEnough
// sends are refused. A refused message is
// not offered again: it was never acknowledged, so the server must not
// deliver it.
type memOffer struct {
	shape    memShape
	mu       sync.Mutex
	acked    map[int]bool  // ids whose send was acknowledged
	refused  int           // sends refused with ServiceUnavailable (503)
	failure  error         // the first send that failed otherwise
	refusing chan struct{} // closed at the first refusal
	once     sync.Once
	stopped  atomic.Bool
}

func newMemOffer(shape memShape) *memOffer {
	return &memOffer{shape: shape, acked: map[int]bool{}, refusing: make(chan struct{})}
}

// run offers the messages until all are offered, a send fails other than
// by a refusal, stop is called, or deadline passes. Each send runs to its
// end, so that no outcome is left unknown.
func (o *memOffer) run(client *sqs.Client, queueURL string, deadline time.Time) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range o.shape.senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := max(o.shape.batch, 1)
			for !o.stopped.Load() && time.Now().Before(deadline) {
				first := int(next.Add(int64(n)) - int64(n))
				if first >= o.shape.messages {
					return
				}
				ids := make([]int, 0, n)
				for id := first; id < min(first+n, o.shape.messages); id++ {
					ids = append(ids, id)
				}
				err := o.send(client, queueURL, ids)
				if err == nil {
					o.mu.Lock()
					for _, id := range ids {
						o.acked[id] = true
					}
					o.mu.Unlock()
					continue
				}
				if ferr := refusal(err); ferr != nil {
					o.fail(fmt.Errorf("send messages %d to %d: %w", ids[0], ids[len(ids)-1], ferr))
					return
				}
				o.mu.Lock()
				o.refused++
				if o.refused >= memRefusalsEnough {
					o.stop()
				}
				o.mu.Unlock()
				o.once.Do(func() { close(o.refusing) })
				// Back off a little, as a client of a refusing server should.
				time.Sleep(50*time.Millisecond + rand.N(150*time.Millisecond))
			}
		}()
	}
	wg.Wait()
}

// send sends the messages ids, in one SendMessage, or in one
// SendMessageBatch if the shape says so. An error is the whole request's,
// or a batch's first failed entry's: a refusal for want of memory refuses
// the whole request.
func (o *memOffer) send(client *sqs.Client, queueURL string, ids []int) error {
	if o.shape.batch == 0 {
		_, err := client.SendMessage(context.Background(), o.shape.input(queueURL, ids[0]))
		return err
	}
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL)}
	for _, id := range ids {
		m := o.shape.input(queueURL, id)
		in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(id)),
			MessageBody: m.MessageBody, MessageAttributes: m.MessageAttributes,
			MessageGroupId: m.MessageGroupId, MessageDeduplicationId: m.MessageDeduplicationId})
	}
	out, err := client.SendMessageBatch(context.Background(), in)
	if err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return fmt.Errorf("%d entries of the batch failed, the first %s with %s: %s", len(out.Failed), aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return nil
}

// refusal returns nil if err is the server's refusal for want of memory:
// ServiceUnavailable, with HTTP status 503. Anything else (a connection
// refused or reset, an EOF: the signs of a killed server) is returned,
// described.
func refusal(err error) error {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ServiceUnavailable" {
		return fmt.Errorf("%w (not a refusal: did the server die?)", err)
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		return fmt.Errorf("%w (ServiceUnavailable without an HTTP response)", err)
	}
	if re.HTTPStatusCode() != http.StatusServiceUnavailable {
		return fmt.Errorf("%w (ServiceUnavailable with HTTP status %d, want 503)", err, re.HTTPStatusCode())
	}
	return nil
}

// fail records the first failure and stops the offer.
func (o *memOffer) fail(err error) {
	o.mu.Lock()
	if o.failure == nil {
		o.failure = err
	}
	o.mu.Unlock()
	o.stop()
}

// stop makes the senders stop after their current send.
func (o *memOffer) stop() { o.stopped.Store(true) }

func (o *memOffer) ackedCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.acked)
}

// result returns the acknowledged ids, the number of refusals and the
// first failure; call it once run has returned.
func (o *memOffer) result() (acked map[int]bool, refused int, failure error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.acked, o.refused, o.failure
}

// receiveAndDelete is one consumer's turn: it receives up to 10 messages,
// checks their bodies, and deletes them, trying a few times until it gets
// some. It returns the ids deleted.
func receiveAndDelete(ctx context.Context, client *sqs.Client, queueURL string, shape memShape) ([]int, error) {
	for range 5 {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: memVisibility, MessageAttributeNames: []string{"All"}})
		if err != nil {
			return nil, fmt.Errorf("receive: %w", err)
		}
		if len(out.Messages) == 0 {
			continue
		}
		var ids []int
		for _, m := range out.Messages {
			id, err := shape.check(m)
			if err != nil {
				return nil, fmt.Errorf("receive: %w", err)
			}
			ids = append(ids, id)
		}
		if err := deleteReceived(ctx, client, queueURL, out.Messages); err != nil {
			return nil, err
		}
		return ids, nil
	}
	return nil, errors.New("5 receives got nothing, though sends had been acknowledged")
}

// deleteReceived deletes the messages one receive returned, in one
// DeleteMessageBatch: every one must be deleted.
func deleteReceived(ctx context.Context, client *sqs.Client, queueURL string, msgs []types.Message) error {
	in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL)}
	for i, m := range msgs {
		in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	out, err := client.DeleteMessageBatch(ctx, in)
	if err != nil {
		return fmt.Errorf("delete %d messages: %w", len(msgs), err)
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return fmt.Errorf("delete %d messages: %d failed, the first (%s) with %s: %s", len(msgs), len(out.Failed), aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return nil
}

// drainAndCheck receives and deletes until three receives in a row get
// nothing (or memDrainStall passes without one), and returns what is wrong: an
// acknowledged message not deleted before that was not received, a body
// not as sent, a message never acknowledged (a refused send that was kept
// after all), one deleted before that came back, or one received twice.
func drainAndCheck(t *testing.T, client *sqs.Client, queueURL string, shape memShape, acked, deleted map[int]bool) (problems []string) {
	t.Helper()
	ctx := context.Background()
	for id := range deleted {
		if !acked[id] {
			problems = append(problems, fmt.Sprintf("message %d was received while sends were refused, but its send was not acknowledged", id))
		}
	}
	got := map[int]bool{}
	// A stall ends the drain, not the clock: on a loaded machine draining
	// hundreds of 1 MB messages takes minutes.
	lastDelivery := time.Now()
	for empty := 0; empty < 3 && time.Since(lastDelivery) < memDrainStall; {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: memVisibility, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatalf("drain receive after the restart: %v", err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty, lastDelivery = 0, time.Now()
		if err := deleteReceived(ctx, client, queueURL, out.Messages); err != nil {
			t.Fatalf("drain after the restart: %v", err)
		}
		for _, m := range out.Messages {
			id, err := shape.check(m)
			switch {
			case err != nil:
				problems = append(problems, err.Error())
			case deleted[id]:
				problems = append(problems, fmt.Sprintf("resurrected: message %d was delivered again after its delete was acknowledged", id))
			case !acked[id]:
				problems = append(problems, fmt.Sprintf("unknown: message %d was delivered, but its send was refused", id))
			case got[id]:
				problems = append(problems, fmt.Sprintf("duplicate: message %d was delivered twice", id))
			}
			got[id] = true
		}
	}
	var lost []int
	for id := range acked {
		if !deleted[id] && !got[id] {
			lost = append(lost, id)
		}
	}
	slices.Sort(lost)
	for _, id := range lost {
		problems = append(problems, fmt.Sprintf("lost: message %d was acknowledged but not delivered after the restart", id))
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatalf("queue attributes after the drain: %v", err)
	}
	if v, nv := attrs.Attributes["ApproximateNumberOfMessages"], attrs.Attributes["ApproximateNumberOfMessagesNotVisible"]; v != "0" || nv != "0" {
		problems = append(problems, fmt.Sprintf("the queue still holds messages after the drain: %s visible, %s in flight", v, nv))
	}
	t.Logf("after the restart: received %d of the %d acknowledged and not deleted", len(got), len(acked)-len(deleted))
	return problems
}
