// Package shards runs a cluster member's shards: the Raft groups beside
// its first one, each holding some of the cluster's queues, so that the
// queues' writes are led from several nodes instead of one.
//
// The shard map lives in the first group's replicated state (the
// engine's metadata, beside the members' identities), as records:
//
//   - "shards/N" for every shard N from 1 on: its first replicas, in the
//     --peers form "ID=HOST:PORT,..." (placement.Initial: three nodes,
//     replicas and preferred leaders spread). Set once: the nodes named
//     bootstrap the shard with exactly this list. Shard 0 is the first
//     group itself, on every member. A restore (Adopt) rewrites it to
//     the one node restored, named without an address ("ID"): that
//     node's replica exists already, and a member is reached at its
//     address in the first group's membership.
//   - "shards/N/first": the incarnations of shard N's first replicas,
//     written just before "shards/N": only those data dirs bootstrap it
//     (a member replaced since waits to be added, bootReplicas).
//   - "shards/N/want": the replicas shard N is to have now, its first
//     the node the map prefers to lead it; absent, the first replicas.
//     The first group's leader rewrites it as the cluster's voters change
//     (placement.Rebalance), and the shard's leader moves its replicas
//     there (replog's followHost).
//   - "shards/leaving/ID": member ID is being removed, and the map moves
//     its replicas to the others first (leave.go); the value is the
//     member's incarnation.
//   - "shards/queue/ACCOUNT/REGION/NAME": the shard a queue lives in, set
//     once when it is placed, and changed only by a move of the queue
//     (move.go, which adds the records of moves under way). A queue
//     without a record lives in shard 0, as every queue of a cluster did
//     before it had shards, so an upgraded cluster keeps its queues
//     where they are.
//
// The records set once are written by the first group's leader with a
// fifoq:SetMeta that sets a key only if it is absent (entry format 7): two
// nodes that place the same queue at once get the same answer, the first
// in the log, and no member routes by a map it cannot read, since format
// 7 is written only once every member reads it.
//
// A Set opens the replicas the map wants on its node, closes those the map
// moved away, places new queues, rebalances the map (on the first group's
// leader) and hands leaderships to the nodes the map prefers. Which shard
// a request goes to is the server's business (internal/server/route.go);
// what each shard does with it is the engine's, which knows nothing of
// shards.
package shards

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/placement"
	"github.com/fifoq/fifoq/internal/replog"
)

// Record keys in the first group's metadata.
const (
	shardPrefix = "shards/"
	queuePrefix = "shards/queue/"
)

// Auto is Config.Count for as many shards as the cluster has voters.
const Auto = -1

// MaxAuto bounds the shards Auto adds: every member holds a replica of
// about three in every member's count of them, and each costs an idle
// Raft group's goroutines, heap and heartbeats.
const MaxAuto = 64

// Config is what a Set opens its shards with.
type Config struct {
	// Count is how many shards are to hold the cluster's new queues,
	// beside the first group (which keeps the map, and the queues made
	// before there were shards): the first group's leader adds records
	// up to it. Less than 2 adds none, and new queues stay in the first
	// group (a node still opens the shards the map names). Auto is one
	// per voting member of the first group, up to MaxAuto, added as
	// members join (a cluster of one has none).
	Count int
	// Dir is the node's data dir: shard N lives in Dir/shards/N.
	Dir string
	// Shard is the configuration every shard is opened with; its Dir and
	// Shard are set per shard.
	Shard replog.RaftConfig
	// Logger receives the Set's log lines (slog.Default() if nil).
	Logger *slog.Logger
	// Observe, if not nil, gives shard id's log its observer (in place of
	// Shard.Observer), and Forget is told when its replica on this node
	// is closed, as the map moved it away.
	Observe func(id uint32) replog.Observer
	Forget  func(id uint32)
	// Moved, if not nil, is told of every move this node drove to its
	// end: "moved", or "abandoned" (the queue stayed where it was).
	Moved func(result string)
	// QueueBalance is how often the first group's leader evens out the
	// queues the shards hold, moving one at a time (balanceQueues):
	// DefaultQueueBalance if 0, never if negative.
	QueueBalance time.Duration
	// Spread is how often the first group's leader spreads
	// high-throughput queues over partitions and gathers those no longer
	// in the mode (spreadQueues): every spreadEvery if 0, never if
	// negative (a test that splits queues by hand).
	Spread time.Duration
	// SplitRate is the commands a second above which a partition of a
	// high-throughput FIFO queue splits in two (spread.go):
	// DefaultSplitRate if 0, never if negative.
	SplitRate float64
	// MergeIdle is how long a high-throughput queue split by load must
	// stay quiet before the partitions its load made merge back
	// (mergeIdle, spread.go): DefaultMergeIdle if 0, never if negative.
	MergeIdle time.Duration
}

