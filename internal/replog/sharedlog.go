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
// shared log, whose dir holds a log of its own (wal/), keeps it.

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
	if _, err := os.Stat(own); err == nil {
		w, err := openWAL(own, cfg, o.hlog)
		return w, own, err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("look for a log of the replica's own: %w", err)
	}
	id, ok, err := readGroupID(cfg.Dir)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		if id, err = newGroupID(cfg.Dir); err != nil {
			return nil, "", err
		}
	}
	return &sharedGroup{Group: shared.log.Group(id)}, shared.dir, nil
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
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	id := binary.LittleEndian.Uint64(b[:])>>1 | 1 // never 0
	if err := WriteFileSynced(filepath.Join(dir, groupFile), strconv.FormatUint(id, 10)+"\n"); err != nil {
		return 0, fmt.Errorf("record the replica's group in the shared log: %w", err)
	}
	return id, nil
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
