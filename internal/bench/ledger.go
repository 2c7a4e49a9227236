package bench

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// msgKey identifies a bench message: its producer and that producer's number for it.
type msgKey struct {
	producer int
	seq      int
}

// minBodySize is room for the header encodeBody writes.
const minBodySize = 64

// encodeBody writes the message's identity and send time at the start of
// its body and pads it to size.
func encodeBody(k msgKey, group string, at time.Time, size int) string {
	var b strings.Builder
	b.Grow(size)
	fmt.Fprintf(&b, "fifoq-bench p=%d s=%d g=%s t=%d ", k.producer, k.seq, group, at.UnixNano())
	for b.Len() < size {
		b.WriteByte('x')
	}
	return b.String()
}

// decodeBody reads back what encodeBody wrote.
func decodeBody(body string) (k msgKey, group string, at time.Time, ok bool) {
	fields := strings.Fields(body)
	if len(fields) < 5 || fields[0] != "fifoq-bench" {
		return k, "", at, false
	}
	var err error
	get := func(f, prefix string) string {
		if !strings.HasPrefix(f, prefix) {
			err = fmt.Errorf("missing %s", prefix)
			return ""
		}
		return f[len(prefix):]
	}
	p, s, g, t := get(fields[1], "p="), get(fields[2], "s="), get(fields[3], "g="), get(fields[4], "t=")
	if err != nil {
		return k, "", at, false
	}
	var e1, e2, e3 error
	k.producer, e1 = strconv.Atoi(p)
	k.seq, e2 = strconv.Atoi(s)
	ns, e3 := strconv.ParseInt(t, 10, 64)
	if e1 != nil || e2 != nil || e3 != nil {
		return k, "", at, false
	}
	return k, g, time.Unix(0, ns), true
}

// ledger records what was acknowledged and what was received, and checks
// them against each other.
//
// It keeps two bits per message (acknowledged, received) in one bit set per
// producer, indexed by the producer's sequence number, which runs 0, 1, 2,
// ... without gaps: a soak of hours sends tens of millions of messages, and
// a map entry per message would make the bench, not the server, the thing
// whose memory grows.
type ledger struct {
	fifo bool

	mu        sync.Mutex
	producers []producerBits
	acks      int            // distinct messages acknowledged
	dups      int            // deliveries beyond the first
	pending   int            // acknowledged, not yet received
	lastSeq   map[string]int // group/producer -> last seq received
	order     []string       // order violations, first few
	orderN    int
	foreignN  int
}

// producerBits is one producer's acknowledged and received sets.
type producerBits struct {
	acked, seen bitSet
}

// bitSet is a growable set of non-negative integers.
type bitSet []uint64

func (b bitSet) has(i int) bool {
	w := i / 64
	return w < len(b) && b[w]&(1<<(uint(i)%64)) != 0
}

func (b *bitSet) set(i int) {
	w := i / 64
	for w >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[w] |= 1 << (uint(i) % 64)
}

func newLedger(fifo bool) *ledger {
	return &ledger{fifo: fifo, lastSeq: map[string]int{}}
}

func (l *ledger) bits(k msgKey) *producerBits {
	for k.producer >= len(l.producers) {
		l.producers = append(l.producers, producerBits{})
	}
	return &l.producers[k.producer]
}

func (l *ledger) sent(k msgKey) {
	if k.producer < 0 || k.seq < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bits(k)
	if b.acked.has(k.seq) {
		return
	}
	b.acked.set(k.seq)
	l.acks++
	// The consumer may have seen the message before the producer saw its
	// acknowledgement.
	if !b.seen.has(k.seq) {
		l.pending++
	}
}

func (l *ledger) received(k msgKey, group string) {
	if k.producer < 0 || k.seq < 0 {
		l.foreign()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bits(k)
	if b.seen.has(k.seq) {
		l.dups++
		return
	}
	b.seen.set(k.seq)
	if b.acked.has(k.seq) {
		l.pending--
	}
	if group == "" {
		return
	}
	// Within a group, one producer's messages must arrive in the order it
	// sent them: it waited for each acknowledgement before the next send.
	stream := group + "/" + strconv.Itoa(k.producer)
	if last, ok := l.lastSeq[stream]; ok && k.seq <= last {
		l.orderN++
		if len(l.order) < 5 {
			l.order = append(l.order, fmt.Sprintf("group %s producer %d: message %d after %d", group, k.producer, k.seq, last))
		}
	}
	l.lastSeq[stream] = k.seq
}

func (l *ledger) foreign() {
	l.mu.Lock()
	l.foreignN++
	l.mu.Unlock()
}

func (l *ledger) outstanding() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending
}

// Verification is the outcome of checking received against acknowledged.
type Verification struct {
	// Acknowledged counts distinct messages whose send was acknowledged.
	Acknowledged int `json:"acknowledged"`
	// Lost counts acknowledged messages never received.
	Lost int `json:"lost"`
	// Duplicates counts deliveries beyond the first of a message.
	Duplicates int `json:"duplicates"`
	// Unacknowledged counts messages received whose send was never
	// acknowledged (cut off at the end of the run): allowed.
	Unacknowledged int `json:"unacknowledged"`
	// OrderViolations counts messages received before an earlier message
	// of the same group and producer (FIFO and fair queues with groups).
	OrderViolations int `json:"order_violations"`
	// Foreign counts messages that the bench did not send.
	Foreign int `json:"foreign"`
	// Problems describes the failures, if any.
	Problems []string `json:"problems,omitempty"`
	// OK is true when nothing was lost and, for FIFO queues, nothing was
	// duplicated or out of order.
	OK bool `json:"ok"`
}

func (l *ledger) verify() Verification {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := Verification{Acknowledged: l.acks, Duplicates: l.dups, OrderViolations: l.orderN, Foreign: l.foreignN}
	var lost []msgKey
	for p, b := range l.producers {
		n := max(len(b.acked), len(b.seen)) * 64
		for seq := 0; seq < n; seq++ {
			acked, seen := b.acked.has(seq), b.seen.has(seq)
			switch {
			case acked && !seen:
				v.Lost++
				if len(lost) < 5 {
					lost = append(lost, msgKey{producer: p, seq: seq})
				}
			case seen && !acked:
				v.Unacknowledged++
			}
		}
	}
	if v.Lost > 0 {
		v.Problems = append(v.Problems, fmt.Sprintf("%d acknowledged messages never received (e.g. %v)", v.Lost, lost))
	}
	if l.fifo && v.Duplicates > 0 {
		v.Problems = append(v.Problems, fmt.Sprintf("%d duplicate deliveries on a FIFO queue", v.Duplicates))
	}
	if v.OrderViolations > 0 && l.fifo {
		v.Problems = append(v.Problems, fmt.Sprintf("%d messages out of group order: %s", v.OrderViolations, strings.Join(l.order, "; ")))
	}
	if v.Foreign > 0 {
		v.Problems = append(v.Problems, fmt.Sprintf("%d messages the bench did not send", v.Foreign))
	}
	v.OK = len(v.Problems) == 0
	return v
}