// Set is a node's shards beside its first group.
type Set struct {
	cfg  Config
	host *replog.Raft

	mu     sync.RWMutex
	open   map[uint32]*replog.Raft
	closed bool
	// shared is the log the replicas share, opened with the first of
	// them (openNamed) and closed after the last (Close); sharedMu guards
	// it, apart from mu, so that opening it (reading the whole log) holds
	// up no lookup of a shard.
	sharedMu sync.Mutex
	shared   *replog.SharedLog
	// held is the node's record of the replicas it made and the shared
	// log they write to, by which a lost one is caught (held.go).
	held *held
	// unwanted: since when each open replica is no longer wanted here;
	// askedLeader: when each last asked its shard's leader whether its
	// removal committed, leaderSaid what it last answered (not yet acted
	// on), and asking which asks are under way (stillMember).
	unwanted    map[uint32]time.Time
	askedLeader map[uint32]time.Time
	leaderSaid  map[uint32]leaderAnswer
	asking      map[uint32]bool
	running     atomic.Bool // some shard is open

	// memberAddrs are the members' Raft addresses (refreshAddrs).
	memberAddrs atomic.Pointer[map[string]string]

	// placed caches the records found (api.QueueKey → cachedRecord). A
	// record changes only when its queue moves, splits or merges, which
	// flips the map's epoch (Epoch): a record cached under another epoch
	// is read again.
	placed sync.Map
	// layouts caches the layouts of split queues read (partitions.go),
	// as placed caches records: api.QueueKey → cachedLayout.
	layouts sync.Map

	// steps carries moves out (SetSteps); moveMu keeps this node to one
	// move at a time, and resuming says a resumeMoves runs.
	steps    atomic.Pointer[Steps]
	moveMu   sync.Mutex
	resuming atomic.Bool
	// placeMu keeps this node to one placement at a time: each counts
	// the shards' queues after the one before it is in the map, so that
	// queues created together spread rather than all going to the
	// emptiest shard of the moment.
	placeMu sync.Mutex
	// partsMu keeps this node to one split or merge at a time
	// (partitions.go); recordMu makes the check that a partition neither
	// moves nor splits already, and the record that it now does, one
	// step, so that a partition never has both records.
	partsMu  sync.Mutex
	recordMu sync.Mutex
	// extendSince is when this node first tried to add shards to the map
	// (extend, in the follow loop only).
	extendSince time.Time
	// unmovable: until when the balancer passes over each queue that
	// would not move; lastQueueBalance: when it last looked. Both only
	// touched by the goroutine resuming moves, as is lastCommands.
	unmovable        map[api.QueueKey]time.Time
	lastQueueBalance time.Time
	// lastCommands: the commands each queue's replica had applied at the
	// last round of balancing, and when that was (queueLoads);
	// loadCandidate: the move by load that round asked for, made only if
	// the next asks for it too; movedForLoad: when each queue was last
	// moved by load. All touched by that goroutine only.
	lastCommands   map[shardQueue]uint64
	lastReading    time.Time
	loadCandidate  placement.QueueMove
	movedForLoad   map[api.QueueKey]time.Time
	lastFenceSweep time.Time
	// unspreadable: until when spreadQueues passes over each queue whose
	// split, merge or move was refused; hotParts: how many rounds of
	// balancing in a row each partition was busier than the split rate;
	// lastSpread: when spreadQueues last looked. All touched by that
	// goroutine only (spread.go).
	unspreadable map[api.QueueKey]time.Time
	hotParts     map[api.QueueKey]int
	lastSpread   time.Time
	// quietSince: since when each queue with more partitions than the
	// spread's has been quiet, by the rounds of balancing (mergeIdle;
	// touched by that goroutine only).
	quietSince map[api.QueueKey]time.Time
	// notSplitNoted: when noteNotSplittable last logged each queue
	// (touched by that goroutine only).
	notSplitNoted map[api.QueueKey]time.Time
	// moved: when each queue last moved, by whatever asked (the balancer,
	// a redrive's colocation, an operator); written by Move, read by the
	// balancer, which leaves such a queue where it went (movedMu).
	movedMu sync.Mutex
	moved   map[api.QueueKey]time.Time
	// keptWhole: until when the spread leaves each queue MakeWhole
	// gathered in one partition (under movedMu, as moved).
	keptWhole map[api.QueueKey]time.Time
	// shardRates: each shard's commands applied a second, as the last
	// round of balancing read them, for Place (written by that goroutine,
	// read by placements).
	shardRates atomic.Pointer[shardRates]
	// staleFences: since when each fence without its move's record was
	// seen (liftStaleFences; touched only by the goroutine resuming
	// moves).
	staleFences map[fenceRef]time.Time
	// strays: since when each unfenced copy of a queue that the map puts
	// in another shard was seen (dropStrays; touched only by the
	// goroutine resuming moves).
	strays map[shardQueue]time.Time

	// halted is closed once a storage fault or a fence stopped one of the
	// node's replicas (fault says which and why); unwatch stops the watch
	// of a replica closed as the map moved it away.
	halted   chan struct{}
	haltOnce sync.Once
	fault    error
	unwatch  map[uint32]chan struct{}

	quit chan struct{}
	wg   sync.WaitGroup
}

