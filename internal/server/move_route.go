package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/shards"
)

// Carrying a queue's move out. The first group's leader drives a move
// (internal/shards/move.go); each step is for one group, and is carried
// out here at that group's leader: applied, if this node leads it, or
// sent to its leader over the node-to-node port (POST /cluster/move-step;
// an install as the image's bytes, POST /cluster/install-queue, once the
// cluster writes log entry format 12). The queue's image is read from a
// replica of its group that applied the fence: this node's, or another's
// (GET /cluster/export-queue). These endpoints need what POST /cluster/do
// needs (trustedPeer): a step moves a queue's every message, and an image
// holds them.

// Paths of the move endpoints on the node-to-node port.
const (
	moveStepPath     = "/cluster/move-step"
	exportQueuePath  = "/cluster/export-queue"
	installQueuePath = "/cluster/install-queue"
)

// moveStep is the body of POST /cluster/move-step: an internal request of
// a move, for queue Queue in group Shard.
type moveStep struct {
	Shard   uint32          `json:"shard"`
	Queue   api.QueueKey    `json:"queue"`
	Action  api.Action      `json:"action"`
	Request json.RawMessage `json:"request"`
}

// moveSteps carries moves out for the node's shards (shards.Steps).
type moveSteps struct{ s *Server }

// MoveSteps returns what carries the steps of the queues' moves out at
// the leaders of their groups, for the node's shards (shards.Set.SetSteps).
func (s *Server) MoveSteps() interface {
	Step(ctx context.Context, id uint32, q api.QueueKey, req api.Request) error
	Export(ctx context.Context, id uint32, q api.QueueKey, move string) ([]byte, error)
	Queues(ctx context.Context, id uint32) (map[api.QueueKey]engine.QueueLoad, error)
	Fenced(ctx context.Context, id uint32) (map[api.QueueKey]string, error)
	Members(ctx context.Context, id uint32) ([]replog.Member, uint64, bool)
} {
	return moveSteps{s}
}

// Fenced returns the queues group id holds fenced for a move: as this
// node's replica has them, or as one of its replicas says (GET
// /cluster/shards?local).
func (m moveSteps) Fenced(ctx context.Context, id uint32) (map[api.QueueKey]string, error) {
	s := m.s
	if g, held := s.groupByID(id); held {
		var out map[api.QueueKey]string
		g.log.Read(func(e *engine.Engine) { out = e.Fenced() })
		return out, nil
	}
	sh, err := s.askShardOf(ctx, id)
	if err != nil {
		return nil, err
	}
	out := map[api.QueueKey]string{}
	for name, move := range sh.Fenced {
		out[queueOfString(name)] = move
	}
	return out, nil
}

// Members returns group id's membership as its leader last committed it
// (shardMembersByLeader).
func (m moveSteps) Members(ctx context.Context, id uint32) ([]replog.Member, uint64, bool) {
	return m.s.shardMembersByLeader(ctx, id)
}

