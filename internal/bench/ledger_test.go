package bench

import (
	"strings"
	"testing"
	"time"
)

func TestBodyRoundTrip(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	body := encodeBody(msgKey{producer: 3, seq: 41}, "g7", at, 300)
	if len(body) != 300 {
		t.Fatalf("body is %d bytes, want 300", len(body))
	}
	k, g, got, ok := decodeBody(body)
	if !ok || k != (msgKey{3, 41}) || g != "g7" || !got.Equal(at) {
		t.Fatalf("decodeBody = %v %q %v %v", k, g, got, ok)
	}
	if _, _, _, ok := decodeBody("hello world"); ok {
		t.Fatal("decodeBody accepted a foreign body")
	}
}

func TestLedgerVerify(t *testing.T) {
	tests := []struct {
		name    string
		fifo    bool
		run     func(l *ledger)
		ok      bool
		problem string
	}{
		{
			name: "all received in order",
			fifo: true,
			run: func(l *ledger) {
				for i := 0; i < 3; i++ {
					l.sent(msgKey{0, i})
					l.received(msgKey{0, i}, "g")
				}
			},
			ok: true,
		},
		{
			name: "received before the acknowledgement was recorded",
			fifo: true,
			run: func(l *ledger) {
				l.received(msgKey{0, 0}, "g")
				l.sent(msgKey{0, 0})
			},
			ok: true,
		},
		{
			name: "lost message",
			fifo: true,
			run: func(l *ledger) {
				l.sent(msgKey{0, 0})
				l.sent(msgKey{0, 1})
				l.received(msgKey{0, 0}, "g")
			},
			problem: "never received",
		},
		{
			name: "duplicate on FIFO",
			fifo: true,
			run: func(l *ledger) {
				l.sent(msgKey{0, 0})
				l.received(msgKey{0, 0}, "g")
				l.received(msgKey{0, 0}, "g")
			},
			problem: "duplicate",
		},
		{
			name: "duplicate on standard is allowed",
			run: func(l *ledger) {
				l.sent(msgKey{0, 0})
				l.received(msgKey{0, 0}, "")
				l.received(msgKey{0, 0}, "")
			},
			ok: true,
		},
		{
			name: "out of group order",
			fifo: true,
			run: func(l *ledger) {
				l.sent(msgKey{1, 0})
				l.sent(msgKey{1, 1})
				l.received(msgKey{1, 1}, "g")
				l.received(msgKey{1, 0}, "g")
			},
			problem: "out of group order",
		},
		{
			name: "different producers in one group may interleave",
			fifo: true,
			run: func(l *ledger) {
				l.sent(msgKey{0, 5})
				l.sent(msgKey{1, 0})
				l.received(msgKey{1, 0}, "g")
				l.received(msgKey{0, 5}, "g")
			},
			ok: true,
		},
		{
			name:    "foreign message",
			fifo:    true,
			run:     func(l *ledger) { l.foreign() },
			problem: "did not send",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(tc.fifo)
			tc.run(l)
			v := l.verify()
			if v.OK != tc.ok {
				t.Fatalf("OK = %v, want %v (problems %v)", v.OK, tc.ok, v.Problems)
			}
			if tc.problem != "" && !strings.Contains(strings.Join(v.Problems, "\n"), tc.problem) {
				t.Fatalf("problems %v do not mention %q", v.Problems, tc.problem)
			}
		})
	}
}
