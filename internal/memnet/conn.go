package memnet

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// stream is one direction of a connection: the bytes one end wrote and
// the other has not read yet, each write with the time it arrives.
type stream struct {
	mu     sync.Mutex
	chunks []chunk
	// last is the arrival of the newest chunk: a later write never
	// arrives before it, so the bytes keep their order.
	last time.Time
	// eof: the writer closed; the reader reads io.EOF once the chunks
	// are read.
	eof bool
	// reader is the end that reads this stream.
	reader *end
}

type chunk struct {
	b  []byte
	at time.Time
}

func newStream() *stream { return &stream{} }

// end is one end of a connection: what a node holds as a net.Conn.
type end struct {
	net           *Network
	local, remote string
	in, out       *stream
	peer          *end
	// wake is fired whenever this end's reader may have something new to
	// look at: bytes, an EOF, a reset, a close, a deadline, a partition.
	wake *signal

	mu         sync.Mutex
	closed     bool
	wasReset   bool
	readDL     time.Time
	writeDL    time.Time
	forgetOnce sync.Once
}

// errReset is what a reset connection answers.
var errReset = &net.OpError{Op: "read", Net: "memnet", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

// Read implements net.Conn.
func (e *end) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		// Taken before anything is looked at, so that a change made
		// after the look wakes the wait below.
		woken := e.wake.wait()
		e.mu.Lock()
		closed, reset, dl := e.closed, e.wasReset, e.readDL
		e.mu.Unlock()
		switch {
		case closed:
			return 0, e.opError("read", net.ErrClosed)
		case reset:
			return 0, errReset
		}
		now := time.Now()
		if !dl.IsZero() && !now.Before(dl) {
			return 0, e.opError("read", os.ErrDeadlineExceeded)
		}
		cut := e.net.Cut(e.local, e.remote)
		s := e.in
		s.mu.Lock()
		var next time.Time
		if len(s.chunks) > 0 && !cut {
			c := &s.chunks[0]
			if !now.Before(c.at) {
				n := copy(b, c.b)
				c.b = c.b[n:]
				if len(c.b) == 0 {
					s.chunks[0] = chunk{}
					s.chunks = s.chunks[1:]
				}
				s.mu.Unlock()
				return n, nil
			}
			next = c.at
		}
		if len(s.chunks) == 0 && s.eof {
			s.mu.Unlock()
			return 0, io.EOF
		}
		s.mu.Unlock()
		var timer *time.Timer
		var expired <-chan time.Time
		if until := earliest(next, dl); !until.IsZero() {
			timer = time.NewTimer(until.Sub(now))
			expired = timer.C
		}
		select {
		case <-woken:
		case <-expired:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// earliest is the earlier of two times, a zero time being none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case a.Before(b):
		return a
	}
	return b
}

// Write implements net.Conn: the bytes are queued for the other end.
func (e *end) Write(b []byte) (int, error) {
	e.mu.Lock()
	closed, reset, dl := e.closed, e.wasReset, e.writeDL
	e.mu.Unlock()
	switch {
	case closed:
		return 0, e.opError("write", net.ErrClosed)
	case reset:
		return 0, errReset
	case !dl.IsZero() && !time.Now().Before(dl):
		return 0, e.opError("write", os.ErrDeadlineExceeded)
	}
	if len(b) == 0 {
		return 0, nil
	}
	e.peer.mu.Lock()
	gone := e.peer.closed || e.peer.wasReset
	e.peer.mu.Unlock()
	if gone {
		// The other end closed: TCP answers a write with a reset.
		e.reset()
		return 0, errReset
	}
	at := e.net.deliverAt(time.Now())
	s := e.out
	s.mu.Lock()
	if at.Before(s.last) {
		at = s.last
	}
	s.last = at
	s.chunks = append(s.chunks, chunk{b: append([]byte(nil), b...), at: at})
	s.mu.Unlock()
	s.reader.wake.fire()
	return len(b), nil
}

// Close implements net.Conn: the other end reads what was written, then
// io.EOF.
func (e *end) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.out.mu.Lock()
	e.out.eof = true
	e.out.mu.Unlock()
	e.wake.fire()
	e.peer.wake.fire()
	e.forget()
	return nil
}

// reset ends the connection at both ends with an error; what was queued
// is lost.
func (e *end) reset() {
	for _, x := range []*end{e, e.peer} {
		x.mu.Lock()
		x.wasReset = true
		x.mu.Unlock()
		x.in.mu.Lock()
		x.in.chunks = nil
		x.in.mu.Unlock()
		x.wake.fire()
		x.forget()
	}
}

func (e *end) forget() { e.forgetOnce.Do(func() { e.net.forget(e) }) }

func (e *end) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "memnet", Source: addrOf(e.local), Addr: addrOf(e.remote), Err: err}
}

// LocalAddr implements net.Conn: the node's own address.
func (e *end) LocalAddr() net.Addr { return addrOf(e.local) }

// RemoteAddr implements net.Conn: the other node's address.
func (e *end) RemoteAddr() net.Addr { return addrOf(e.remote) }

// SetDeadline implements net.Conn.
func (e *end) SetDeadline(t time.Time) error {
	e.mu.Lock()
	e.readDL, e.writeDL = t, t
	e.mu.Unlock()
	e.wake.fire()
	return nil
}

// SetReadDeadline implements net.Conn.
func (e *end) SetReadDeadline(t time.Time) error {
	e.mu.Lock()
	e.readDL = t
	e.mu.Unlock()
	e.wake.fire()
	return nil
}

// SetWriteDeadline implements net.Conn.
func (e *end) SetWriteDeadline(t time.Time) error {
	e.mu.Lock()
	e.writeDL = t
	e.mu.Unlock()
	return nil
}

// IsReset reports whether err is a connection's reset by the network.
func IsReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