// Queues returns the queues group id holds, with their loads and modes:
// as this node's replica has them, or as one of its replicas says (GET
// /cluster/shards?local).
func (m moveSteps) Queues(ctx context.Context, id uint32) (map[api.QueueKey]engine.QueueLoad, error) {
	s := m.s
	if g, held := s.groupByID(id); held {
		var out map[api.QueueKey]engine.QueueLoad
		now := s.now().UnixNano()
		g.log.Read(func(e *engine.Engine) { out = e.QueueLoads(now) })
		return out, nil
	}
	sh, err := s.askShardOf(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(map[api.QueueKey]engine.QueueLoad, len(sh.Queues))
	for _, name := range sh.Queues {
		out[queueOfString(name)] = engine.QueueLoad{Applied: sh.Commands[name]}
	}
	for name, r := range sh.HighThroughput {
		if l, ok := out[queueOfString(name)]; ok {
			l.HighThroughput, l.Splittable, l.SplitAt, l.Sent = true, r.Splittable, r.SplitAt, r.Sent
			out[queueOfString(name)] = l
		}
	}
	return out, nil
}

// askShardOf returns group id as the first of its replicas to answer sees
// it (GET /cluster/shards?local).
func (s *Server) askShardOf(ctx context.Context, id uint32) (*ShardStatus, error) {
	var lastErr error = fmt.Errorf("the map names no replica of shard %d", id)
	for _, p := range s.shards.Replicas(id) {
		theirs, err := s.askShards(ctx, p.Addr)
		if err != nil {
			lastErr = err
			continue
		}
		for i := range theirs.Shards {
			if sh := &theirs.Shards[i]; sh.Shard == id && sh.Held {
				return sh, nil
			}
		}
		lastErr = fmt.Errorf("%s holds no replica of shard %d", p.ID, id)
	}
	return nil, lastErr
}

// queueOfString reads api.QueueKey.String's form back: "ACCOUNT/NAME", or
// "REGION/ACCOUNT/NAME" in a region other than the server's, either with
// "#PART" for a partition other than 0 (no queue name holds a "#").
func queueOfString(s string) api.QueueKey {
	var part uint32
	if rest, p, ok := strings.Cut(s, "#"); ok {
		n, err := strconv.ParseUint(p, 10, 32)
		if err == nil {
			s, part = rest, uint32(n)
		}
	}
	parts := strings.Split(s, "/")
	if len(parts) == 3 {
		return api.QueueKey{Region: parts[0], Account: parts[1], Name: parts[2], Part: part}
	}
	account, name, _ := strings.Cut(s, "/")
	return api.QueueKey{Account: account, Name: name, Part: part}
}

// errNoLongerDriving answers a step of a move whose driver no longer
// leads the first group.
var errNoLongerDriving = api.ErrServiceUnavailable("This node no longer leads the cluster, and leaves the move's step to the one that does; retry.")

// stepWait bounds how long a step waits for its group's leader.
const stepWait = 15 * time.Second

// Step applies a move's step in group id, at its leader.
func (m moveSteps) Step(ctx context.Context, id uint32, q api.QueueKey, req api.Request) error {
	s := m.s
	deadline := time.Now().Add(stepWait)
	var lastErr error = api.ErrServiceUnavailable("The leader of shard %d could not be found.", id)
	// An install goes to another member as the image's bytes, once every
	// member takes it so: as JSON it would be base64, encoded here and
	// decoded there, on the way to the moved queue's first answer.
	install, rawInstall := req.(*engine.InstallQueueRequest)
	rawInstall = rawInstall && s.first != nil && s.first.raft != nil && s.first.raft.WritesImageBytes()
	for try := 0; try == 0 || time.Now().Before(deadline); try++ {
		if try > 0 {
			select {
			case <-time.After(min(time.Duration(try)*50*time.Millisecond, 500*time.Millisecond)):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if !shards.StillDriving(ctx) {
			// A deposed driver's step tried again could land after the
			// next leader finished the move (shards.WithDriver).
			return errNoLongerDriving
		}
		g, held := s.groupByID(id)
		if held && g.leads() {
			cmd := &engine.Command{Time: s.now().UnixNano(), Queue: q, Request: req, Entropy: newEntropy()}
			_, err := s.apply(withGroup(ctx, g), cmd)
			return err
		}
		member, addr := s.leaderOf(id, held, g, try)
		if addr == "" {
			continue
		}
		var a doAnswer
		read := func(resp *http.Response) error { return json.NewDecoder(resp.Body).Decode(&a) }
		var err error
		if rawInstall {
			err = s.askLeader(ctx, id, held, g, member, addr, http.MethodPost, installQueueTarget(id, q, install.Move), install.Image, read)
		} else {
			var body, routed []byte
			if body, err = json.Marshal(req); err != nil {
				return err
			}
			routed, _ = json.Marshal(moveStep{Shard: id, Queue: q, Action: req.Action(), Request: body})
			err = s.askLeader(ctx, id, held, g, member, addr, http.MethodPost, moveStepPath, routed, read)
		}
		switch {
		case err != nil:
			lastErr = err
		case a.Misdirected:
			s.noteLeader(&misdirectedError{group: a.Group, leader: a.Leader})
			lastErr = fmt.Errorf("member at %s does not lead shard %d", addr, id)
		case a.Error != nil:
			return a.Error
		default:
			return nil
		}
	}
	return lastErr
}

// leaderOf returns the member to send group id's requests to, and its
// Raft address: its leader as this node knows it, else one of its
// replicas in turn; "" while this node's replica knows no leader.
func (s *Server) leaderOf(id uint32, held bool, g *group, try int) (member, addr string) {
	if held {
		return g.raft.Leader()
	}
	replicas := s.shards.Replicas(id)
	if len(replicas) == 0 {
		return "", ""
	}
	p := replicas[try%len(replicas)]
	if v, ok := s.leaders.Load(id); ok {
		for _, r := range replicas {
			if r.ID == v.(string) {
				p = r
			}
		}
	}
	return p.ID, p.Addr
}

// Export returns queue q's image from a replica of group id that applied
// the fence of the move named move: its leader's first, which applied
// the fence before the step answered, where a follower has it only once
// it learns that the entry committed (with the next append, up to a
// commit timeout later: waiting for that was a tenth of a second of most
// moves' fences); then this node's replica and the leader's in turn, or,
// without a replica here, the leader and each replica in turn.
func (m moveSteps) Export(ctx context.Context, id uint32, q api.QueueKey, move string) ([]byte, error) {
	s := m.s
	deadline := time.Now().Add(stepWait)
	var lastErr error
	for try := 0; try == 0 || time.Now().Before(deadline); try++ {
		if try > 0 {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		g, held := s.groupByID(id)
		if held && (g.leads() || try%2 == 1) {
			var buf bytes.Buffer
			g.log.Read(func(e *engine.Engine) { lastErr = e.ExportQueue(q, move, &buf) })
			if lastErr == nil {
				return buf.Bytes(), nil
			}
			continue
		}
		var addr string
		if try%2 == 0 {
			_, addr = s.leaderOf(id, held, g, try)
		} else if replicas := s.shards.Replicas(id); len(replicas) > 0 {
			// Past a leader this node may know wrongly, or that is down.
			addr = replicas[(try/2)%len(replicas)].Addr
		}
		if addr == "" {
			lastErr = fmt.Errorf("no replica of shard %d known to ask", id)
			continue
		}
		v := url.Values{"shard": {strconv.FormatUint(uint64(id), 10)}, "account": {q.Account}, "region": {q.Region}, "name": {q.Name}, "part": {strconv.FormatUint(uint64(q.Part), 10)}, "move": {move}}
		resp, err := s.askPeer(ctx, http.MethodGet, addr, exportQueuePath+"?"+v.Encode(), nil)
		if err != nil {
			lastErr = err
			continue
		}
		image, err := io.ReadAll(io.LimitReader(resp.Body, maxImageBytes+1))
		resp.Body.Close()
		if err != nil {
			lastErr = err
			continue
		}
		return image, nil // one over the bound is refused by the driver
	}
	return nil, lastErr
}

// maxImageBytes bounds a queue's image read from another member: what a
// move carries (shards.MaxMoveImage), and a byte, so that the driver
// sees one over it and abandons the move.
const maxImageBytes = 32<<20 + 1

// serveMoveStep applies a move's step another member's driver sent here,
// if this node leads the step's group; else it answers where to go.
func (s *Server) serveMoveStep(w http.ResponseWriter, r *http.Request) {
	if !s.trustedPeerEndpoint(w, r, "a queue's move") {
		return
	}
	var d moveStep
	if err := json.NewDecoder(io.LimitReader(r.Body, 2*maxImageBytes)).Decode(&d); err != nil {
		writeJSONError(w, http.StatusBadRequest, "want a move step")
		return
	}
	req, ok := engine.NewInternalRequest(d.Action)
	switch d.Action {
	case engine.ActionFenceQueue, engine.ActionUnfenceQueue, engine.ActionInstallQueue, engine.ActionDropQueue,
		engine.ActionTakeMessages, engine.ActionSettleOutbox, // the outbox relay's (outbox_relay.go)
		engine.ActionSplitQueue, engine.ActionMergeQueue, // a split's (shards/partitions.go)
		engine.ActionHoldDepartures: // a backup's (backup.go)
	default:
		ok = false
	}
	if !ok {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a step of a move", d.Action))
		return
	}
	if err := json.Unmarshal(d.Request, req); err != nil {
		writeJSONError(w, http.StatusBadRequest, "the step: "+err.Error())
		return
	}
	s.applyStep(w, r, d.Shard, d.Queue, req)
}

// applyStep applies req, a step of a move for queue q, in group id if this
// node leads it, and answers the outcome (doAnswer); else it answers where
// to go.
func (s *Server) applyStep(w http.ResponseWriter, r *http.Request, id uint32, q api.QueueKey, req api.Request) {
	g, leads := s.leaderHere(w, id)
	if !leads {
		return
	}
	cmd := &engine.Command{Time: s.now().UnixNano(), Queue: q, Request: req, Entropy: newEntropy()}
	var a doAnswer
	if _, err := s.apply(withGroup(r.Context(), g), cmd); err != nil {
		a.Error = api.AsError(err)
	}
	writeJSON(w, http.StatusOK, a)
}

// installQueueTarget is the path and query of POST /cluster/install-queue
// for the install of queue q in group id for the move named move.
func installQueueTarget(id uint32, q api.QueueKey, move string) string {
	v := url.Values{"shard": {strconv.FormatUint(uint64(id), 10)}, "queue": {q.String()}, "move": {move}}
	return installQueuePath + "?" + v.Encode()
}

// serveInstallQueue applies a move's install another member's driver sent
// here, the image as the body (installQueueTarget names the rest), if this
// node leads the install's group; else it answers where to go.
func (s *Server) serveInstallQueue(w http.ResponseWriter, r *http.Request) {
	if !s.trustedPeerEndpoint(w, r, "a queue's move") {
		return
	}
	v := r.URL.Query()
	id, err := strconv.ParseUint(v.Get("shard"), 10, 32)
	if err != nil || v.Get("queue") == "" || v.Get("move") == "" {
		writeJSONError(w, http.StatusBadRequest, "want ?shard=, ?queue= and ?move=")
		return
	}
	image, err := io.ReadAll(io.LimitReader(r.Body, maxImageBytes+1))
	switch {
	case err != nil:
		writeJSONError(w, http.StatusBadRequest, "the image: "+err.Error())
		return
	case len(image) > maxImageBytes:
		writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("an image is at most %d bytes", maxImageBytes))
		return
	}
	s.applyStep(w, r, uint32(id), queueOfString(v.Get("queue")), &engine.InstallQueueRequest{Move: v.Get("move"), Image: image})
}

// serveExportQueue answers the image of a queue fenced for its move
// (?move=) in a group this node holds a replica of.
func (s *Server) serveExportQueue(w http.ResponseWriter, r *http.Request) {
	if !s.trustedPeerEndpoint(w, r, "a queue's image for another member") {
		return
	}
	qv := r.URL.Query()
	id, err := strconv.ParseUint(qv.Get("shard"), 10, 32)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "want ?shard=N")
		return
	}
	g, held := s.groupByID(uint32(id))
	if !held {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("this node holds no replica of shard %d", id))
		return
	}
	q := api.QueueKey{Account: qv.Get("account"), Region: qv.Get("region"), Name: qv.Get("name")}
	if p := qv.Get("part"); p != "" {
		// Absent from an older member's ask, which moves whole queues
		// only.
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, "want ?part=N")
			return
		}
		q.Part = uint32(n)
	}
	var buf bytes.Buffer
	g.log.Read(func(e *engine.Engine) { err = e.ExportQueue(q, qv.Get("move"), &buf) })
	if err != nil {
		writeJSONError(w, http.StatusConflict, err.Error())
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(buf.Bytes())
}

