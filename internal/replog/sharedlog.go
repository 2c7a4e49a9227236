package replog

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/grouplog"
)

// A node's shards keep their Raft entries in one log, the SharedLog, so
// that what they all append meanwhile goes to disk in one write and one
// fsync (internal/grouplog; docs/cluster.md, "One log per node"). Each
// shard's replica is one group of it, named by the number in its data
// dir's log-group file, drawn at random when the replica's dir is made, so
// that a replica whose dir was removed and made again never finds the
// entries of the one before. The rest of a replica's state (snapshots,
// body store, region) stays in its own dir. A replica made before the
// shared log, whose dir holds a log of its own (wal/), has it moved into
// the shared log as it opens with one (moveIntoShared).

// groupFile names, in a shard replica's data dir, its group in the shared
// log.
const groupFile = "log-group"

// SharedLog is the log a node's shards share: a raft-wal on walfs in its
// dir, under a grouplog.Log. Open it before the shards and close it after
// them.
type SharedLog struct {
	dir string
	wal *closingWAL
	log *grouplog.Log
	id  string
}

// sharedLogIDKey holds, in the shared log's stable store, the id the log
// was given when it was made (AssignID), apart from every group's keys.
var sharedLogIDKey = []byte("fifoq/shared-log-id")

// OpenSharedLog opens the shared log in dir, creating it if need be, with
// the free space, observer and logger of cfg (the shards' settings).
func OpenSharedLog(dir string, cfg RaftConfig) (*SharedLog, error) {
	cfg.setDefaults()
	wal, err := openWAL(dir, &cfg, newHCLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	log, err := grouplog.Open(wal)
	if err != nil {
		wal.Close()
		return nil, fmt.Errorf("open the shared log %s: %w", dir, err)
	}
	id, err := wal.Get(sharedLogIDKey)
	if err != nil {
		log.Close()
		wal.Close()
		return nil, fmt.Errorf("read the shared log's id: %w", err)
	}
	return &SharedLog{dir: dir, wal: wal, log: log, id: string(id)}, nil
}

// ID returns the id the log was given, "" if it has none: one just made,
// or one made before logs had ids. A node records the id of the log its
// replicas write to, so that a log lost and made again is told from the
// one they wrote to.
func (s *SharedLog) ID() string { return s.id }

// AssignID gives a log without an id a new random one, durably.
func (s *SharedLog) AssignID() (string, error) {
	if s.id != "" {
		return s.id, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(b[:])
	if err := s.wal.Set(sharedLogIDKey, []byte(id)); err != nil {
		return "", fmt.Errorf("record the shared log's id: %w", err)
	}
	s.id = id
	return id, nil
}

// ReplicaHoldsLog reports whether the shard replica dir dir holds its Raft
// log, or names its group in the shared log: false for a dir that is gone
// or emptied.
func ReplicaHoldsLog(dir string) (bool, error) {
	for _, name := range []string{"wal", groupFile} {
		_, err := os.Stat(filepath.Join(dir, name))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
	}
	return false, nil
}

// Writes returns how many writes (each one fsync) the shared log has made
// since it opened.
func (s *SharedLog) Writes() uint64 { return s.log.Writes() }

// Groups returns how many groups hold entries in the shared log.
func (s *SharedLog) Groups() int { return len(s.log.Groups()) }

// Prune drops the groups of the shared log that no replica's dir under
// shardsDir names: the entries of a replica whose dir was removed.
func (s *SharedLog) Prune(shardsDir string) error {
	named := map[uint64]bool{}
	dirs, err := os.ReadDir(shardsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, d := range dirs {
		id, ok, err := readGroupID(filepath.Join(shardsDir, d.Name()))
		if err != nil {
			return err
		}
		if ok {
			named[id] = true
		}
	}
	for _, id := range s.log.Groups() {
		if !named[id] {
			if err := s.log.Drop(id); err != nil {
				return fmt.Errorf("drop group %d of the shared log, which no replica names: %w", id, err)
			}
		}
	}
	return nil
}

// Close closes the shared log; the shards must be closed first.
func (s *SharedLog) Close() error {
	err := s.log.Close()
	if werr := s.wal.Close(); err == nil {
		err = werr
	}
	return err
}

// openLogStore opens the group's log: its group in the shared log for a
// shard given one whose dir has no log of its own, else its own raft-wal
// in the dir's wal/. It returns the log and the dir of its segments.
func (o *opening) openLogStore() (durableLog, string, error) {
	cfg := &o.cfg
	own := filepath.Join(cfg.Dir, "wal")
	shared := cfg.sharedLog
	if cfg.Shard != nil && cfg.Shard.Log != nil {
		shared = cfg.Shard.Log
	}
	if shared == nil {
		// A replica whose entries are in its node's shared log, opened
		// without it, would start an empty log of its own, and every
		// later open would take that one.
		if _, ok, err := readGroupID(cfg.Dir); err != nil || ok {
			if err == nil {
				err = fmt.Errorf("%s keeps its log in its node's shared log, and is opened only as one of the node's shards", cfg.Dir)
			}
			return nil, "", err
		}
		w, err := openWAL(own, cfg, o.hlog)
		return w, own, err
	}
	id, named, err := readGroupID(cfg.Dir)
	if err != nil {
		return nil, "", err
	}
	// What a removal of the own log cut short left (removeOwnLog).
	if err := os.RemoveAll(own + movedSuffix); err != nil {
		return nil, "", fmt.Errorf("remove the replica's own log: %w", err)
	}
	if _, err := os.Stat(own); err == nil {
		if named {
			// A move into the shared log stopped after the group was
			// named, its copy durable before: the rest of it.
			err = removeOwnLog(own)
		} else {
			id, err = o.moveIntoShared(own, shared)
		}
		if err != nil {
			return nil, "", err
		}
		named = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("look for a log of the replica's own: %w", err)
	}
	if !named {
		if id, err = newGroupID(cfg.Dir); err != nil {
			return nil, "", err
		}
	}
	return &sharedGroup{Group: shared.log.Group(id)}, shared.dir, nil
}

// movedSuffix names a replica's own log while it is removed, once its
// entries are in the shared log: removing a dir is not atomic, a rename
// is.
const movedSuffix = ".moved"

// raftStableKeys are the keys hashicorp/raft keeps in its stable store:
// the term, and the vote cast in it.
var raftStableKeys = [][]byte{[]byte("CurrentTerm"), []byte("LastVoteTerm"), []byte("LastVoteCand")}

// moveIntoShared moves a shard replica's own log (made before its node
// had a shared log, or while the cluster's format was older than 9) into
// a new group of the shared log, so that a node's replicas all come to
// share its fsyncs: its entries and Raft's term and vote are copied into
// the group and written durably, the group is named in the dir, and only
// then is the own log removed. Cut short before the group is named, the
// group is dropped as the shared log next opens (Prune) and the move is
// made again; after, the own log is removed as the replica next opens.
func (o *opening) moveIntoShared(own string, shared *SharedLog) (uint64, error) {
	cfg := &o.cfg
	w, err := openWAL(own, cfg, o.hlog)
	if err != nil {
		return 0, err
	}
	id, err := drawGroupID()
	if err == nil {
		err = copyLog(w, shared.log.Group(id))
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = nameGroup(cfg.Dir, id)
	}
	if err != nil {
		if id != 0 {
			if derr := shared.log.Drop(id); derr != nil {
				cfg.Logger.Warn("drop the part of a replica's log copied into the shared log", "dir", cfg.Dir, "err", derr)
			}
		}
		return 0, fmt.Errorf("move the replica's own log %s into the node's shared log: %w", own, err)
	}
	if err := removeOwnLog(own); err != nil {
		return 0, err
	}
	cfg.Logger.Info("moved a shard replica's own log into the node's shared log", "dir", cfg.Dir)
	return id, nil
}

// copyLog copies every entry of from into to, in writes of up to 4 MiB,
// then Raft's stable keys.
func copyLog(from *closingWAL, to *grouplog.Group) error {
	first, err := from.FirstIndex()
	if err != nil {
		return err
	}
	last, err := from.LastIndex()
	if err != nil {
		return err
	}
	var batch []*raft.Log
	size := 0
	for i := first; i != 0 && i <= last; i++ {
		e := new(raft.Log)
		if err := from.GetLog(i, e); err != nil {
			return fmt.Errorf("read entry %d: %w", i, err)
		}
		batch = append(batch, e)
		size += len(e.Data) + len(e.Extensions)
		if size >= 4<<20 || i == last {
			if err := to.StoreLogs(batch); err != nil {
				return err
			}
			batch, size = nil, 0
		}
	}
	for _, k := range raftStableKeys {
		v, err := from.Get(k)
		if err != nil {
			return err
		}
		if len(v) > 0 {
			if err := to.Set(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeOwnLog removes a replica's own log dir: renamed first, the rename
// synced, so that a crash leaves it whole or under its moved name, never
// half removed under its own.
func removeOwnLog(dir string) error {
	gone := dir + movedSuffix
	if err := os.Rename(dir, gone); err != nil {
		return fmt.Errorf("remove the replica's own log: %w", err)
	}
	if err := syncDirOf(dir); err != nil {
		return fmt.Errorf("remove the replica's own log: %w", err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove the replica's own log: %w", err)
	}
	return nil
}

// readGroupID reads the group a replica's dir names, if it names one.
func readGroupID(dir string) (uint64, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, groupFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read the replica's group in the shared log: %w", err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || id == 0 {
		return 0, false, fmt.Errorf("%s does not name a group of the shared log: %q", filepath.Join(dir, groupFile), b)
	}
	return id, true, nil
}

// newGroupID draws a group for a new replica's dir and records it there,
// durably, before anything of the group is written.
func newGroupID(dir string) (uint64, error) {
	id, err := drawGroupID()
	if err != nil {
		return 0, err
	}
	return id, nameGroup(dir, id)
}

// drawGroupID draws a group at random.
func drawGroupID() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:])>>1 | 1, nil // never 0
}

// nameGroup records in a replica's dir, durably, its group in the shared
// log.
func nameGroup(dir string, id uint64) error {
	if err := WriteFileSynced(filepath.Join(dir, groupFile), strconv.FormatUint(id, 10)+"\n"); err != nil {
		return fmt.Errorf("record the replica's group in the shared log: %w", err)
	}
	return nil
}

// sharedGroup is a shard replica's log in the node's shared log, with the
// replica's body store, which its Close closes (the shared log is its
// owner's to close).
type sharedGroup struct {
	*grouplog.Group
	bodies *bodies
}

func (g *sharedGroup) setBodies(b *bodies) { g.bodies = b }
func (g *sharedGroup) bodyStore() *bodies  { return g.bodies }

// Close closes the replica's body store.
func (g *sharedGroup) Close() error {
	if g.bodies != nil {
		return g.bodies.store.Close()
	}
	return nil
}