// Open opens the shards the map in host's state names, and keeps opening
// those it comes to name; on host's leader it writes the map's records up
// to cfg.Count shards. host must be a cluster member, open until Close.
func Open(host *replog.Raft, cfg Config) (*Set, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Set{cfg: cfg, host: host, open: map[uint32]*replog.Raft{}, unwanted: map[uint32]time.Time{}, askedLeader: map[uint32]time.Time{},
		leaderSaid: map[uint32]leaderAnswer{}, asking: map[uint32]bool{}, quit: make(chan struct{}),
		halted: make(chan struct{}), unwatch: map[uint32]chan struct{}{}, unmovable: map[api.QueueKey]time.Time{},
		movedForLoad:     map[api.QueueKey]time.Time{},
		unspreadable:     map[api.QueueKey]time.Time{},
		notSplitNoted:    map[api.QueueKey]time.Time{},
		hotParts:         map[api.QueueKey]int{},
		quietSince:       map[api.QueueKey]time.Time{},
		moved:            map[api.QueueKey]time.Time{},
		keptWhole:        map[api.QueueKey]time.Time{},
		lastQueueBalance: time.Now(), lastSpread: time.Now()}
	h, err := loadHeld(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s.held = h
	s.refreshAddrs()
	if err := s.openNamed(); err != nil {
		s.Close()
		return nil, err
	}
	s.wg.Add(2)
	go s.watchHalt(0, host, nil)
	go s.follow()
	return s, nil
}

// follow opens the shards the map comes to name, and on the first
// group's leader writes the records the configured count still lacks.
func (s *Set) follow() {
	defer s.wg.Done()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastBalance := time.Now()
	for {
		s.refreshAddrs()
		if s.host.Leading() && s.resuming.CompareAndSwap(false, true) {
			// Moves take seconds: they go on beside this loop.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer s.resuming.Store(false)
				s.resumeMoves()
				s.resumeSplits()
				if st := s.steps.Load(); st != nil && time.Since(s.lastFenceSweep) >= fenceSweepEvery {
					s.lastFenceSweep = time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					s.dropStrays(ctx, *st, s.liftStaleFences(ctx, *st))
					cancel()
				}
				every := cmp.Or(s.cfg.QueueBalance, testQueueBalance, DefaultQueueBalance)
				if st := s.steps.Load(); st != nil && every > 0 && time.Since(s.lastQueueBalance) >= every {
					s.lastQueueBalance = time.Now()
					s.balanceQueues(*st)
				}
				if st := s.steps.Load(); st != nil && s.cfg.Spread >= 0 && time.Since(s.lastSpread) >= cmp.Or(s.cfg.Spread, spreadEvery) {
					s.lastSpread = time.Now()
					s.spreadQueues(*st)
				}
			}()
		}
		if s.host.Leading() {
			if err := s.extend(); err != nil {
				s.cfg.Logger.Warn("shards: could not add the configured shards to the map", "want", s.cfg.Count, "err", err)
			}
			if err := s.rebalance(); err != nil {
				s.cfg.Logger.Warn("shards: could not rebalance the shards' replicas", "err", err)
			}
		}
		if err := s.openNamed(); err != nil {
			s.cfg.Logger.Error("shards: could not open a shard the map names", "err", err)
		}
		s.closeUnwanted()
		if time.Since(lastBalance) >= balanceEvery {
			lastBalance = time.Now()
			s.balanceLeaders()
		}
		select {
		case <-tick.C:
		case <-s.quit:
			return
		}
	}
}

// named returns the shards the map names, with their first replicas.
func (s *Set) named() map[uint32][]replog.Peer {
	out := map[uint32][]replog.Peer{}
	s.host.Read(func(e *engine.Engine) {
		for _, k := range e.MetaKeys(shardPrefix) {
			id, ok := shardKeyID(k)
			if !ok {
				continue
			}
			peers, err := s.parseRecord(e.Meta(k))
			if err != nil || len(peers) == 0 {
				continue
			}
			out[id] = peers
		}
	})
	return out
}

// parseRecord reads a record of replicas ("ID=HOST:PORT,..."; an item of
// a restored map may be a bare "ID"), each at its member's address in the
// first group's membership as of the last look (refreshAddrs) where the
// node is a member.
func (s *Set) parseRecord(rec string) ([]replog.Peer, error) {
	var out []replog.Peer
	for _, item := range strings.Split(rec, ",") {
		item = strings.TrimSpace(item)
		if item != "" && !strings.Contains(item, "=") {
			if err := replog.CheckNodeID(item); err != nil {
				return nil, err
			}
			out = append(out, replog.Peer{ID: item})
			continue
		}
		peers, err := replog.ParsePeers(item)
		if err != nil {
			return nil, err
		}
		out = append(out, peers...)
	}
	addr := s.memberAddrs.Load()
	for i, p := range out {
		if addr != nil && (*addr)[p.ID] != "" {
			out[i].Addr = (*addr)[p.ID]
		}
		if out[i].Addr == "" {
			return nil, fmt.Errorf("replica %s: no address, and not a member", p.ID)
		}
	}
	return out, nil
}

// wantKey is the record of the replicas shard id is to have now.
func wantKey(id uint32) string { return shardPrefix + strconv.FormatUint(uint64(id), 10) + "/want" }

// Replicas returns the replicas the map wants shard id to have now (its
// first ones until the map changed them), each at its member's address
// as of the last look (refreshAddrs, twice a second); nil for a shard
// the map does not name.
func (s *Set) Replicas(id uint32) []replog.Peer {
	var rec string
	s.host.Read(func(e *engine.Engine) {
		if rec = e.Meta(wantKey(id)); rec == "" {
			rec = e.Meta(shardPrefix + strconv.FormatUint(uint64(id), 10))
		}
	})
	peers, err := s.parseRecord(rec)
	if err != nil {
		return nil
	}
	return peers
}

// refreshAddrs takes the members' Raft addresses from the first group's
// membership, for Replicas: it is asked on every request for a shard this
// node holds no replica of, and the membership is read through Raft's own
// loop, so it is read here, once a tick, instead.
func (s *Set) refreshAddrs() {
	members, err := s.host.Members()
	if err != nil {
		return
	}
	addr := make(map[string]string, len(members))
	for _, m := range members {
		addr[m.ID] = m.Addr
	}
	s.memberAddrs.Store(&addr)
}

