package replog

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"testing"
)

// writeRecorder is a net.Conn that records each write.
type writeRecorder struct {
	net.Conn
	writes [][]byte
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

// yamuxHeader is a frame header of type typ whose length field is n.
func yamuxHeader(typ byte, n uint32) []byte {
	h := make([]byte, yamuxHeaderSize)
	h[1] = typ
	binary.BigEndian.PutUint32(h[4:], 7)
	binary.BigEndian.PutUint32(h[8:], n)
	return h
}

// TestFrameConnWritesAFrameOnce: a data frame's header and a small body
// go out in one write; every other frame as it came; the bytes, in order,
// are those yamux wrote.
func TestFrameConnWritesAFrameOnce(t *testing.T) {
	const windowUpdate, ping = 1, 2
	small, large := bytes.Repeat([]byte("s"), 100), bytes.Repeat([]byte("L"), frameCoalesceMax+1)
	writes := [][]byte{
		yamuxHeader(yamuxTypeData, uint32(len(small))), small,
		yamuxHeader(windowUpdate, 1<<18),
		yamuxHeader(ping, 0),
		yamuxHeader(yamuxTypeData, 0), // a close or open: no body
		yamuxHeader(yamuxTypeData, uint32(len(large))), large,
		yamuxHeader(yamuxTypeData, uint32(len(small))), small,
	}
	rec := &writeRecorder{}
	c := &frameConn{Conn: rec}
	var want []byte
	for _, p := range writes {
		n, err := c.Write(p)
		if err != nil || n != len(p) {
			t.Fatalf("Write of %d bytes: %d, %v", len(p), n, err)
		}
		want = append(want, p...)
	}
	if got := bytes.Join(rec.writes, nil); !bytes.Equal(got, want) {
		t.Fatalf("the bytes written differ from yamux's")
	}
	var sizes []int
	for _, w := range rec.writes {
		sizes = append(sizes, len(w))
	}
	wantSizes := []int{12 + 100, 12, 12, 12, 12, len(large), 12 + 100}
	if !slices.Equal(sizes, wantSizes) {
		t.Fatalf("writes of %v bytes, want %v", sizes, wantSizes)
	}
}
