package replog

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHelloClusterIDs: the cluster ids at a hello (cluster_id.go), between
// two muxes whose checks say what their states record. Two ids that
// differ part both ways, stopping neither node; a node that records none
// is let in only as a member and reaches anyone; a dialer or acceptor that
// says an older entry format is neither asked nor expected to ask.
func TestHelloClusterIDs(t *testing.T) {
	idA, idB := fmt.Sprintf("%032x", 0xa), fmt.Sprintf("%032x", 0xb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// node starts a mux whose state records cluster, members (id to
	// incarnation) and nothing else of note.
	node := func(t *testing.T, id, cluster string, members map[string]string, fenced *atomic.Int32) *sessionNode {
		n := startSessionNode(t, id, "127.0.0.1:0", 0, nil)
		t.Cleanup(n.stop)
		n.mux.checks.Store(&peerChecks{
			recorded: func(id string) (string, bool) {
				inc, ok := members[id]
				return inc, ok
			},
			expectedAt: func(string) string { return "" },
			memberAt:   func(string) string { return "" },
			learned:    func(string, string, byte) {},
			fence:      func(string) { fenced.Add(1) },
			tooOld:     func(byte) string { return "" },
			outdated:   func(string) { fenced.Add(1) },
			stateIndex: func() uint64 { return 5 },
			clusterID:  func() string { return cluster },
		})
		return n
	}
	// A session node's incarnation (startSessionNode).
	incOf := func(id string) string { return fmt.Sprintf("%x", md5.Sum([]byte(id))) }
	members := map[string]string{"node-1": incOf("node-1"), "node-2": incOf("node-2")}

	for _, tc := range []struct {
		name             string
		dialer, acceptor string // cluster ids, "" for none recorded
		dialerMember     bool   // the acceptor's state names the dialer
		wantOther        bool   // refused as a node of another cluster
	}{
		{"one cluster", idA, idA, true, false},
		{"two clusters", idB, idA, true, true},
		{"two clusters, the dialer no member", idB, idA, false, true},
		{"a member that records no id yet", "", idA, true, false},
		{"a stranger that records no id", "", idA, false, true},
		{"an acceptor that records no id yet", idA, "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fenced atomic.Int32
			accMembers := map[string]string{"node-1": members["node-1"]}
			if tc.dialerMember {
				accMembers["node-2"] = members["node-2"]
			}
			acceptor := node(t, "node-1", tc.acceptor, accMembers, &fenced)
			dialer := node(t, "node-2", tc.dialer, members, &fenced)
			conn, err := dialer.mux.dial(ctx, acceptor.mux.advert.String(), muxHTTP)
			if err == nil {
				conn.Close()
			}
			switch {
			case tc.wantOther && !errors.Is(err, ErrOtherCluster):
				t.Fatalf("dial: %v; want ErrOtherCluster", err)
			case !tc.wantOther && err != nil:
				t.Fatalf("dial: %v; want a connection", err)
			}
			if tc.dialer != "" && tc.acceptor != "" && tc.dialer != tc.acceptor {
				// And the other way.
				if conn, err := acceptor.mux.dial(ctx, dialer.mux.advert.String(), muxHTTP); !errors.Is(err, ErrOtherCluster) {
					if err == nil {
						conn.Close()
					}
					t.Fatalf("the dial back: %v; want ErrOtherCluster", err)
				}
			}
			if fenced.Load() != 0 {
				t.Fatal("a node of another cluster stopped a node")
			}
		})
	}

	t.Run("a dialer of an older format is not asked", func(t *testing.T) {
		var fenced atomic.Int32
		acceptor := node(t, "node-1", idA, members, &fenced)
		conn, err := net.Dial("tcp", acceptor.mux.advert.String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		hello := fmt.Sprintf("%cnode-2 %s - %d\n", muxHTTPHello, members["node-2"], minVersionClusterID-1)
		if _, err := io.WriteString(conn, hello); err != nil {
			t.Fatal(err)
		}
		if line, err := readLine(conn); err != nil || !strings.HasPrefix(line, "ok node-1 ") {
			t.Fatalf("the acceptor answered %q (%v); want ok, as a fifoq before cluster ids expects", line, err)
		}
	})

	// rawHello dials acceptor as a dialer of this fifoq that says
	// cluster in answer to its question, and returns the acceptor's next
	// line.
	rawHello := func(t *testing.T, acceptor *sessionNode, inc, cluster string) (net.Conn, string) {
		conn, err := net.Dial("tcp", acceptor.mux.advert.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := io.WriteString(conn, fmt.Sprintf("%cnode-2 %s - %d\n", muxHTTPHello, inc, minVersionClusterID)); err != nil {
			t.Fatal(err)
		}
		if line, err := readLine(conn); err != nil || line != "cluster? "+idA {
			t.Fatalf("the acceptor said %q (%v); want its question, with its cluster's id", line, err)
		}
		if _, err := io.WriteString(conn, "cluster "+cluster+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := readLine(conn)
		if err != nil {
			t.Fatal(err)
		}
		return conn, line
	}
	t.Run("the acceptor refuses another cluster by itself", func(t *testing.T) {
		var fenced atomic.Int32
		acceptor := node(t, "node-1", idA, members, &fenced)
		if _, line := rawHello(t, acceptor, members["node-2"], idB); !strings.HasPrefix(line, "other-cluster ") {
			t.Fatalf("the acceptor answered %q to a node of another cluster; want other-cluster", line)
		}
	})
	t.Run("a dialer that records no id is not believed further along", func(t *testing.T) {
		var fenced atomic.Int32
		// The acceptor records another incarnation of node-2; the dialer
		// says its state is far ahead and records its own.
		acceptor := node(t, "node-1", idA, map[string]string{"node-1": members["node-1"], "node-2": fmt.Sprintf("%032x", 2)}, &fenced)
		conn, line := rawHello(t, acceptor, members["node-2"], noClusterID)
		if !strings.HasPrefix(line, "applied? ") {
			t.Fatalf("the acceptor answered %q; want its question of how far the dialer's state is", line)
		}
		if _, err := io.WriteString(conn, "applied 99 self\n"); err != nil {
			t.Fatal(err)
		}
		if line, err := readLine(conn); err != nil || !strings.HasPrefix(line, "fenced-you ") {
			t.Fatalf("the acceptor answered %q (%v); want fenced-you: a state ahead of one that records the id records it too", line, err)
		}
	})

	// acceptorSaying listens for one connection and answers its hello
	// with reply, as a node of whatever fifoq reply is of; with hangUp,
	// it then reads one line and closes the connection.
	acceptorSaying := func(t *testing.T, reply string, hangUp bool) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			var kind [1]byte
			if _, err := conn.Read(kind[:]); err != nil {
				return
			}
			if _, err := readLine(conn); err != nil {
				return
			}
			_, _ = io.WriteString(conn, reply)
			if hangUp {
				_, _ = readLine(conn)
				return
			}
			_, _ = io.Copy(io.Discard, conn)
		}()
		return ln.Addr().String()
	}
	t.Run("an acceptor of an older format does not ask", func(t *testing.T) {
		var fenced atomic.Int32
		dialer := node(t, "node-2", idA, members, &fenced)
		addr := acceptorSaying(t, fmt.Sprintf("ok node-1 %s %d\n", members["node-1"], minVersionClusterID-1), false)
		conn, err := dialer.mux.dial(ctx, addr, muxHTTP)
		if err != nil {
			t.Fatalf("a node of an older fifoq, which cannot ask, was refused: %v", err)
		}
		conn.Close()
	})
	t.Run("an acceptor that reads the ids must ask", func(t *testing.T) {
		var fenced atomic.Int32
		dialer := node(t, "node-2", idA, members, &fenced)
		addr := acceptorSaying(t, fmt.Sprintf("ok node-1 %s %d\n", members["node-1"], minVersionClusterID), false)
		if conn, err := dialer.mux.dial(ctx, addr, muxHTTP); err == nil {
			conn.Close()
			t.Fatal("a node that reads cluster ids said ok without asking, and was believed")
		}
	})
	t.Run("a node that asked is never dialed without a hello", func(t *testing.T) {
		var fenced atomic.Int32
		dialer := node(t, "node-2", idA, members, &fenced)
		addr := acceptorSaying(t, "cluster? "+idA+"\n", true)
		if conn, err := dialer.mux.dial(ctx, addr, muxHTTP); err == nil || errors.Is(err, io.EOF) {
			if conn != nil {
				conn.Close()
			}
			t.Fatalf("dial: %v; want an error that does not take the node for a fifoq from before hellos", err)
		}
		if _, legacy := dialer.mux.legacy.Load(addr); legacy {
			t.Fatal("a node that asked the cluster's id is dialed without a hello from now on")
		}
	})
}