// Named returns the numbers of the shards the map names, ascending,
// whether or not this node holds a replica of them.
func (s *Set) Named() []uint32 {
	var out []uint32
	for id := range s.named() {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// wantedHere reports whether the map wants a replica of shard id on this
// node.
func (s *Set) wantedHere(id uint32) bool {
	self := s.host.NodeID()
	return slices.ContainsFunc(s.Replicas(id), func(p replog.Peer) bool { return p.ID == self })
}

// shardKeyID reads "shards/N".
func shardKeyID(key string) (uint32, bool) {
	rest, ok := strings.CutPrefix(key, shardPrefix)
	if !ok || strings.Contains(rest, "/") {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 32)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != rest {
		return 0, false
	}
	return uint32(n), true
}

// openNamed opens every shard the map wants a replica of on this node
// that is not open yet.
func (s *Set) openNamed() error {
	select {
	case <-s.halted:
		return nil // the node stops: open nothing more
	default:
	}
	named := s.named()
	if len(named) > 0 {
		// Shards are never removed from the map: from now on requests are
		// routed by it, whether this node holds a replica or not.
		s.running.Store(true)
	}
	for id, replicas := range named {
		s.mu.RLock()
		_, open := s.open[id]
		closed := s.closed
		s.mu.RUnlock()
		if open || closed || !s.wantedHere(id) {
			continue
		}
		dir := filepath.Join(s.cfg.Dir, "shards", strconv.FormatUint(uint64(id), 10))
		present, err := replog.ReplicaHoldsLog(dir)
		if err != nil {
			return fmt.Errorf("shard %d: %w", id, err)
		}
		if s.held.lostShard(id, present) {
			return s.halt(lostMessage(s.host.NodeID(), fmt.Sprintf("its replica of shard %d: %s holds no log", id, dir)))
		}
		shared, err := s.sharedLog()
		if err != nil {
			if errors.Is(err, errReplicaLost) {
				return s.halt(err)
			}
			return err
		}
		cfg := s.cfg.Shard
		cfg.Dir = dir
		cfg.Shard = &replog.ShardConfig{ID: id, Host: s.host, Replicas: s.bootReplicas(id, replicas), Want: func() []replog.Peer { return s.Replicas(id) }, Log: shared}
		if s.cfg.Observe != nil {
			cfg.Observer = s.cfg.Observe(id)
		}
		l, err := replog.OpenRaft(cfg)
		if err != nil {
			return fmt.Errorf("shard %d: %w", id, err)
		}
		if err := s.held.add(id); err != nil {
			l.Close()
			return fmt.Errorf("shard %d: %w", id, err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			l.Close()
			return nil
		}
		s.open[id] = l
		delete(s.unwanted, id)
		unwatch := make(chan struct{})
		s.unwatch[id] = unwatch
		s.mu.Unlock()
		s.wg.Add(1)
		go s.watchHalt(id, l, unwatch)
		s.cfg.Logger.Info("shards: opened a shard", "shard", id, "dir", cfg.Dir)
	}
	return nil
}

// sharedLog opens the node's shared log (Dir/shards/log;
// replog.SharedLog), if it is not open yet, and drops from it the groups
// of replicas whose dirs are gone; nil while the cluster's format is older
// than 9.
func (s *Set) sharedLog() (*replog.SharedLog, error) {
	s.sharedMu.Lock()
	defer s.sharedMu.Unlock()
	if s.shared != nil || !s.host.WritesSharedLog() {
		// Until every member reads format 9, a new replica gets a log of
		// its own, which the fifoq before opens too.
		return s.shared, nil
	}
	dir := filepath.Join(s.cfg.Dir, "shards")
	cfg := s.cfg.Shard
	if s.cfg.Observe != nil {
		// The shared log tells its observer of its segments alone, which
		// count for the node, as the first group's do.
		cfg.Observer = s.cfg.Observe(0)
	}
	shared, err := replog.OpenSharedLog(filepath.Join(dir, "log"), cfg)
	if err != nil {
		return nil, err
	}
	if want := s.held.logID(); want != "" && shared.ID() != want {
		got := shared.ID()
		shared.Close()
		if got == "" {
			got = "none: it was made anew"
		}
		return nil, lostMessage(s.host.NodeID(), fmt.Sprintf("the shared log of its shard replicas: %s is not the log they wrote to (its id is %s, theirs %s)", filepath.Join(dir, "log"), got, want))
	}
	id, err := shared.AssignID()
	if err == nil {
		err = s.held.setLog(id)
	}
	if err != nil {
		shared.Close()
		return nil, fmt.Errorf("the shared log: %w", err)
	}
	if err := shared.Prune(dir); err != nil {
		shared.Close()
		return nil, fmt.Errorf("the shared log: %w", err)
	}
	s.shared = shared
	return shared, nil
}

// sharedLogWrites returns how many writes (each one fsync) the node's
// shared log has made since it opened: 0 before any replica opened.
func (s *Set) sharedLogWrites() uint64 {
	s.sharedMu.Lock()
	defer s.sharedMu.Unlock()
	if s.shared == nil {
		return 0
	}
	return s.shared.Writes()
}

// unwantedWarn is how long a replica the map no longer wants here may
// stay in its shard's membership before this node says so: its shard's
// leader removes it within seconds, unless the shard has no leader.
const unwantedWarn = time.Minute

// closeUnwanted closes the replicas the map no longer wants on this node
// once their shard has removed them: never before, as a replica still in
// its group's membership may be needed for its quorum (its replacement
// may not have caught up, or the group may have lost another replica).
// The data dir of the shard stays, should the map want a replica here
// again: it then catches up from where it was.
func (s *Set) closeUnwanted() {
	for _, id := range s.IDs() {
		if s.wantedHere(id) {
			s.mu.Lock()
			delete(s.unwanted, id)
			delete(s.leaderSaid, id)
			s.mu.Unlock()
			continue
		}
		l, ok := s.Shard(id)
		if !ok {
			continue
		}
		s.mu.Lock()
		since, seen := s.unwanted[id]
		if !seen {
			since = time.Now()
			s.unwanted[id] = since
		}
		s.mu.Unlock()
		if s.stillMember(id, l) {
			if time.Since(since) > unwantedWarn {
				s.cfg.Logger.Warn("shards: the map moved a replica away from this node, and its shard has not removed it yet", "shard", id, "since", since)
				s.mu.Lock()
				s.unwanted[id] = time.Now() // say it once a minute
				s.mu.Unlock()
			}
			continue
		}
		s.mu.Lock()
		delete(s.open, id)
		delete(s.unwanted, id)
		close(s.unwatch[id])
		delete(s.unwatch, id)
		s.mu.Unlock()
		if err := l.Close(); err != nil {
			s.cfg.Logger.Warn("shards: closing a replica no longer wanted here", "shard", id, "err", err)
		}
		if err := s.held.remove(id); err != nil {
			s.cfg.Logger.Warn("shards: could not forget a replica its shard removed", "shard", id, "err", err)
		}
		if s.cfg.Forget != nil {
			s.cfg.Forget(id)
		}
		s.cfg.Logger.Info("shards: closed a replica the map moved away", "shard", id)
	}
}

// askLeaderEvery is how often a replica the map moved away, sent its
// removal but not told that it committed, asks its shard's leader, and
// how long an answer is believed.
const askLeaderEvery = 2 * time.Second

// leaderAnswer is what a shard's leader answered a replica the map moved
// away: whether the replica is out of the committed membership.
type leaderAnswer struct {
	out bool
	at  time.Time
}

// stillMember says whether this node's replica l of shard id, which the
// map moved away, is still in its shard's membership as committed. A
// leader knows. A follower is sent its own removal once, and the leader
// stops replicating to it then: it is never told that the removal
// committed, and a follower cut off at that moment never even learns of
// the removal, its latest membership still counting it. So a follower
// asks the shard's leader (at most every askLeaderEvery), whatever its
// own membership says, and believes an answer only as new as the
// membership it has seen committed itself: a replica that calls itself
// leader may lag (deposed a moment ago, or elected and not yet caught
// up), and a membership from before this replica was added would close a
// voter. The ask runs beside the follow loop (askLeader), which acts on
// its answer at its next turn: a leader cut off takes the ask's whole
// timeout, which the loop must not wait out once per replica.
func (s *Set) stillMember(id uint32, l *replog.Raft) bool {
	if !l.IsMember() {
		return false
	}
	st := s.steps.Load()
	if l.Leading() || st == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.leaderSaid[id]; ok {
		delete(s.leaderSaid, id)
		if a.out && time.Since(a.at) < askLeaderEvery {
			return false
		}
	}
	if !s.asking[id] && time.Since(s.askedLeader[id]) >= askLeaderEvery {
		s.asking[id], s.askedLeader[id] = true, time.Now()
		s.wg.Add(1)
		go s.askLeader(id, l, *st)
	}
	return true
}

// askLeader asks shard id's leader for its committed membership, for
// stillMember, and keeps whether it leaves this node's replica l out.
func (s *Set) askLeader(id uint32, l *replog.Raft, st Steps) {
	defer s.wg.Done()
	ctx, cancel := s.untilQuit(askLeaderEvery)
	defer cancel()
	members, index, ok := st.Members(ctx, id)
	_, mine, known := l.CommittedMembersAt()
	self := s.host.NodeID()
	out := ok && (!known || index >= mine) && !slices.ContainsFunc(members, func(m replog.Member) bool { return m.ID == self })
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.asking, id)
	s.leaderSaid[id] = leaderAnswer{out: out, at: time.Now()}
}

// extend writes the records of the shards up to the configured count
// that the map lacks, their replicas where placement.Initial puts them:
// ReplicaCount of the first group's voters each, as many replicas and as
// many preferred leaders (a shard's first replica) on every node to
// within one. Shard 0, the first group, is on every member.
func (s *Set) extend() error {
	if (s.cfg.Count < 2 && s.cfg.Count != Auto) || !s.host.WritesShardMap() {
		// Until every member reads the map's format, there is none.
		return nil
	}
	have := s.named()
	if s.cfg.Count != Auto && len(have) >= s.cfg.Count {
		return nil
	}
	voters, addr, err := s.voters()
	if err != nil {
		return err
	}
	count := s.cfg.Count
	if count == Auto {
		count = min(len(voters), MaxAuto)
	}
	if count < 2 || len(have) >= count {
		return nil
	}
	// The first group is placed too, as shard 0, so that the nodes
	// preferred to lead shards are spread around it; it stays on every
	// member whatever the map says of it.
	m, err := placement.Initial(voters, count+1)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	incarnations := map[placement.NodeID]string{placement.NodeID(s.host.NodeID()): s.host.Incarnation()}
	if members, err := s.host.Members(); err == nil {
		for _, m := range members {
			if m.Incarnation != "" {
				incarnations[placement.NodeID(m.ID)] = m.Incarnation
			}
		}
	}
	if s.extendSince.IsZero() {
		s.extendSince = time.Now()
	}
	for _, sh := range m.Shards[1:] {
		id := uint32(sh.ID)
		if _, ok := have[id]; ok {
			continue
		}
		// The incarnations first, so that a node that reads the shard's
		// record reads them too (bootReplicas). The leader learns its
		// members' within a second of their hellos: it waits for them a
		// while (a member down at the start has none to give), then
		// makes the shard without.
		first := make([]string, len(sh.Replicas))
		for i, n := range sh.Replicas {
			if incarnations[n] == "" && time.Since(s.extendSince) < incarnationWait {
				return nil
			}
			first[i] = string(n) + "=" + incarnations[n]
		}
		if err := s.setOnce(ctx, firstKey(id), strings.Join(first, ",")); err != nil {
			return err
		}
		if err := s.setOnce(ctx, shardPrefix+strconv.FormatUint(uint64(id), 10), peerList(sh.Replicas, addr)); err != nil {
			return err
		}
	}
	return nil
}

// incarnationWait bounds how long extend waits to learn the incarnations
// of a new shard's first replicas before it makes the shard without them.
const incarnationWait = 30 * time.Second

// firstKey is the record of the incarnations of shard id's first
// replicas, "ID=INCARNATION,..." (an incarnation unknown is empty),
// written with the shard's record.
func firstKey(id uint32) string { return shardPrefix + strconv.FormatUint(uint64(id), 10) + "/first" }

// bootReplicas returns the first replicas of shard id this node opens its
// replica with (replicas, from the map): a replica with no state
// bootstraps the shard with them if this node is among them. Only the
// data dir that was among them may: a member whose data dir was replaced
// since (a new incarnation, rejoined under the same id) and whom the map
// gives a replica of the shard again must wait to be added, as any new
// replica does, or it would start the shard anew beside the one running,
// with a membership long gone, and refuse the votes of the replicas it
// does not know. A shard made before its first replicas' incarnations were
// recorded is opened as before.
func (s *Set) bootReplicas(id uint32, replicas []replog.Peer) []replog.Peer {
	var rec string
	s.host.Read(func(e *engine.Engine) { rec = e.Meta(firstKey(id)) })
	self, mine := s.host.NodeID(), s.host.Incarnation()
	for _, item := range strings.Split(rec, ",") {
		node, inc, _ := strings.Cut(item, "=")
		if node == self && inc != "" && inc != mine {
			return slices.DeleteFunc(slices.Clone(replicas), func(p replog.Peer) bool { return p.ID == self })
		}
	}
	return replicas
}

// voters returns the first group's voters that may hold replicas (all
// but those leaving), and the addresses of all.
func (s *Set) voters() ([]placement.NodeID, map[placement.NodeID]string, error) {
	members, err := s.host.Members()
	if err != nil {
		return nil, nil, err
	}
	var voters []placement.NodeID
	addr := map[placement.NodeID]string{}
	for _, m := range members {
		if m.Voter {
			voters = append(voters, placement.NodeID(m.ID))
			addr[placement.NodeID(m.ID)] = m.Addr
		}
	}
	if len(voters) == 0 {
		return nil, nil, errors.New("no voters")
	}
	// A member leaving (leave.go) is given no replica, and its own are
	// moved to the others.
	return withoutLeaving(voters, s.leaving(members)), addr, nil
}

// peerList writes nodes in the --peers form.
func peerList(nodes []placement.NodeID, addr map[placement.NodeID]string) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = string(n) + "=" + addr[n]
	}
	return strings.Join(parts, ",")
}

