// Round trips through the real AWS SDKs: aws-sdk-go v1.44.300, whose SQS
// client speaks AWS Query, and aws-sdk-go-v2/service/sqs, which speaks AWS
// JSON. Every action goes from the SDK's typed input through the wire to
// Decode, and from WriteResponse through the wire to the SDK's typed output.

package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	"github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/api"
)

// sdkServer answers SQS requests with the result or error it is told to,
// and keeps what it decoded.
type sdkServer struct {
	*httptest.Server
	mu        sync.Mutex
	protocol  Protocol
	decoded   api.Request
	decodeErr *api.Error
	result    api.Response
	err       *api.Error
}

func newSDKServer(t *testing.T) *sdkServer {
	s := &sdkServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		s.protocol = Detect(r)
		action, req, decodeErr := Decode(s.protocol, r, body)
		s.decoded, s.decodeErr = req, decodeErr
		switch {
		case decodeErr != nil:
			WriteError(w, s.protocol, decodeErr, testRequestID)
		case s.err != nil:
			WriteError(w, s.protocol, s.err, testRequestID)
		default:
			WriteResponse(w, s.protocol, action, s.result, testRequestID)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// bridge converts between fifoq's api types and an SDK's types through
// JSON: field names agree but for case, which encoding/json ignores.
func bridge(t *testing.T, from any, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatalf("bridge %T -> %T: %v\n%s", from, to, err, b)
	}
}

// filledRequest returns a request of the action with every member set.
func filledRequest(t *testing.T, action api.Action, queueURL string) api.Request {
	req, _ := api.NewRequest(action)
	seq := 0
	fill(reflect.ValueOf(req).Elem(), &seq)
	if f := reflect.ValueOf(req).Elem().FieldByName("QueueUrl"); f.IsValid() {
		f.SetString(queueURL)
	}
	return req
}

// sdkCall calls the SDK client method named after the action with a
// bridged copy of req, and returns the SDK's output and error. ctx is nil
// for aws-sdk-go v1, whose methods take no context.
func sdkCall(t *testing.T, client any, ctx context.Context, action api.Action, req api.Request) (reflect.Value, error) {
	t.Helper()
	method := reflect.ValueOf(client).MethodByName(string(action))
	if !method.IsValid() {
		t.Fatalf("%T has no method %s", client, action)
	}
	var args []reflect.Value
	inIndex := 0
	if ctx != nil {
		args = append(args, reflect.ValueOf(ctx))
		inIndex = 1
	}
	input := reflect.New(method.Type().In(inIndex).Elem())
	bridge(t, req, input.Interface())
	args = append(args, input)
	out := method.Call(args)
	err, _ := out[1].Interface().(error)
	return out[0], err
}

// expectedThrough returns v as it survives a conversion to the SDK type of
// sdkValue and back: what the SDK can carry at all.
func expectedThrough(t *testing.T, v any, sdkType reflect.Type) any {
	t.Helper()
	sdkCopy := reflect.New(sdkType)
	bridge(t, v, sdkCopy.Interface())
	back := reflect.New(reflect.TypeOf(v).Elem())
	bridge(t, sdkCopy.Interface(), back.Interface())
	if r, ok := back.Interface().(api.Request); ok {
		// The decoders note which FIFO ids were sent: the non-empty ones.
		_ = api.NoteSentFIFOIDs(r, nil)
	}
	return back.Interface()
}

func newV1Client(url string) *sqsv1.SQS {
	return sqsv1.New(session.Must(session.NewSession(&awsv1.Config{
		Endpoint:                awsv1.String(url),
		Region:                  awsv1.String("us-east-1"),
		Credentials:             credentials.NewStaticCredentials("AKID", "SECRET", ""),
		MaxRetries:              awsv1.Int(0),
		DisableComputeChecksums: awsv1.Bool(true), // results carry fake MD5s
	})))
}

func newV2Client(url string) *sqsv2.Client {
	return sqsv2.New(sqsv2.Options{
		BaseEndpoint:                     aws.String(url),
		Region:                           "us-east-1",
		Credentials:                      aws.AnonymousCredentials{},
		RetryMaxAttempts:                 1,
		DisableMessageChecksumValidation: true, // results carry fake MD5s
	})
}

func TestSDKRoundTrip(t *testing.T) {
	srv := newSDKServer(t)
	queueURL := srv.URL + "/000000000000/orders.fifo"
	clients := []struct {
		name     string
		client   any
		ctx      context.Context
		protocol Protocol
	}{
		{"aws-sdk-go", newV1Client(srv.URL), nil, Query},
		{"aws-sdk-go-v2", newV2Client(srv.URL), context.Background(), JSON},
	}
	for _, c := range clients {
		for _, action := range api.Actions {
			t.Run(c.name+"/"+string(action), func(t *testing.T) {
				req := filledRequest(t, action, queueURL)
				result := reflect.New(resultTypes[action])
				seq := 100
				fill(result.Elem(), &seq)
				srv.mu.Lock()
				srv.result, srv.err = result.Interface(), nil
				srv.mu.Unlock()

				out, err := sdkCall(t, c.client, c.ctx, action, req)
				if err != nil {
					t.Fatalf("SDK call: %v", err)
				}
				srv.mu.Lock()
				decoded, decodeErr, proto := srv.decoded, srv.decodeErr, srv.protocol
				srv.mu.Unlock()
				if proto != c.protocol || decodeErr != nil {
					t.Fatalf("server saw protocol %v, error %v", proto, decodeErr)
				}
				method := reflect.ValueOf(c.client).MethodByName(string(action))
				inType := method.Type().In(method.Type().NumIn() - 1)
				if c.ctx != nil {
					inType = method.Type().In(1)
				}
				if want := expectedThrough(t, req, inType.Elem()); !reflect.DeepEqual(decoded, want) {
					t.Errorf("server decoded %s\nwant %s", dumpJSON(decoded), dumpJSON(want))
				}
				if resultTypes[action] == reflect.TypeFor[api.Empty]() {
					return
				}
				got := reflect.New(resultTypes[action])
				bridge(t, out.Interface(), got.Interface())
				if want := expectedThrough(t, result.Interface(), out.Type().Elem()); !reflect.DeepEqual(got.Interface(), want) {
					t.Errorf("SDK read %s\nwant %s", dumpJSON(got.Interface()), dumpJSON(want))
				}
			})
		}
	}
}

func TestSDKErrors(t *testing.T) {
	srv := newSDKServer(t)
	queueURL := srv.URL + "/000000000000/missing"
	tests := []struct {
		err       *api.Error
		queryCode string
	}{
		{api.ErrQueueDoesNotExist(), "AWS.SimpleQueueService.NonExistentQueue"},
		{api.ErrInvalidParameterValue("Value <x> for parameter MaxNumberOfMessages is invalid."), "InvalidParameterValue"},
		{api.ErrOverLimit("Too many <in-flight> messages & more."), "OverLimit"},
		{api.ErrInternalFailure("Internal failure."), "InternalFailure"},
	}
	for _, tt := range tests {
		t.Run(tt.err.Code, func(t *testing.T) {
			srv.mu.Lock()
			srv.err = tt.err
			srv.mu.Unlock()
			req := &api.ReceiveMessageRequest{QueueUrl: queueURL}

			_, err := sdkCall(t, newV1Client(srv.URL), nil, api.ActionReceiveMessage, req)
			var reqErr awserr.RequestFailure
			if !errors.As(err, &reqErr) {
				t.Fatalf("aws-sdk-go: %T %v, want a RequestFailure", err, err)
			}
			// aws-sdk-go speaks Query, which has its own wording for some errors.
			if reqErr.Code() != tt.queryCode || reqErr.Message() != tt.err.MessageIn(true) ||
				reqErr.StatusCode() != tt.err.Status || reqErr.RequestID() != testRequestID {
				t.Errorf("aws-sdk-go: code %q message %q status %d request id %q; want %q %q %d %q",
					reqErr.Code(), reqErr.Message(), reqErr.StatusCode(), reqErr.RequestID(),
					tt.queryCode, tt.err.MessageIn(true), tt.err.Status, testRequestID)
			}

			_, err = sdkCall(t, newV2Client(srv.URL), context.Background(), api.ActionReceiveMessage, req)
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("aws-sdk-go-v2: %T %v, want an APIError", err, err)
			}
			if apiErr.ErrorCode() != tt.queryCode || apiErr.ErrorMessage() != tt.err.Message {
				t.Errorf("aws-sdk-go-v2: code %q message %q; want %q %q", apiErr.ErrorCode(), apiErr.ErrorMessage(), tt.queryCode, tt.err.Message)
			}
			wantFault := smithy.FaultClient
			if tt.err.Fault == api.FaultReceiver {
				wantFault = smithy.FaultServer
			}
			if apiErr.ErrorFault() != wantFault {
				t.Errorf("aws-sdk-go-v2: fault %v, want %v", apiErr.ErrorFault(), wantFault)
			}
			if tt.err.Code == "QueueDoesNotExist" {
				var typed *types.QueueDoesNotExist
				if !errors.As(err, &typed) {
					t.Errorf("aws-sdk-go-v2: %T, want *types.QueueDoesNotExist", err)
				}
			}
		})
	}
}
