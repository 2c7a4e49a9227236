package replog

import (
	"encoding/binary"
	"net"
)

// frameConn is the connection a yamux session between two nodes writes
// to, one write per data frame. yamux's send loop writes a frame's 12-byte
// header and then its body in two calls, each a system call (and, over
// mutual TLS, a record) of its own; on a node of many idle shards, whose
// heartbeats are each a small frame, those writes were an eighth of its
// CPU. frameConn holds a data frame's header and writes it with the body
// that follows it. Every byte is written, in order: a header is held only
// until the next write, which the send loop, the one writer, makes at
// once.
type frameConn struct {
	net.Conn
	held    [yamuxHeaderSize]byte
	holding bool
	buf     []byte
}

// yamux's frame header: version, type, flags (2), stream id (4), length
// (4); type 0 is a data frame, whose length is its body's.
const (
	yamuxHeaderSize = 12
	yamuxTypeData   = 0
)

// frameCoalesceMax is the largest body written with its header: a larger
// one is written after it, as yamux would, rather than copied.
const frameCoalesceMax = 16 << 10

func (c *frameConn) Write(p []byte) (int, error) {
	if c.holding {
		c.holding = false
		if len(p) > frameCoalesceMax {
			if _, err := c.Conn.Write(c.held[:]); err != nil {
				return 0, err
			}
			return c.Conn.Write(p)
		}
		c.buf = append(append(c.buf[:0], c.held[:]...), p...)
		n, err := c.Conn.Write(c.buf)
		return max(n-yamuxHeaderSize, 0), err
	}
	if len(p) == yamuxHeaderSize && p[1] == yamuxTypeData && binary.BigEndian.Uint32(p[8:]) > 0 {
		copy(c.held[:], p)
		c.holding = true
		return len(p), nil
	}
	return c.Conn.Write(p)
}