// rebalance, on the first group's leader, brings the replicas the map
// wants to the cluster's voters as they are now (placement.Rebalance: a
// departed node's replicas replaced, a joining node given its share) and
// writes each shard's that changed. Each shard's leader then moves its
// replicas there (replog's matchWanted), one change at a time.
func (s *Set) rebalance() error {
	ids := s.Named()
	if len(ids) == 0 || !s.host.WritesShardMap() {
		return nil
	}
	voters, addr, err := s.voters()
	if err != nil {
		return err
	}
	// placement numbers a map's shards from 0: shard ids[i] is its i.
	m := placement.Map{}
	for i, id := range ids {
		var reps []placement.NodeID
		for _, p := range s.Replicas(id) {
			reps = append(reps, placement.NodeID(p.ID))
			if _, ok := addr[placement.NodeID(p.ID)]; !ok {
				addr[placement.NodeID(p.ID)] = p.Addr
			}
		}
		m.Shards = append(m.Shards, placement.Shard{ID: placement.ShardID(i), Replicas: reps})
	}
	moves, next, err := placement.Rebalance(m, voters)
	if err != nil || len(moves) == 0 {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, id := range ids {
		if slices.Equal(m.Shards[i].Replicas, next.Shards[i].Replicas) {
			continue
		}
		want := peerList(next.Shards[i].Replicas, addr)
		if _, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: wantKey(id), Value: want}}); err != nil {
			return err
		}
		s.cfg.Logger.Info("shards: the map moves a shard's replicas", "shard", id, "replicas", want)
	}
	return nil
}

