package replog

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Which entry format a node writes is the cluster's choice, not the
// binary's. In a rolling upgrade the members run two versions of fifoq for
// a while, and an entry in a format that one of them does not read stops
// that member's state machine (entries are decoded strictly, codec.go): a
// leader on the new version must keep writing the old format until every
// member reads the new one. So, as CockroachDB gates its cluster versions:
//
//   - Each node says, in the hello that opens every connection between
//     members (transport.go), the newest entry format it reads
//     (maxEntryFormat).
//   - The cluster's format is recorded in the replicated state (the
//     engine's metadata, key formatKey). Absent, it is version 4: a
//     cluster formed before the record existed writes version 4, which
//     every member read.
//   - Every node writes entries in the recorded format (or in its own
//     newest, if older: a node never writes what it cannot read). The
//     leader raises the record, in an entry of the new format, once every
//     member has said it reads that format. The record never goes down.
//   - Once it is raised, a member that reads less is refused at its hello
//     ("too-old"), so an older binary put back in by mistake stays out,
//     saying why, instead of stopping at the first entry it cannot read.
//
// A cluster of one writes the recorded format too and raises it only when
// a command needs a newer one (formatFor): until then its data dir holds
// nothing an older fifoq cannot read, so the binary can still be
// downgraded, and a cluster it becomes the first member of raises the
// format through the gate above. A command that needs a format the cluster
// does not write yet (a queue in a region other than the server's, format
// 6) raises it first, once every member reads it; while some member does
// not, the command is refused with a retryable ServiceUnavailable.

// formatKey is the engine metadata key of the cluster's entry format.
const formatKey = "cluster/entry-format"

// maxEntryFormat is the newest entry format this fifoq reads and writes:
// entryFormatVersion, lowered only in a test build (format_faults.go) to
// stand in for an older fifoq.
var maxEntryFormat byte = entryFormatVersion

// baseFormat is the cluster's format when none is recorded.
const baseFormat = minVersionBinary

// readsSetMeta reports whether a binary entry of the given version may
// hold a fifoq:SetMeta: from version 5 on, and in version 4 entries of the
// development builds that wrote it there, which a fifoq that knows the
// action reads.
func readsSetMeta(version byte) bool {
	return maxEntryFormat >= minVersionSetMeta && version >= minVersionBinary
}

// parseFormat reads a recorded format; absent is baseFormat.
func parseFormat(s string) (byte, error) {
	if s == "" {
		return baseFormat, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < int(baseFormat) || n > 255 {
		return 0, fmt.Errorf("entry format %q: want a version from %d to 255", s, baseFormat)
	}
	return byte(n), nil
}

// formatRaise returns the format a command raises the cluster's record
// to, if it does.
func formatRaise(c *engine.Command) (byte, bool) {
	r, ok := c.Request.(*engine.SetMetaRequest)
	if !ok || r.Key != formatKey {
		return 0, false
	}
	n, err := parseFormat(r.Value)
	return n, err == nil
}

// commandFormat is the oldest entry format that can carry c.
func commandFormat(c *engine.Command) byte {
	if c.Request.Action() == engine.ActionHoldDepartures {
		return minVersionHold
	}
	if needsPartitions(c) {
		return minVersionPartitions
	}
	if needsOutbox(c) {
		return minVersionOutbox
	}
	if isMoveAction(c.Request.Action()) {
		return minVersionMoves
	}
	if c.Region != "" || c.Queue.Region != "" {
		return minVersionRegions
	}
	m, ok := c.Request.(*engine.SetMetaRequest)
	if !ok {
		return minVersionBinary
	}
	if m.IfAbsent {
		return minVersionShards
	}
	if n, ok := formatRaise(c); ok && n > minVersionSetMeta {
		return n
	}
	return minVersionSetMeta
}

// recordedFormat returns the cluster's recorded entry format.
func (l *Raft) recordedFormat() byte {
	if l.host != nil {
		return l.host.recordedFormat() // the cluster's record is in its first group
	}
	var s string
	l.Read(func(e *engine.Engine) { s = e.Meta(formatKey) })
	n, err := parseFormat(s)
	if err != nil {
		// The record is written only by raiseFormat; a value it does not
		// read is a newer fifoq's, which reads at least what this one does.
		return maxEntryFormat
	}
	return n
}

// refreshFormat sets the format this node writes from the record.
func (l *Raft) refreshFormat() {
	l.format.Store(uint32(min(l.recordedFormat(), maxEntryFormat)))
}

// entryVersion is the version of the entry that carries cmds: the format
// this node writes, or the one a raise among them names (raiseFormat
// proposes one only once every member reads it).
func (l *Raft) entryVersion(cmds []*engine.Command) byte {
	v := byte(l.format.Load())
	for _, c := range cmds {
		if n, ok := formatRaise(c); ok && n > v {
			v = n
		}
	}
	return v
}

// keepFormat keeps the format a cluster member writes up to date with
// the record and, on the leader, raises the record once every member
// reads a newer format. (A cluster of one reads the record at start and
// after a restore: nothing else changes it.)
func (l *Raft) keepFormat() {
	defer l.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		l.refreshFormat()
		if l.raft.State() == raft.Leader && l.fsm.fatal.Load() == nil && l.faults.err() == nil {
			if target, ok := l.formatAllRead(); ok && target > l.recordedFormat() {
				l.raiseFormat(target)
			}
			// A cluster whose members did not all read the record when
			// this node came to lead records its region and id once
			// they do.
			l.recordRegion()
			l.recordClusterID()
		}
		select {
		case <-tick.C:
		case <-l.quit:
			return
		}
	}
}