// moveRequest is the body of POST /cluster/moves.
type moveRequest struct {
	// QueueURL names the queue, as SQS's QueueUrl does.
	QueueURL string `json:"queue_url"`
	Shard    uint32 `json:"shard"`
}

// MoveResult is the answer of POST /cluster/moves.
type MoveResult struct {
	QueueURL string `json:"queue_url"`
	From     uint32 `json:"from"`
	To       uint32 `json:"to"`
}

// serveClusterMove moves a queue to another shard (fifoq cluster move):
// signed by an admin key, carried out by the first group's leader.
func (s *Server) serveClusterMove(w http.ResponseWriter, r *http.Request) {
	// A move's driver that loses the first group's leadership leaves the
	// move to its successor, which a retry finds.
	s.serveAdminChange(w, r, "move a queue between shards", true, func(ctx context.Context, body []byte) (any, error) {
		if s.shards == nil || !s.sharded() {
			return nil, badRequest{errors.New("the cluster has no shards to move a queue between: it runs one group (--shards 1, or a cluster of one member)")}
		}
		var mr moveRequest
		if err := json.Unmarshal(body, &mr); err != nil || mr.QueueURL == "" {
			return nil, badRequest{errors.New(`want a JSON body {"queue_url": "URL", "shard": N}`)}
		}
		q, err := api.ResolveQueueURL(mr.QueueURL, api.Scope{Account: s.cfg.Account}, s.cfg.Region)
		if err != nil {
			return nil, badRequest{fmt.Errorf("%q is not a queue URL", mr.QueueURL)}
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		from, err := s.shards.Move(ctx, q, mr.Shard)
		var ae *api.Error
		switch {
		case err == nil:
		case errors.As(err, &ae) && ae.Code == "QueueDoesNotExist":
			return nil, queueNotFound{mr.QueueURL}
		case errors.As(err, &ae) && ae.Status < 500:
			return nil, badRequest{err} // a queue that cannot move, a shard that is not
		default:
			return nil, err
		}
		return MoveResult{QueueURL: mr.QueueURL, From: from, To: mr.Shard}, nil
	})
}
