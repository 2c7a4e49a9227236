// Package frozentest checks fifoq's frozen on-disk formats: the bytes of
// every format version some fifoq wrote are committed under the testdata
// directory of the package that reads them, next to what the fifoq that
// wrote them decoded (a dump of the commands) or answered (observations of
// the engine's state). The tests decode the committed bytes with today's
// code and compare, field by field.
//
// The same source is copied into the worktree of an old commit to make
// that commit's fixtures (see each testdata README): so it uses only what
// every fifoq since the first on-disk format has had (engine.Engine's
// Apply and Read, engine.Command, the api request types), and nothing of
// today's alone.
package frozentest

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Dump returns v as plain data for JSON: a struct becomes an object of its
// exported fields by Go name, so that a field renamed, dropped or decoded
// into another field shows as a difference; an interface value also names
// its dynamic type ("@type"); a struct that marshals itself as text (a
// time.Time) is that text. Pointers are their value or null, nil slices
// and maps null (distinct from empty), byte slices base64 (as
// encoding/json writes them).
func Dump(v any) any { return dump(reflect.ValueOf(v)) }

func dump(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Invalid:
		return nil
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return dump(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		d := dump(v.Elem())
		if m, ok := d.(map[string]any); ok {
			t := v.Elem().Type()
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			m["@type"] = t.Name()
		}
		return d
	case reflect.Struct:
		if tm, ok := v.Interface().(encoding.TextMarshaler); ok {
			// A time.Time, say: its text, as encoding/json writes it.
			b, err := tm.MarshalText()
			if err != nil {
				return "error: " + err.Error()
			}
			return string(b)
		}
		m := map[string]any{}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				m[f.Name] = dump(v.Field(i))
			}
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return slices.Clone(v.Bytes())
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = dump(v.Index(i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		m := map[string]any{}
		for _, k := range v.MapKeys() {
			m[fmt.Sprint(k.Interface())] = dump(v.MapIndex(k))
		}
		return m
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	}
	return fmt.Sprintf("unsupported kind %s", v.Kind())
}

// JSON is Dump(v) as indented JSON, ending with a newline.
func JSON(v any) []byte {
	b, err := json.MarshalIndent(Dump(v), "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// Diff compares a dump made by today's code (got) with the one committed
// beside a fixture (want), and returns the differences, one per line
// (none: ""). An object of got may have keys want lacks, if their value is
// zero (null, "", 0, false, or empty): a field added since the fixture was
// written, which reads as its zero value from older bytes. Anything else
// differs: a key of want missing from got (a renamed or dropped field), a
// value that differs (a reordered field decodes into the wrong one).
func Diff(want, got []byte) (string, error) {
	w, err := decode(want)
	if err != nil {
		return "", fmt.Errorf("the committed dump: %w", err)
	}
	g, err := decode(got)
	if err != nil {
		return "", fmt.Errorf("today's dump: %w", err)
	}
	var out []string
	diff("$", w, g, &out)
	return strings.Join(out, "\n"), nil
}

func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // entropy and ids are 64-bit: no float rounding
	var v any
	err := d.Decode(&v)
	return v, err
}

func diff(path string, want, got any, out *[]string) {
	if len(*out) > 50 {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: want an object, got %s", path, short(got)))
			return
		}
		for _, k := range sortedKeys(w) {
			gv, ok := g[k]
			if !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: missing (want %s)", path, k, short(w[k])))
				continue
			}
			diff(path+"."+k, w[k], gv, out)
		}
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok && !isZero(g[k]) {
				*out = append(*out, fmt.Sprintf("%s.%s: not in the fixture, and not zero: %s", path, k, short(g[k])))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: want a list of %d, got %s", path, len(w), short(got)))
			return
		}
		if len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: want %d items, got %d", path, len(w), len(g)))
		}
		for i := range min(len(w), len(g)) {
			diff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, short(want), short(got)))
		}
	}
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case json.Number:
		return v == "0"
	case []any:
		return len(v) == 0
	case map[string]any:
		for _, x := range v {
			if !isZero(x) {
				return false
			}
		}
		return true
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		b = append(b[:200], "..."...)
	}
	return string(b)
}

// Observation is one request made of a restored engine and its answer.
type Observation struct {
	Step     string
	Response any
	Error    string
}

