package server

import (
	"io"
	"net/http"
	"strconv"

	"github.com/fifoq/fifoq/internal/backup"
)

// BackupPath is where a server answers GET with a backup of its whole
// state (internal/backup's format), for `fifoq backup`. Only an admin key
// of the server's own account may take one: a backup holds every queue's
// messages.
const BackupPath = "/admin/backup"

// backupLog is a command log that can take a backup: the durable one.
type backupLog interface {
	Backup(w io.Writer, version string) (backup.Header, error)
}

// serveBackup streams a backup of this node's state. On a cluster member
// it is the member's own state, as of the entries it has applied: a
// follower serves it as well as the leader, and spares the leader the
// work.
func (s *Server) serveBackup(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.verifyAdmin(w, r, nil, "take a backup"); !ok {
		return
	}
	bl, ok := s.log.(backupLog)
	if !ok {
		writeJSONError(w, http.StatusBadRequest, "this server keeps its state in memory (--in-memory): there is nothing durable to back up")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", `attachment; filename="fifoq.backup"`)
	hdr, err := bl.Backup(w, s.cfg.Version)
	if err != nil {
		// Once bytes have gone out the status cannot change; the file is
		// then cut short, which a restore refuses (its checksum).
		s.logger.Error("backup failed", "err", err)
		if hdr.Size == 0 {
			writeJSONError(w, http.StatusServiceUnavailable, "backup failed: "+err.Error())
		}
		return
	}
	s.logger.Info("backup taken", "index", hdr.Index, "bytes", strconv.FormatInt(hdr.Size, 10), "messages", hdr.Messages)
}