// balanceEvery is how often a node looks whether it leads a group whose
// leader the map wants elsewhere: seldom enough that an election's outcome
// settles first, often enough that a cluster is balanced within seconds
// of a node's start.
const balanceEvery = 5 * time.Second

// PreferredLeaders returns where the map wants each group's leader: a
// shard's first wanted replica (placement spreads them over the nodes),
// and for shard 0, which is on every member, the lowest voter that is
// the first replica of no shard, if any. A cluster without shards has no
// preference.
func (s *Set) PreferredLeaders() map[uint32]string {
	prefs := map[uint32]string{}
	named := s.Named()
	if len(named) == 0 {
		// A cluster without shards keeps its leader where it is.
		return prefs
	}
	taken := map[string]bool{}
	for _, id := range named {
		if r := s.Replicas(id); len(r) > 0 {
			prefs[id] = r[0].ID
			taken[r[0].ID] = true
		}
	}
	if members, err := s.host.Members(); err == nil {
		leaving := s.leaving(members)
		for _, m := range members { // sorted by id
			if m.Voter && !taken[m.ID] && !leaving[m.ID] {
				prefs[0] = m.ID
				break
			}
		}
	}
	return prefs
}

// balanceLeaders hands the leadership of a group this node leads to the
// node the map wants it on (preferredLeaders), if that node is a voter of
// the group: a group's writes are its leader's work, and the map spreads
// its preferred leaders over the nodes, so this spreads the cluster's
// load. A preference is a fixed point, where comparing counts of leaders
// as each node sees them would hand leaderships back and forth. One
// transfer a round; a preferred node that is down, or that will not lead
// (its clock is off), keeps the leadership where it is.
func (s *Set) balanceLeaders() {
	self := s.host.NodeID()
	prefs := s.PreferredLeaders()
	groups := map[uint32]*replog.Raft{0: s.host}
	for _, id := range s.IDs() {
		if l, ok := s.Shard(id); ok {
			groups[id] = l
		}
	}
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		g, want := groups[id], prefs[id]
		if want == "" || want == self || !g.Leading() {
			continue
		}
		members, err := g.Members()
		if err != nil || !slices.ContainsFunc(members, func(m replog.Member) bool { return m.ID == want && m.Voter }) {
			continue
		}
		if err := g.HandLeadershipTo(want, 2*time.Second); err != nil {
			s.cfg.Logger.Debug("shards: could not hand a group's leadership to the node the map prefers", "shard", id, "to", want, "err", err)
			continue
		}
		s.cfg.Logger.Info("shards: handed a group's leadership to the node the map prefers", "shard", id, "to", want)
		return
	}
}