// formatAllRead returns the newest entry format every member reads, and
// false while some member has not said (a member not heard from since
// this node started, or a fifoq from before hellos said formats).
func (l *Raft) formatAllRead() (byte, bool) {
	c := l.cluster
	if c == nil {
		return maxEntryFormat, true // alone
	}
	f := l.raft.GetConfiguration()
	if f.Error() != nil {
		return 0, false
	}
	c.learnMu.Lock()
	defer c.learnMu.Unlock()
	least := maxEntryFormat
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == l.cfg.NodeID {
			continue
		}
		n, ok := c.learnedFormats[string(s.ID)]
		if !ok {
			return 0, false
		}
		least = min(least, n)
	}
	return least, true
}

// raiseFormat records the cluster's entry format as target.
func (l *Raft) raiseFormat(target byte) {
	if target < minVersionSetMeta {
		return // the record is itself a fifoq:SetMeta
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.setMeta(ctx, formatKey, strconv.Itoa(int(target))); err != nil {
		l.logger.Warn("could not raise the cluster's log entry format", "format", target, "err", err)
		return
	}
	l.refreshFormat()
	l.logger.Info("every member reads the newer log entry format: the cluster now writes it", "format", target)
}

// tooOld returns why a node that reads entry formats up to format may not
// take part, or "" if it may.
func (l *Raft) tooOld(format byte) string {
	if rec := l.recordedFormat(); format < rec {
		return fmt.Sprintf("it reads log entry formats up to %d, and the cluster writes format %d; run the fifoq version the other members run", format, rec)
	}
	return ""
}

// formatFor makes the cluster write entry format need, or says why it
// cannot yet: a command needs it (commandFormat), and the format this node
// writes is older. The raise is one entry, made once: commands that need
// it wait for it here, one at a time, and find it done.
func (l *Raft) formatFor(ctx context.Context, cmd *engine.Command, need byte) error {
	l.raiseMu.Lock()
	defer l.raiseMu.Unlock()
	if byte(l.format.Load()) >= need {
		return nil
	}
	what := fmt.Sprintf("A %s request in region %q", cmd.Request.Action(), cmp.Or(cmd.Queue.Region, cmd.Region))
	if need > maxEntryFormat {
		return api.ErrServiceUnavailable("%s needs log entry format %d, which this fifoq does not write.", what, need)
	}
	if l.host != nil {
		// Only the first group's leader raises the record (keepFormat
		// does so within a second of every member reading the format).
		if l.recordedFormat() >= need {
			l.refreshFormat()
			return nil
		}
		return api.ErrServiceUnavailable("%s needs log entry format %d, which the cluster does not write yet: upgrade every member to this fifoq version first, or retry.", what, need)
	}
	if least, ok := l.formatAllRead(); !ok || least < need {
		return api.ErrServiceUnavailable("%s needs log entry format %d, which not every member of the cluster reads yet: upgrade every member to this fifoq version first.", what, need)
	}
	if l.recordedFormat() >= need {
		l.refreshFormat()
		return nil
	}
	if err := l.setMeta(ctx, formatKey, strconv.Itoa(int(need))); err != nil {
		return err
	}
	l.refreshFormat()
	l.logger.Info("a command needs a newer log entry format, which every member reads: the cluster now writes it", "format", need)
	return nil
}
