package server

import (
	"context"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/testenv"
)

// panickingLog is a real in-memory log that panics when asked to create
// the queue "boom": a stand-in for a bug anywhere below the HTTP handler.
type panickingLog struct{ *replog.Memory }

func (l panickingLog) Apply(ctx context.Context, cmd *engine.Command) (api.Response, error) {
	if r, ok := cmd.Request.(*api.CreateQueueRequest); ok && r.QueueName == "boom" {
		panic("injected bug")
	}
	return l.Memory.Apply(ctx, cmd)
}

// TestPanicCostsOneRequest checks that a panic while serving a request
// becomes a 500 InternalFailure naming the request id, is logged with that
// id and its stack, and leaves the server serving the next request.
func TestPanicCostsOneRequest(t *testing.T) {
	var logs testenv.SyncBuffer
	srv, err := New(Config{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Log:    panickingLog{replog.NewMemory(engine.Config{Region: DefaultRegion})},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-served
	})
	base := "http://" + ln.Addr().String()

	code, body := call(t, base, "CreateQueue", `{"QueueName":"boom"}`)
	if code != 500 || !strings.Contains(body, "InternalFailure") {
		t.Fatalf("a panicking request answered %d %s, want 500 InternalFailure", code, body)
	}
	id := regexp.MustCompile(`request id ([0-9a-f-]{36})`).FindStringSubmatch(body)
	if id == nil {
		t.Fatalf("the 500 does not name the request id: %s", body)
	}
	logged := logs.String()
	if !strings.Contains(logged, "panic serving request") || !strings.Contains(logged, id[1]) ||
		!strings.Contains(logged, "injected bug") || !strings.Contains(logged, "panic_test.go") {
		t.Fatalf("the panic is not logged with its request id %s, value and stack:\n%s", id[1], logged)
	}

	if code, body := call(t, base, "CreateQueue", `{"QueueName":"fine"}`); code != 200 {
		t.Fatalf("the request after the panic answered %d %s", code, body)
	}
}