// setOnce sets key to value in the first group's state unless it has a
// value already.
func (s *Set) setOnce(ctx context.Context, key, value string) error {
	_, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: key, Value: value, IfAbsent: true}})
	return err
}

// queueKey is the record of q's shard (of a partition's, for a partition
// of a split queue: recordName).
func queueKey(q api.QueueKey) string { return queuePrefix + recordName(q) }

// Of returns the shard q lives in by this node's copy of the map: 0 (the
// first group) for a queue it has no record of. The copy may lag the
// first group's leader by a moment; the server confirms a queue it does
// not find there with the leader. A record cached here is used only
// while the map's epoch is the one it was read with (a move flips a
// record and the epoch together: move.go).
func (s *Set) Of(q api.QueueKey) uint32 {
	epoch := s.Epoch()
	if v, ok := s.placed.Load(q); ok {
		if c := v.(cachedRecord); c.epoch == epoch {
			return c.shard
		}
	}
	var rec, at string
	s.host.Read(func(e *engine.Engine) { rec, at = e.Meta(queueKey(q)), e.Meta(epochKey) })
	n, err := strconv.ParseUint(rec, 10, 32)
	if err != nil {
		return 0
	}
	s.placed.Store(q, cachedRecord{shard: uint32(n), epoch: at})
	return uint32(n)
}

// cachedRecord is a queue's record as Of read it, with the map's epoch
// then.
type cachedRecord struct {
	shard uint32
	epoch string
}

// Place returns the shard the new queue q lives in, placing it if it has
// no shard yet: beside near if near is not nil and exists (a queue's
// dead-letter queue, which its redrive moves messages to within one
// engine), else in a shard holding the fewest queues, the one origin (the
// node the creation arrived at; "" if unknown) is preferred to lead if it
// is among them (placement.QueueShard). Only the first group's leader can
// place; the record is written before the queue is created, so a queue is
// never in two shards. A near that is split is gathered into one
// partition first (MakeWhole): a split queue cannot be a dead-letter
// queue. Placements on one node run one at a time (the
// server asks them all of the first group's leader).
func (s *Set) Place(ctx context.Context, q api.QueueKey, near *api.QueueKey, origin string) (uint32, error) {
	if id := s.Of(q); id != 0 {
		return id, nil
	}
	if near != nil && strings.HasSuffix(q.Name, ".fifo") && s.IsSplit(*near) {
		// The queue's dead-letter queue, which a split queue cannot
		// be; gathered before the placement, which waits on none. (A
		// standard queue's is refused anyway: a split queue is FIFO.)
		if err := s.MakeWhole(ctx, *near); err != nil {
			return 0, api.ErrServiceUnavailable("The dead-letter queue %s could not be gathered into one partition yet (%v); retry.", near.Name, err)
		}
	}
	s.placeMu.Lock()
	defer s.placeMu.Unlock()
	ids := s.Named()
	if len(ids) == 0 || s.inFirstGroup(q) {
		// A queue of shard 0 (one made before the cluster had shards)
		// stays there.
		return 0, nil
	}
	var target uint32
	switch {
	case near != nil && s.Of(*near) != 0:
		target = s.Of(*near)
	case near != nil && s.inFirstGroup(*near):
		target = 0
	default:
		target = s.leastLoaded(ids, origin)
	}
	if err := s.setOnce(ctx, queueKey(q), strconv.FormatUint(uint64(target), 10)); err != nil {
		return 0, err
	}
	return s.Of(q), nil
}

// inFirstGroup reports whether q exists in shard 0.
func (s *Set) inFirstGroup(q api.QueueKey) (ok bool) {
	s.host.Read(func(e *engine.Engine) { _, ok = e.QueuePolicy(q) })
	return ok
}

// leastLoaded returns the shard of ids a new queue created through node
// origin goes to (placement.QueueShard): of those holding the fewest
// queues, one of the least load as the balancer last read the loads,
// preferring the one origin leads. A shard holds the queues placed in it
// (deleted ones included: a name keeps its shard, so that it comes back
// where its cool-down is kept). Shard 0, on every member, takes no new
// queue once there are shards: its writes would be every node's work.
func (s *Set) leastLoaded(ids []uint32, origin string) uint32 {
	count := map[placement.ShardID]int{}
	s.host.Read(func(e *engine.Engine) {
		for _, k := range e.MetaKeys(queuePrefix) {
			if n, err := strconv.ParseUint(e.Meta(k), 10, 32); err == nil {
				count[placement.ShardID(n)]++
			}
		}
	})
	shards := make([]placement.ShardID, len(ids))
	for i, id := range ids {
		shards[i] = placement.ShardID(id)
	}
	leaders := map[placement.ShardID]placement.NodeID{}
	for id, node := range s.PreferredLeaders() {
		leaders[placement.ShardID(id)] = placement.NodeID(node)
	}
	return uint32(placement.QueueShard(shards, count, s.recentLoads(time.Now()), leaders, placement.NodeID(origin)))
}

