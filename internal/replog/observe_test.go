package replog

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// recordingObserver keeps what an Observer is told.
type recordingObserver struct {
	mu        sync.Mutex
	batches   []int
	durations []time.Duration
	snapshots []time.Time
	segments  []bool // fromSpare, per segment created
	diskFull  int    // writes refused for the disk
	// The body store's last report, and the bytes moved in all.
	bodyFiles           int
	bodyBytes, bodyLive int64
	bodiesMoved         int64
}

func (o *recordingObserver) BodyStore(files int, bytes, live int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bodyFiles, o.bodyBytes, o.bodyLive = files, bytes, live
}

func (o *recordingObserver) BodiesMoved(bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bodiesMoved += bytes
}

func (o *recordingObserver) DiskFull(refused int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.diskFull += refused
}

func (o *recordingObserver) SegmentCreated(fromSpare bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.segments = append(o.segments, fromSpare)
}

func (o *recordingObserver) GroupCommitted(commands int, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches = append(o.batches, commands)
	o.durations = append(o.durations, took)
}

func (o *recordingObserver) SnapshotDone(at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.snapshots = append(o.snapshots, at)
}

func (o *recordingObserver) commits() (batches []int, durations []time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]int(nil), o.batches...), append([]time.Duration(nil), o.durations...)
}

func (o *recordingObserver) snapshotCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.snapshots)
}

// TestObserverSeesEveryCommand applies commands from many goroutines at
// once, so that group commit batches them, and checks that the batch
// sizes the observer is told add up to the commands applied, each within
// the configured bound.
func TestObserverSeesEveryCommand(t *testing.T) {
	const maxBatch, senders, perSender = 16, 32, 20
	obs := &recordingObserver{}
	l, _ := openTest(t, t.TempDir(), RaftConfig{Observer: obs, MaxBatchCommands: maxBatch})
	defer l.Close()
	c := newClock()
	createFIFO(t, l, c)

	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				n := s*perSender + i
				now := c.next()
				cmd := &engine.Command{Time: now, Caller: testQueue.Account, Queue: testQueue, Entropy: uint64(now),
					Request:    &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: fmt.Sprintf("m%d", n), MessageGroupId: "g"},
					MessageIDs: []string{fmt.Sprintf("id-%d", n)}}
				if _, err := l.Apply(t.Context(), cmd); err != nil {
					t.Errorf("send %d: %v", n, err) // not Fatal: this is not the test's goroutine
					return
				}
			}
		})
	}
	wg.Wait()

	// Every Apply has returned, and the observer is told before the
	// commands of an entry are answered: nothing is still to come.
	batches, durations := obs.commits()
	total := 0
	for i, n := range batches {
		if n < 1 || n > maxBatch {
			t.Errorf("entry %d carried %d commands, want 1..%d", i, n, maxBatch)
		}
		if durations[i] <= 0 {
			t.Errorf("entry %d committed in %v", i, durations[i])
		}
		total += n
	}
	if want := 1 + senders*perSender; total != want {
		t.Fatalf("observer saw %d commands in %d entries, want %d", total, len(batches), want)
	}
}

// TestObserverSeesSegments: a new log's first segment is reported, as
// allocated (no spare can be ready for it). Segments made from spares are
// reported by the same call (internal/walfs's TestSpareBecomesNextSegment).
func TestObserverSeesSegments(t *testing.T) {
	obs := &recordingObserver{}
	l, _ := openTest(t, t.TempDir(), RaftConfig{Observer: obs})
	createFIFO(t, l, newClock())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.segments) != 1 || obs.segments[0] {
		t.Fatalf("segments reported %v, want one allocated", obs.segments)
	}
}

// TestObserverRefusedWritesNotCounted checks that a batch refused by the
// disk guard is reported as refused for the disk, not as committed, and
// that Ready says why.
func TestObserverRefusedWritesNotCounted(t *testing.T) {
	obs := &recordingObserver{}
	l, _ := openTest(t, t.TempDir(), RaftConfig{Observer: obs, MinFreeBytes: 1 << 62})
	defer l.Close()
	if err := l.Ready(); err == nil || !strings.Contains(err.Error(), "disk is almost full") {
		t.Fatalf("Ready with a full disk = %v, want the disk named", err)
	}
	c := newClock()
	_, err := l.Apply(t.Context(), createCommand(c))
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != "ServiceUnavailable" {
		t.Fatalf("Apply with a full disk = %v, want ServiceUnavailable", err)
	}
	if batches, _ := obs.commits(); len(batches) != 0 {
		t.Errorf("refused writes reported as commits: %v", batches)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.diskFull != 1 {
		t.Errorf("%d writes reported refused for the disk, want 1", obs.diskFull)
	}
}

// TestObserverSnapshots checks that a snapshot taken, and the snapshot
// restored at the next start, are both reported.
func TestObserverSnapshots(t *testing.T) {
	dir := t.TempDir()
	obs := &recordingObserver{}
	l, _ := openTest(t, dir, RaftConfig{Observer: obs})
	c := newClock()
	createFIFO(t, l, c)
	if err := l.Ready(); err != nil {
		t.Fatalf("Ready on an open log: %v", err)
	}
	if n := obs.snapshotCount(); n != 0 {
		t.Fatalf("%d snapshots reported before any was taken", n)
	}
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if n := obs.snapshotCount(); n != 1 {
		t.Fatalf("%d snapshots reported after one was taken, want 1", n)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Ready(); !errors.Is(err, ErrClosed) {
		t.Errorf("Ready after Close = %v, want ErrClosed", err)
	}

	restored := &recordingObserver{}
	l, _ = openTest(t, dir, RaftConfig{Observer: restored})
	defer l.Close()
	if n := restored.snapshotCount(); n != 1 {
		t.Fatalf("%d snapshots reported at a start from a snapshot, want 1 (the restore)", n)
	}
}

// createCommand is a CreateQueue command, for tests that look at Apply's
// error rather than its result.
func createCommand(c *clock) *engine.Command {
	now := c.next()
	return &engine.Command{Time: now, Caller: testQueue.Account, Request: &api.CreateQueueRequest{QueueName: fmt.Sprintf("q%d", now)}, Entropy: uint64(now)}
}
