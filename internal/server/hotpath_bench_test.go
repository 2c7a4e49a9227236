package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// BenchmarkHotPath times the server's own work for the requests of a
// FIFO send/receive/delete workload, as an AWS SDK for Go sends them
// (AWS JSON, unverified signature headers included): the handler is driven
// in process with a minimal ResponseWriter, so ns/op and allocs/op are the
// server's share of a request without the socket's.
//
//	go test ./internal/server/ -run '^$' -bench HotPath -benchmem -count 6
func BenchmarkHotPath(b *testing.B) {
	b.Run("SendMessage", func(b *testing.B) {
		h := newHotBench(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.do(b, "SendMessage", h.sendBody(i))
		}
	})
	b.Run("SendMessageBatch10", func(b *testing.B) {
		h := newHotBench(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.do(b, "SendMessageBatch", h.sendBatchBody(i))
		}
	})
	b.Run("Cycle", func(b *testing.B) {
		// One send, one receive of it and one delete per op.
		h := newHotBench(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.do(b, "SendMessage", h.sendBody(i))
			out := h.do(b, "ReceiveMessage", h.recvBody)
			handle := receiptHandleOf(b, out)
			h.do(b, "DeleteMessage", `{"QueueUrl":"`+h.url+`","ReceiptHandle":"`+handle+`"}`)
		}
	})
}

// hotBench is one server with one FIFO queue and a reusable request.
type hotBench struct {
	srv      *Server
	handler  http.Handler
	url      string
	recvBody string
	req      *http.Request
	w        *discardWriter
	body     bytes.Reader
}

func newHotBench(b *testing.B) *hotBench {
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	mustDoB(b, srv, &api.CreateQueueRequest{QueueName: "bench.fifo", Attributes: map[string]string{"FifoQueue": "true", "VisibilityTimeout": "60"}})
	h := &hotBench{srv: srv, handler: srv.Handler(), url: "http://127.0.0.1:19975/" + testAccount + "/bench.fifo", w: &discardWriter{h: http.Header{}}}
	h.recvBody = `{"MaxNumberOfMessages":1,"MessageSystemAttributeNames":["All"],"QueueUrl":"` + h.url + `","WaitTimeSeconds":0}`
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:19975/", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Host = "127.0.0.1:19975"
	req.RemoteAddr = "127.0.0.1:40000"
	req.RequestURI = "/"
	for k, v := range map[string]string{
		"Content-Type":          "application/x-amz-json-1.0",
		"User-Agent":            "aws-sdk-go-v2/1.36.3 ua/2.1 os/linux lang/go#1.24 md/GOOS#linux md/GOARCH#amd64 api/sqs#1.38.1 m/E,g",
		"X-Amz-Query-Mode":      "true",
		"Amz-Sdk-Invocation-Id": "c0a1a6f4-4b0e-4e47-8b5d-9f3a1f0e7b11",
		"Amz-Sdk-Request":       "attempt=1; max=3",
		"X-Amz-Date":            "20261126T023000Z",
		"Authorization":         "AWS4-HMAC-SHA256 Credential=test/20261126/us-east-1/sqs/aws4_request, SignedHeaders=amz-sdk-invocation-id;amz-sdk-request;content-length;content-type;host;x-amz-date;x-amz-query-mode;x-amz-target, Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"Accept-Encoding":       "gzip",
	} {
		req.Header.Set(k, v)
	}
	h.req = req
	return h
}

func (h *hotBench) sendBody(i int) string {
	n := strconv.Itoa(i)
	return `{"MessageBody":"` + strings.Repeat("x", 256) + `","MessageDeduplicationId":"d` + n + `","MessageGroupId":"g` + strconv.Itoa(i%64) + `","QueueUrl":"` + h.url + `"}`
}

func (h *hotBench) sendBatchBody(i int) string {
	var sb strings.Builder
	sb.WriteString(`{"Entries":[`)
	for j := range 10 {
		if j > 0 {
			sb.WriteByte(',')
		}
		n := strconv.Itoa(i*10 + j)
		sb.WriteString(`{"Id":"e` + strconv.Itoa(j) + `","MessageBody":"` + strings.Repeat("x", 256) + `","MessageDeduplicationId":"d` + n + `","MessageGroupId":"g` + strconv.Itoa((i*10+j)%64) + `"}`)
	}
	sb.WriteString(`],"QueueUrl":"` + h.url + `"}`)
	return sb.String()
}

// do serves one request and returns its answer's body.
func (h *hotBench) do(b *testing.B, action, body string) []byte {
	h.body.Reset([]byte(body))
	h.req.Body = io.NopCloser(&h.body)
	h.req.ContentLength = int64(len(body))
	h.req.Header["X-Amz-Target"] = []string{"AmazonSQS." + action}
	h.req.Header["Content-Length"] = []string{strconv.Itoa(len(body))}
	h.w.reset()
	h.handler.ServeHTTP(h.w, h.req)
	if h.w.status != http.StatusOK {
		b.Fatalf("%s: %d %s", action, h.w.status, h.w.buf.Bytes())
	}
	return h.w.buf.Bytes()
}

// receiptHandleOf finds the receipt handle in a receive's answer without
// encoding/json, whose cost would blur the server's.
func receiptHandleOf(b *testing.B, out []byte) string {
	const member = `"ReceiptHandle":"`
	i := bytes.Index(out, []byte(member))
	if i < 0 {
		b.Fatalf("receive answered %s", out)
	}
	rest := out[i+len(member):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		b.Fatalf("receive answered %s", out)
	}
	return string(rest[:end])
}

// discardWriter is a ResponseWriter that keeps the last answer's status
// and body, reused from request to request.
type discardWriter struct {
	h      http.Header
	status int
	buf    bytes.Buffer
}

func (w *discardWriter) reset() {
	clear(w.h)
	w.status = 0
	w.buf.Reset()
}

func (w *discardWriter) Header() http.Header { return w.h }

func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.buf.Write(p)
}
