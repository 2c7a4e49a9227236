package replog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/engine"
)

// A data dir belongs to one region. Its queues' ARNs, the URLs a signed
// request finds them by, the snapshot's header are all of the region the
// node was started in, yet the log's commands name a region only when it
// is not the node's own: a log replayed by a node of another region would
// move every queue into that region, silently, and a snapshot of another
// region cannot be restored at all. So a data dir records its region when
// it is made (regionFile, beside the incarnation, written as it is), and
// every open compares the node's region with it before anything is
// restored or replayed, and refuses another in plain words.
//
// A data dir of a fifoq from before the record takes the region of its
// newest snapshot, which says it in its header; with no snapshot, the log
// alone cannot tell, and the configured region is taken. Either way the
// record is written, and the adoption logged, once the region agrees.

// regionFile holds the region the data dir belongs to.
const regionFile = "region"

// checkRegion compares the node's region (cfg.Engine.Region) with the one
// the data dir belongs to, and records it in a data dir that has no
// record yet. It runs once the dir is locked, before the log, the body
// store or the snapshots are opened.
func (o *opening) checkRegion() error {
	cfg := &o.cfg
	region := cfg.Engine.Region
	if region == "" {
		return errors.New("a durable log needs a region (engine.Config.Region)")
	}
	path := filepath.Join(cfg.Dir, regionFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		recorded := strings.TrimSpace(string(b))
		if recorded == "" {
			return fmt.Errorf("%s is empty: it should name the region the data dir belongs to", path)
		}
		if recorded != region {
			return regionMismatch(cfg.Dir, recorded)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read the data dir's region: %w", err)
	}
	// No record: a new data dir, or one of a fifoq from before it.
	existing := false
	for _, sub := range []string{"wal", "snapshots"} {
		if _, err := os.Stat(filepath.Join(cfg.Dir, sub)); err == nil {
			existing = true
		}
	}
	from := "the configured region (--region): the log does not say which region its queues are of"
	if existing {
		snap, snapRegion, err := o.newestSnapshotRegion()
		if err != nil {
			return err
		}
		if snap != "" {
			if snapRegion != region {
				return regionMismatch(cfg.Dir, snapRegion)
			}
			from = "its newest snapshot, " + snap
		}
	}
	if err := WriteFileSynced(path, region+"\n"); err != nil {
		return fmt.Errorf("record the data dir's region in %s: %w", path, err)
	}
	if existing {
		cfg.Logger.Info("the data dir had no record of its region, and adopted one", "dir", cfg.Dir, "region", region, "from", from)
	}
	return nil
}

// regionMismatch is the refusal to open dir, which belongs to region, in
// another region.
func regionMismatch(dir, region string) error {
	return fmt.Errorf("data dir %s belongs to region %s; start it with --region %s (a data dir cannot change region)", dir, region, region)
}

// newestSnapshotRegion returns the path of the data dir's newest snapshot
// and the region it is of ("" and "" if it has none), reading only its
// header. A snapshot whose header cannot be read is damaged, as the
// restore at start would find it.
func (o *opening) newestSnapshotRegion() (path, region string, err error) {
	dir := o.cfg.Dir
	if _, err := os.Stat(filepath.Join(dir, "snapshots")); errors.Is(err, os.ErrNotExist) {
		return "", "", nil
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, o.cfg.SnapshotsRetained, o.hlog)
	if err != nil {
		return "", "", fmt.Errorf("open snapshots in %s: %w", dir, err)
	}
	list, err := snaps.List()
	if err != nil {
		return "", "", fmt.Errorf("list snapshots in %s: %w", dir, err)
	}
	if len(list) == 0 {
		return "", "", nil
	}
	path = filepath.Join(dir, "snapshots", list[0].ID, "state.bin")
	f, err := os.Open(path)
	if err == nil {
		_, region, err = snapshotRegion(f)
		f.Close()
	}
	if err != nil {
		return "", "", fmt.Errorf("snapshot %s is damaged: %w; refusing to start", path, err)
	}
	return path, region, nil
}

// snapshotRegion reads the head of a snapshot's payload (the frame and
// the engine state's header) and returns the frame's version and the
// region the state is of. It checks that this fifoq reads both the
// frame's version and the engine state's, but no checksum.
func snapshotRegion(r io.Reader) (version uint32, region string, err error) {
	br := bufio.NewReader(r)
	version, _, err = readSnapshotHeader(br)
	if err != nil {
		return 0, "", err
	}
	if version >= snapshotRefsVersion {
		if _, err := readPosition(br); err != nil {
			return 0, "", err
		}
	}
	region, err = engine.SnapshotRegion(br)
	if err != nil {
		return 0, "", fmt.Errorf("snapshot state after the frame's header: %w", err)
	}
	return version, region, nil
}

// WriteFileSynced writes a small file whole or not at all: beside its
// name, synced, renamed, and the rename synced, so that a crash leaves
// either the old content or the new.
func WriteFileSynced(path, content string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDirOf(path)
	}
	return err
}
