package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair listens at b and dials it from a, and returns both ends.
func pair(t *testing.T, n *Network, a, b string) (client, server net.Conn) {
	t.Helper()
	ln, err := n.Node(b).Listen(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	client, err = n.Node(a).Dial(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return client, <-accepted
}

// readAll reads exactly want bytes from c within a second.
func readFull(t *testing.T, c net.Conn, want int) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	b := make([]byte, want)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", want, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return string(b)
}

// TestBytesArriveInOrderAfterTheLatency writes with a random latency per
// write: the reader gets every byte, in order, none before the least
// latency.
func TestBytesArriveInOrderAfterTheLatency(t *testing.T) {
	n := New(1)
	n.SetLatency(20*time.Millisecond, 40*time.Millisecond)
	c, s := pair(t, n, "a:1", "b:1")
	start := time.Now()
	for _, w := range []string{"one ", "two ", "three"} {
		if _, err := c.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFull(t, s, len("one two three")); got != "one two three" {
		t.Fatalf("read %q", got)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Fatalf("the bytes arrived after %v, before the least latency", took)
	}
	// The other way too.
	if _, err := s.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	if got := readFull(t, c, 4); got != "back" {
		t.Fatalf("read %q", got)
	}
}

// TestPartitionHoldsBytesUntilHealed partitions the two nodes: a write
// still succeeds, the reader's deadline passes with nothing read, a dial
// waits until its context ends; after Heal the bytes are read and dials
// connect.
func TestPartitionHoldsBytesUntilHealed(t *testing.T) {
	n := New(1)
	c, s := pair(t, n, "a:1", "b:1")
	n.Partition("a:1", "b:1")
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatalf("a write across a partition: %v", err)
	}
	_ = s.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if _, err := s.Read(make([]byte, 4)); !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read across a partition: %v, want its deadline", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := n.Node("a:1").Dial(ctx, "b:1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a dial across a partition: %v, want its context's end", err)
	}
	if !n.Cut("b:1", "a:1") {
		t.Fatal("Cut does not see the partition the other way")
	}
	n.Heal()
	if got := readFull(t, s, 4); got != "held" {
		t.Fatalf("read %q after the heal", got)
	}
}

// TestPartitionedReaderWakesAtHeal blocks a reader across a partition
// without a deadline: Heal alone must wake it.
func TestPartitionedReaderWakesAtHeal(t *testing.T) {
	n := New(1)
	c, s := pair(t, n, "a:1", "b:1")
	n.Partition("a:1", "b:1")
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 2)
		_, err := io.ReadFull(s, b)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(b)
	}()
	if _, err := c.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		t.Fatalf("read %q across the partition", g)
	case <-time.After(50 * time.Millisecond):
	}
	n.Heal()
	select {
	case g := <-got:
		if g != "hi" {
			t.Fatalf("read %q", g)
		}
	case <-time.After(time.Second):
		t.Fatal("the reader did not wake at the heal")
	}
}

// TestCloseAndReset checks the ends of a connection: a close lets the
// other end read what was written, then EOF, and fails its next write
// with a reset; a reset fails both ends at once and drops what was
// queued.
func TestCloseAndReset(t *testing.T) {
	n := New(1)
	c, s := pair(t, n, "a:1", "b:1")
	if _, err := c.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got := readFull(t, s, 3); got != "bye" {
		t.Fatalf("read %q", got)
	}
	if _, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after the other end closed: %v, want EOF", err)
	}
	if _, err := s.Write([]byte("x")); !IsReset(err) {
		t.Fatalf("write to a closed end: %v, want a reset", err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read of a closed end: %v", err)
	}

	c2, s2 := pair(t, n, "a:1", "c:1")
	if _, err := c2.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	n.ResetNode("a:1")
	if _, err := s2.Read(make([]byte, 4)); !IsReset(err) {
		t.Fatalf("read after a reset: %v, want a reset (the queued bytes are lost)", err)
	}
	if _, err := c2.Write([]byte("x")); !IsReset(err) {
		t.Fatalf("write after a reset: %v", err)
	}
	if n.Conns() != 0 {
		t.Fatalf("%d connections open after all closed or reset", n.Conns())
	}
}

// TestDownNodeIsRefused takes a node down: its connections reset, dials
// from it and to it are refused, until it is up again.
func TestDownNodeIsRefused(t *testing.T) {
	n := New(1)
	c, _ := pair(t, n, "a:1", "b:1")
	n.Down("a:1")
	if _, err := c.Read(make([]byte, 1)); !IsReset(err) {
		t.Fatalf("read on a downed node's connection: %v", err)
	}
	if _, err := n.Node("a:1").Dial(context.Background(), "b:1"); !errors.Is(err, errRefused) {
		t.Fatalf("dial from a downed node: %v", err)
	}
	ln, err := n.Node("a:1").Listen("a:1")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := n.Node("b:1").Dial(context.Background(), "a:1"); !errors.Is(err, errRefused) {
		t.Fatalf("dial to a downed node: %v", err)
	}
	n.Up("a:1")
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	if _, err := n.Node("b:1").Dial(context.Background(), "a:1"); err != nil {
		t.Fatalf("dial to a node up again: %v", err)
	}
}

// TestDialRefusedWhereNothingListens dials an address nobody listens at,
// and one whose listener closed, and listens there again.
func TestDialRefusedWhereNothingListens(t *testing.T) {
	n := New(1)
	if _, err := n.Node("a:1").Dial(context.Background(), "b:1"); !errors.Is(err, errRefused) {
		t.Fatalf("dial to nothing: %v", err)
	}
	ln, err := n.Node("b:1").Listen("b:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Node("b:1").Listen("b:1"); err == nil {
		t.Fatal("two listeners at one address")
	}
	if _, err := n.Node("a:1").Listen("b:1"); err == nil {
		t.Fatal("a node listened at another's address")
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept on a closed listener: %v", err)
	}
	if _, err := n.Node("a:1").Dial(context.Background(), "b:1"); !errors.Is(err, errRefused) {
		t.Fatalf("dial to a closed listener: %v", err)
	}
	ln, err = n.Node("b:1").Listen("b:1")
	if err != nil {
		t.Fatalf("listen again after a close: %v", err)
	}
	ln.Close()
}

// TestResetOneTakesSomeConnection resets connections one at a time until
// none is left.
func TestResetOneTakesSomeConnection(t *testing.T) {
	n := New(1)
	pair(t, n, "a:1", "b:1")
	pair(t, n, "a:1", "c:1")
	for i := 2; i > 0; i-- {
		if n.Conns() != i {
			t.Fatalf("%d connections, want %d", n.Conns(), i)
		}
		if !n.ResetOne() {
			t.Fatal("ResetOne found nothing to reset")
		}
	}
	if n.ResetOne() {
		t.Fatal("ResetOne reset a connection in an empty network")
	}
}
