package replog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// The frames of coalesced heartbeats (beats.go): a 4-byte big-endian
// length, then the payload. A frame of heartbeats is their count, then
// for each its group, and the heartbeat's fields (protocol version, ID,
// address, term, leader); the frame that answers it holds as many
// answers, in the same order, each either a Raft response (its header,
// term, last log index, success, no-retry-backoff) or the follower's
// reason for having none. Counts and numbers are varints, byte strings
// length-prefixed (codec_binary.go's).

// beatAnswerOK and beatAnswerErr tell the two kinds of answer apart.
const (
	beatAnswerOK  = 0
	beatAnswerErr = 1
)

// encodeBeats returns the frame that carries batch.
func encodeBeats(batch []*beat) []byte {
	buf := make([]byte, 4, 4+len(batch)*64)
	buf = binary.AppendUvarint(buf, uint64(len(batch)))
	for _, b := range batch {
		buf = binary.AppendUvarint(buf, uint64(b.group))
		buf = appendHeader(buf, b.req.RPCHeader)
		buf = binary.AppendUvarint(buf, b.req.Term)
		buf = appendBytes(buf, b.req.Leader)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// beatIn is a heartbeat read from a frame.
type beatIn struct {
	group uint32
	req   *raft.AppendEntriesRequest
}

// decodeBeats reads the heartbeats of a frame's payload.
func decodeBeats(p []byte) ([]beatIn, error) {
	r := &reader{p: p}
	n := frameCount(r)
	out := make([]beatIn, 0, n)
	for range n {
		group := r.uvarint("group")
		req := &raft.AppendEntriesRequest{RPCHeader: readHeader(r)}
		req.Term = r.uvarint("term")
		req.Leader = r.bytes("leader")
		if group > uint64(^uint32(0)) {
			r.fail("group")
		}
		if r.err != nil {
			return nil, frameDone(r)
		}
		if !isHeartbeat(req) {
			return nil, errors.New("a coalesced heartbeat without a term or a leader")
		}
		out = append(out, beatIn{group: uint32(group), req: req})
	}
	return out, frameDone(r)
}

// encodeBeatAnswers returns the frame that carries answers.
func encodeBeatAnswers(answers []beatAnswer) []byte {
	buf := make([]byte, 4, 4+len(answers)*48)
	buf = binary.AppendUvarint(buf, uint64(len(answers)))
	for _, a := range answers {
		if a.err != "" {
			buf = append(buf, beatAnswerErr)
			buf = appendString(buf, a.err)
			continue
		}
		buf = append(buf, beatAnswerOK)
		buf = appendHeader(buf, a.resp.RPCHeader)
		buf = binary.AppendUvarint(buf, a.resp.Term)
		buf = binary.AppendUvarint(buf, a.resp.LastLog)
		buf = append(buf, boolByte(a.resp.Success), boolByte(a.resp.NoRetryBackoff))
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// decodeBeatAnswers reads the answers of a frame's payload, which must be
// want of them.
func decodeBeatAnswers(p []byte, want int) ([]beatAnswer, error) {
	r := &reader{p: p}
	n := frameCount(r)
	if r.err == nil && n != want {
		return nil, fmt.Errorf("%d answers to %d heartbeats", n, want)
	}
	out := make([]beatAnswer, 0, n)
	for range n {
		var a beatAnswer
		switch kind := r.byte("kind"); kind {
		case beatAnswerErr:
			a.err = r.string("reason")
			if a.err == "" {
				a.err = "an answer without a reason"
			}
		case beatAnswerOK:
			a.resp.RPCHeader = readHeader(r)
			a.resp.Term = r.uvarint("term")
			a.resp.LastLog = r.uvarint("last log")
			a.resp.Success = r.byte("success") == 1
			a.resp.NoRetryBackoff = r.byte("no retry backoff") == 1
		default:
			r.fail("kind")
		}
		if r.err != nil {
			return nil, frameDone(r)
		}
		out = append(out, a)
	}
	return out, frameDone(r)
}

// readBeatFrame reads one frame and returns its payload.
func readBeatFrame(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxBeatFrame {
		return nil, fmt.Errorf("a frame of heartbeats of %d bytes, over %d", n, maxBeatFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	return p, nil
}

func appendHeader(buf []byte, h raft.RPCHeader) []byte {
	buf = binary.AppendVarint(buf, int64(h.ProtocolVersion))
	buf = appendBytes(buf, h.ID)
	return appendBytes(buf, h.Addr)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// frameCount reads the count of a frame's items, which cannot exceed the
// bytes left (each takes one or more).
func frameCount(r *reader) int {
	n := r.uvarint("count")
	if r.err == nil && n > uint64(len(r.p)) {
		r.fail("count")
		return 0
	}
	return int(n)
}

func readHeader(r *reader) raft.RPCHeader {
	v := r.varint("protocol version")
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(v), ID: r.bytes("id"), Addr: r.bytes("address")}
}

// frameDone reports the reader's first error, or bytes left over.
func frameDone(r *reader) error {
	if r.err == nil && len(r.p) != 0 {
		r.fail("end")
	}
	if r.err != nil {
		return fmt.Errorf("a frame of heartbeats: %w", r.err)
	}
	return nil
}
