package integration

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go/aws/awserr"
	"github.com/aws/smithy-go"
)

// This file defines Client, one interface over the two SDK clients, so that
// a scenario is written once and run through both wire protocols. Its types
// carry only what the scenarios compare; the SDKs' own shapes stay in
// client_v1_test.go and client_v2_test.go.

// Attr is a message attribute.
type Attr struct {
	DataType string
	String   string
	Binary   []byte
}

// SendIn is one message to send. Delay is per message (nil: none given).
type SendIn struct {
	Body  string
	Group string
	Dedup string
	Delay *int32
	Attrs map[string]Attr
}

// SendOut is what a send returns.
type SendOut struct {
	ID, Seq, MD5Body, MD5Attrs string
}

// BatchSend is one entry of a SendMessageBatch.
type BatchSend struct {
	ID string
	SendIn
}

// BatchHandle is one entry of a DeleteMessageBatch or
// ChangeMessageVisibilityBatch.
type BatchHandle struct {
	ID, Handle string
}

// BatchFail is one failed entry of a batch.
type BatchFail struct {
	ID, Code    string
	SenderFault bool
}

// RecvIn is a ReceiveMessage. Zero Max means 1; nil Wait means the queue's
// wait time; AttemptID is the ReceiveRequestAttemptId. Every system and
// message attribute is asked for.
type RecvIn struct {
	Max        int32
	Wait       *int32
	Visibility *int32
	AttemptID  string
}

// Msg is a received message.
type Msg struct {
	ID, Body, Handle, MD5Body, MD5Attrs string
	// Sys holds the system attributes (SequenceNumber, MessageGroupId, ...).
	Sys   map[string]string
	Attrs map[string]Attr
}

// MoveTask is one entry of ListMessageMoveTasks.
type MoveTask struct {
	Handle, Status, Source, Dest string
	Moved                        int64
	ToMove                       *int64
	Rate                         *int32
}

// Client is an SQS client of one wire protocol.
type Client interface {
	// Proto names the client's protocol: "json" or "query".
	Proto() string

	CreateQueue(ctx context.Context, name string, attrs, tags map[string]string) (string, error)
	GetQueueURL(ctx context.Context, name string) (string, error)
	ListQueues(ctx context.Context, prefix string, max int32, token string) (urls []string, next string, err error)
	DeleteQueue(ctx context.Context, url string) error
	GetAttrs(ctx context.Context, url string, names ...string) (map[string]string, error)
	SetAttrs(ctx context.Context, url string, attrs map[string]string) error
	Purge(ctx context.Context, url string) error
	Tag(ctx context.Context, url string, tags map[string]string) error
	Untag(ctx context.Context, url string, keys ...string) error
	ListTags(ctx context.Context, url string) (map[string]string, error)
	AddPermission(ctx context.Context, url, label string, accounts, actions []string) error
	RemovePermission(ctx context.Context, url, label string) error

	Send(ctx context.Context, url string, in SendIn) (SendOut, error)
	SendBatch(ctx context.Context, url string, entries []BatchSend) (map[string]SendOut, []BatchFail, error)
	Receive(ctx context.Context, url string, in RecvIn) ([]Msg, error)
	Delete(ctx context.Context, url, handle string) error
	DeleteBatch(ctx context.Context, url string, entries []BatchHandle) (ok []string, fail []BatchFail, err error)
	ChangeVisibility(ctx context.Context, url, handle string, secs int32) error
	ChangeVisibilityBatch(ctx context.Context, url string, entries []BatchHandle, secs int32) (ok []string, fail []BatchFail, err error)

	ListDLQSources(ctx context.Context, url string, max int32, token string) (urls []string, next string, err error)
	StartMove(ctx context.Context, source, dest string, rate int32) (handle string, err error)
	CancelMove(ctx context.Context, handle string) (moved int64, err error)
	ListMoves(ctx context.Context, source string, max int32) ([]MoveTask, error)
}

// clients returns the two clients of env.
func clients(env *Env) []Client {
	return []Client{v2Client{env.V2}, v1Client{env.V1}}
}

// eachProtocol runs f once per wire protocol, each on a server of its own,
// in parallel subtests named "json" and "query". The calling test runs in
// parallel with the other tests.
func eachProtocol(t *testing.T, f func(t *testing.T, env *Env, c Client)) {
	t.Helper()
	t.Parallel()
	for _, name := range []string{"json", "query"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := Start(t)
			var c Client = v2Client{env.V2}
			if name == "query" {
				c = v1Client{env.V1}
			}
			f(t, env, c)
		})
	}
}

// ctxT returns a context that ends with the test or after 30 s.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// APIErr is an error answered by the server, in protocol-neutral form.
type APIErr struct {
	Code   string
	Status int
}

// apiErr extracts the error code and HTTP status from an error of either
// SDK. For AWS JSON the v2 SDK reports the code of the x-amzn-query-error
// header when the server sends one (SQS does), so both protocols report the
// Query code. ok is false if err is not an answer of the server.
func apiErr(err error) (APIErr, bool) {
	var out APIErr
	var v1 awserr.RequestFailure
	if errors.As(err, &v1) {
		return APIErr{Code: v1.Code(), Status: v1.StatusCode()}, true
	}
	var v2 smithy.APIError
	if !errors.As(err, &v2) {
		return out, false
	}
	out.Code = v2.ErrorCode()
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		out.Status = re.HTTPStatusCode()
	}
	return out, true
}

// wantErr fails the test unless err is a 4xx answer with one of the codes.
// A test names more than one code only where SQS's own code is not known;
// the choice is written down in the compatibility notes.
func wantErr(t *testing.T, err error, codes ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", codes)
	}
	e, ok := apiErr(err)
	if !ok {
		t.Fatalf("got %v, want an API error %v", err, codes)
	}
	if !slices.Contains(codes, e.Code) {
		t.Fatalf("got error code %q (HTTP %d: %v), want %v", e.Code, e.Status, err, codes)
	}
	if e.Status < 400 || e.Status > 499 {
		t.Fatalf("error %s came with HTTP %d, want a 4xx status", e.Code, e.Status)
	}
}

// must returns v, failing the test if err is set. It is called as
// must(f())(t) so that f's two results fill its parameters.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// ok fails the test on err.
func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func i32(v int32) *int32 { return &v }

// attrsMD5 is the MD5 of message attributes as SQS computes it: the
// attributes sorted by name, each encoded as its length-prefixed name, its
// length-prefixed data type, a transport byte (1 for String and Number, 2
// for Binary) and its length-prefixed value. The SDKs check only the body's
// MD5, so the tests check this one themselves.
func attrsMD5(attrs map[string]Attr) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	put := func(b []byte) {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(b)))
		h.Write(l[:])
		h.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		put([]byte(n))
		put([]byte(a.DataType))
		if isBinaryType(a.DataType) {
			h.Write([]byte{2})
			put(a.Binary)
		} else {
			h.Write([]byte{1})
			put([]byte(a.String))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// isBinaryType reports whether a message attribute data type ("Binary" or
// "Binary.custom") carries a binary value.
func isBinaryType(dataType string) bool {
	return dataType == "Binary" || len(dataType) > 7 && dataType[:7] == "Binary."
}

func bodyMD5(body string) string {
	sum := md5.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}