// shardRates is each shard's commands applied a second over one round of
// balancing, and when that round read them.
type shardRates struct {
	rate map[placement.ShardID]float64
	at   time.Time
}

// noteShardRates keeps the shards' rates that a round of balancing read
// (held: each shard's queues; load: each queue's commands over since),
// for the placements that follow.
func (s *Set) noteShardRates(held map[placement.ShardID][]string, load func(string) uint64, since time.Duration, now time.Time) {
	if since <= 0 {
		return
	}
	rate := make(map[placement.ShardID]float64, len(held))
	for id, qs := range held {
		var n uint64
		for _, q := range qs {
			n += load(q)
		}
		rate[id] = float64(n) / since.Seconds()
	}
	s.shardRates.Store(&shardRates{rate: rate, at: now})
}

// recentLoads is what placement weighs a new queue's shard by: the rates
// of the last round of balancing, unless it is older than three rounds
// (this node led the first group then, and another since), in which case
// none are known.
func (s *Set) recentLoads(now time.Time) placement.Loads {
	r := s.shardRates.Load()
	every := cmp.Or(s.cfg.QueueBalance, testQueueBalance, DefaultQueueBalance)
	if r == nil || every < 0 || now.Sub(r.at) > 3*every {
		return placement.Loads{}
	}
	return placement.Loads{Rate: r.rate, Slack: minBalancedRate}
}

// Shard returns shard id's log, if this node has it open.
func (s *Set) Shard(id uint32) (*replog.Raft, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l, ok := s.open[id]
	return l, ok
}

// IDs returns the numbers of the shards this node has open, ascending.
func (s *Set) IDs() []uint32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]uint32, 0, len(s.open))
	for id := range s.open {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Running reports whether the map names any shard: from then on every
// request is routed by it. Until the map is first seen to name one, it is
// asked at every call, not only at follow's next look: a member restarted
// reads its map from its log after it opened, and were it elected the
// first group's leader meanwhile it would carry out requests in the first
// group, which holds none of the queues placed in shards, and answer that
// they do not exist.
func (s *Set) Running() bool {
	if s.running.Load() {
		return true
	}
	if !s.namesShards() {
		return false
	}
	s.running.Store(true)
	return true
}

// namesShards reports whether the map names any shard, without building
// what named returns: Running asks it at every call on a cluster without
// shards.
func (s *Set) namesShards() (names bool) {
	s.host.Read(func(e *engine.Engine) {
		for _, k := range e.MetaKeys(shardPrefix) {
			if _, ok := shardKeyID(k); ok && e.Meta(k) != "" {
				names = true
				return
			}
		}
	})
	return names
}

// Close closes every shard; the first group is the caller's to close,
// after.
func (s *Set) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.quit)
	s.wg.Wait()
	// Each shard a node leads hands its leadership over as it closes
	// (up to two seconds each): they close at once, not one after another.
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for id, l := range s.open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Close(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("shard %d: %w", id, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.sharedMu.Lock()
	if s.shared != nil {
		if err := s.shared.Close(); err != nil {
			errs = append(errs, fmt.Errorf("the shared log: %w", err))
		}
	}
	s.sharedMu.Unlock()
	return errors.Join(errs...)
}

// watchHalt waits until group id's replica l (the first group, 0, or a
// shard) is stopped by a storage fault or a fence, and then halts the
// Set; it ends sooner when the Set closes, or the replica is closed as
// the map moved it away (unwatch).
func (s *Set) watchHalt(id uint32, l *replog.Raft, unwatch <-chan struct{}) {
	defer s.wg.Done()
	select {
	case <-l.Halted():
		err := l.Fault()
		if id != 0 {
			err = fmt.Errorf("shard %d: %w", id, err)
		}
		s.halt(err)
	case <-unwatch:
	case <-s.quit:
	}
}

// halt stops the Set for err, unless it stopped already, and returns err.
func (s *Set) halt(err error) error {
	s.haltOnce.Do(func() {
		s.mu.Lock()
		s.fault = err
		s.mu.Unlock()
		close(s.halted)
	})
	return err
}

// Halted returns a channel closed once a storage fault or a fence has
// stopped one of the node's groups, its first or a shard (see Fault). The
// node stops then, whichever group it was: the disk under the others is
// as suspect, and a node that went on serving with a group stopped would
// hide the fault from its supervisor.
func (s *Set) Halted() <-chan struct{} { return s.halted }

// Fault returns what stopped one of the node's groups, or nil.
func (s *Set) Fault() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.fault
}

// Recorded returns the shards the map in host's state names, ascending:
// a data dir whose map names some holds queues in them.
func Recorded(host *replog.Raft) []uint32 {
	var out []uint32
	host.Read(func(e *engine.Engine) {
		for _, k := range e.MetaKeys(shardPrefix) {
			if id, ok := shardKeyID(k); ok {
				out = append(out, id)
			}
		}
	})
	slices.Sort(out)
	return out
}

// Adopt makes the map of a first group just restored from a backup
// (fifoq restore) put every shard it names on this node alone, whose
// data dir the restore gave each shard's replica: the backup's map names
// the nodes of the cluster it was taken of. The node, served as a cluster
// member, then leads every shard, and the nodes that join it get their
// share of the replicas as any joining node does. host must be the
// restored log, a cluster of one.
func Adopt(ctx context.Context, host *replog.Raft) error {
	self := host.NodeID()
	for _, id := range Recorded(host) {
		key := shardPrefix + strconv.FormatUint(uint64(id), 10)
		for _, set := range []*engine.SetMetaRequest{{Key: key, Value: self}, {Key: wantKey(id)}} {
			if _, err := host.Apply(ctx, &engine.Command{Request: set}); err != nil {
				return fmt.Errorf("shard %d: %w", id, err)
			}
		}
	}
	return nil
}