// Probes are requests Observe adds for state a listing does not show.
type Probes struct {
	// DedupIDs are sent again, with group "probe", to every FIFO queue:
	// the answer's MessageId is the original message's while the
	// deduplication record lives.
	DedupIDs []string
	// AttemptIDs are received with again on every FIFO queue: the answer
	// repeats the original receive's while the attempt record lives.
	AttemptIDs []string
}

// Observe asks e, as of time now, about everything of account's queues
// that a snapshot keeps: the queues, their attributes, tags, dead-letter
// sources and move tasks, deduplication and receive attempt records, and
// then every message, received in rounds at later times (in-flight and
// delayed ones once they are visible), with every attribute. Its requests
// change e. The answers are a function of e's state, so an engine
// restored from a snapshot answers as the engine that wrote it did.
func Observe(e *engine.Engine, account string, now int64, p Probes) []Observation {
	var obs []Observation
	n := uint64(0)
	do := func(step string, at int64, q api.QueueKey, req api.Request) api.Response {
		n++
		cmd := &engine.Command{Time: at, Caller: account, Queue: q, Request: req,
			Entropy: 0x9e3779b97f4a7c15 * n, MessageIDs: []string{fmt.Sprintf("probe-%d", n)}}
		if b, ok := req.(*api.SendMessageBatchRequest); ok {
			cmd.MessageIDs = nil
			for i := range b.Entries {
				cmd.MessageIDs = append(cmd.MessageIDs, fmt.Sprintf("probe-%d-%d", n, i))
			}
		}
		var resp api.Response
		var err error
		switch req.(type) {
		case *api.ListQueuesRequest, *api.GetQueueAttributesRequest, *api.ListQueueTagsRequest,
			*api.ListDeadLetterSourceQueuesRequest, *api.ListMessageMoveTasksRequest, *api.GetQueueUrlRequest:
			resp, err = e.Read(cmd)
		default:
			resp, err = e.Apply(cmd)
		}
		o := Observation{Step: step, Response: Dump(resp)}
		if err != nil {
			o.Error = err.Error()
		}
		obs = append(obs, o)
		return resp
	}
	lr, _ := do("ListQueues", now, api.QueueKey{}, &api.ListQueuesRequest{}).(*api.ListQueuesResult)
	var queues []api.QueueKey
	if lr != nil {
		for _, u := range lr.QueueUrls {
			parts := strings.Split(strings.Trim(u, "/"), "/")
			if len(parts) >= 2 {
				queues = append(queues, api.QueueKey{Account: parts[len(parts)-2], Name: parts[len(parts)-1]})
			}
		}
	}
	for _, q := range queues {
		ga, _ := do("GetQueueAttributes "+q.Name, now, q, &api.GetQueueAttributesRequest{QueueUrl: q.Path(), AttributeNames: []string{"All"}}).(*api.GetQueueAttributesResult)
		do("ListQueueTags "+q.Name, now, q, &api.ListQueueTagsRequest{QueueUrl: q.Path()})
		do("ListDeadLetterSourceQueues "+q.Name, now, q, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: q.Path()})
		if ga != nil && ga.Attributes["QueueArn"] != "" {
			do("ListMessageMoveTasks "+q.Name, now, api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: ga.Attributes["QueueArn"], MaxResults: intp(10)})
		}
	}
	all := []string{"All"}
	for _, q := range queues {
		if !strings.HasSuffix(q.Name, ".fifo") {
			continue
		}
		for _, id := range p.AttemptIDs {
			do("ReceiveMessage again "+id+" "+q.Name, now+1e9, q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: intp(10),
				AttributeNames: all, MessageAttributeNames: all, ReceiveRequestAttemptId: id})
		}
		for _, id := range p.DedupIDs {
			do("SendMessage again "+id+" "+q.Name, now+1e9, q, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "probe",
				MessageGroupId: "probe", MessageGroupIdSet: true, MessageDeduplicationId: id, MessageDeduplicationIdSet: true})
		}
	}
	for round, at := range []int64{now + 2e9, now + 7200e9, now + 14400e9} {
		for _, q := range queues {
			for i := range 3 {
				r, _ := do(fmt.Sprintf("ReceiveMessage round %d.%d %s", round, i, q.Name), at, q, &api.ReceiveMessageRequest{QueueUrl: q.Path(),
					MaxNumberOfMessages: intp(10), AttributeNames: all, MessageAttributeNames: all}).(*api.ReceiveMessageResult)
				if r == nil || len(r.Messages) == 0 {
					break
				}
			}
		}
	}
	return obs
}

func intp(i int) *int { return &i }
