package server

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/protocol"
)

// LocalStack, the emulator many teams come to fifoq from, offers a
// developer endpoint that test suites use to assert on a queue: it lists
// a queue's messages without receiving them. fifoq answers it the same
// way, so that such suites run unchanged (LocalStack's own tests of it,
// tests/aws/services/sqs/test_sqs_developer_api.py, were read whole; the
// integration tests check what they check):
//
//   - GET or POST /_aws/sqs/messages?QueueUrl=URL, or
//     /_aws/sqs/messages/REGION/ACCOUNT/NAME;
//   - the visible messages, oldest first, each rendered as ReceiveMessage
//     renders it with every attribute (ApproximateFirstReceiveTimestamp
//     "0" for a message never received, as LocalStack writes it) and the
//     receipt handle "SQS/BACKDOOR/ACCESS" (which no action takes);
//   - ShowInvisible=true adds the messages in flight, and those a FIFO
//     group's in-flight message holds back, with the attribute IsVisible:
//     false for a message in flight, true for a held one, which is not in
//     flight itself (LocalStack answers so, and its test expects it);
//     without it neither is listed, since no receive would return them.
//     ShowDelayed=true adds the delayed ones (IsDelayed);
//   - answered as ReceiveMessage is: in XML, or in JSON when asked with
//     Accept: application/json (the XML document as JSON objects, one
//     key per element, as LocalStack writes it);
//   - an SDK whose endpoint URL is …/_aws/sqs/messages gets every message
//     from its ReceiveMessage, in its own protocol, whatever
//     MaxNumberOfMessages says; any other action is refused
//     (InvalidRequest);
//   - a QueueUrl that is no queue's URL at all (http://host/nonsense) is
//     404 InvalidAddress, as in LocalStack; one of a queue that does not
//     exist (or a path of another region's) is 400 NonExistentQueue, as is
//     a request without a QueueUrl.
//
// Nothing changes: no receive count, visibility or group lock. With
// credentials configured the request must be signed like any other, and
// it needs the right to receive from the queue. It lists at most
// engine.MaxListMessages messages. A cluster member reads the queue at the
// leader of its shard (of each of its shards, for a high-throughput queue
// split into partitions: read_parts.go), so that every message whose send
// was answered is listed.
//
// The same test file's TestSqsOverrideHeaders is about ReceiveMessage
// itself, not this endpoint: see receive_override.go.

// devMessagesPath is the developer endpoint's path.
const devMessagesPath = "/_aws/sqs/messages"

// devReceiptHandle is the receipt handle of a listed message.
const devReceiptHandle = "SQS/BACKDOOR/ACCESS"

// serveDevMessages serves the developer endpoint.
func (s *Server) serveDevMessages(w http.ResponseWriter, r *http.Request) {
	id := newUUID()
	proto := protocol.Query
	asJSON := strings.Contains(r.Header.Get("Accept"), "application/json")
	fail := func(err error) {
		s.writeDev(w, proto, asJSON, nil, api.AsError(err), id)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes))
	if err != nil {
		fail(api.ErrMalformedQueryString("Could not read the request body: %v", err))
		return
	}
	caller, err := s.verifier.Verify(r, body)
	if err != nil {
		fail(err)
		return
	}
	params := r.URL.Query()
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			fail(api.ErrMalformedQueryString("The request body is not a form: %v", err))
			return
		}
		maps.Copy(params, form)
	}
	key, p, err := s.devQueue(r, params, body, caller)
	proto, asJSON = p, asJSON && p == protocol.Query
	if err != nil {
		fail(err)
		return
	}
	if fromPeer(r) && r.Header.Get(hdrReadPart) != "" {
		s.answerPartRead(w, r, caller, key, false)
		return
	}
	var parts [][]engine.ListedMessage
	last := uint32(0)
	err = s.readParts(r.Context(), key, partRead{r: r, body: body, caller: caller, emit: func(part uint32, lm engine.ListedMessage) error {
		if len(parts) == 0 || part != last {
			parts, last = append(parts, nil), part
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], lm)
		return nil
	}})
	if err != nil {
		fail(err)
		return
	}
	listed := oldestFirst(parts)
	res := devListing(listed, devFlag(params, "ShowInvisible"), devFlag(params, "ShowDelayed"))
	s.writeDev(w, proto, asJSON, res, nil, id)
}

// devQueue returns the queue a developer endpoint request names (by its
// path, by an SDK's ReceiveMessage, or by the QueueUrl parameter) and the
// protocol to answer in: an SDK's own, else Query.
func (s *Server) devQueue(r *http.Request, params url.Values, body []byte, caller string) (api.QueueKey, protocol.Protocol, error) {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, devMessagesPath), "/")
	if rest != "" {
		parts := strings.Split(rest, "/")
		if len(parts) != 3 || !api.IsRegionName(parts[0]) {
			return api.QueueKey{}, protocol.Query, api.ErrQueueDoesNotExist()
		}
		return s.placed(api.QueueKey{Account: parts[1], Name: parts[2]}.InRegion(parts[0], s.cfg.Region)), protocol.Query, nil
	}
	proto, queueURL := protocol.Query, params.Get("QueueUrl")
	if protocol.Detect(r) == protocol.JSON || params.Get("Action") != "" {
		proto = protocol.Detect(r)
		action, req, apiErr := protocol.Decode(proto, r, body)
		if apiErr != nil {
			return api.QueueKey{}, proto, apiErr
		}
		recv, ok := req.(*api.ReceiveMessageRequest)
		if !ok || action != api.ActionReceiveMessage {
			return api.QueueKey{}, proto, &api.Error{Code: "InvalidRequest", Status: http.StatusBadRequest, Fault: api.FaultSender, Message: "This endpoint only accepts ReceiveMessage calls"}
		}
		queueURL = recv.QueueUrl
	}
	if notQueueURL(queueURL) {
		// As LocalStack answers it (its developer_api.py InvalidAddress):
		// the address could not name a queue, which differs from naming
		// one that does not exist.
		return api.QueueKey{}, proto, &api.Error{Code: "InvalidAddress", Status: http.StatusNotFound, Fault: api.FaultSender,
			Message: "The address " + queueURL + " is not valid for this endpoint."}
	}
	key, err := s.resolve(queueURL, s.scopeOf(r, caller))
	if err != nil {
		return key, proto, api.ErrQueueDoesNotExist()
	}
	return key, proto, nil
}

// notQueueURL reports whether raw is a URL (it has a slash) whose path is
// not a queue's in any of the forms api.ParseQueueURL reads, such as
// http://localhost:4566/nonsense. A bare name ("my-queue") is not such a
// URL: it names a queue of the caller's, as in the API.
func notQueueURL(raw string) bool {
	k, err := api.ParseQueueURL(raw)
	return err == nil && k.Name == raw && strings.Contains(raw, "/")
}

// devListing renders the listed messages as the endpoint answers them:
// the visible ones, and with showInvisible those in flight and those a
// FIFO group's message in flight holds back, marked IsVisible (false only
// for a message in flight or delayed: a held message is not in flight
// itself, as LocalStack answers it), and with showDelayed the delayed
// ones, marked IsDelayed. Each carries ApproximateFirstReceiveTimestamp,
// "0" for a message never received, as in LocalStack's listing.
func devListing(listed []engine.ListedMessage, showInvisible, showDelayed bool) *api.ReceiveMessageResult {
	res := &api.ReceiveMessageResult{Messages: []api.Message{}}
	for _, lm := range listed {
		inFlight := lm.State == engine.StateInFlight
		delayed := lm.State == engine.StateDelayed
		if ((inFlight || lm.Held) && !showInvisible) || (delayed && !showDelayed) {
			continue
		}
		m := lm.Message
		m.Attributes = maps.Clone(m.Attributes)
		if m.Attributes == nil {
			m.Attributes = map[string]string{}
		}
		if _, ok := m.Attributes[api.MsgAttrApproximateFirstReceiveTimestamp]; !ok {
			m.Attributes[api.MsgAttrApproximateFirstReceiveTimestamp] = "0"
		}
		if showInvisible {
			m.Attributes["IsVisible"] = boolText(!inFlight && !delayed)
		}
		if showDelayed {
			m.Attributes["IsDelayed"] = boolText(delayed)
		}
		res.Messages = append(res.Messages, m)
	}
	return res
}

// devFlag reads a developer endpoint flag: "true" or "1", in any case.
func devFlag(params url.Values, name string) bool {
	v := strings.ToLower(params.Get(name))
	return v == "true" || v == "1"
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// writeDev writes the developer endpoint's answer (res, or apiErr) in
// proto, or, for Query with asJSON, as the JSON form of the XML document.
func (s *Server) writeDev(w http.ResponseWriter, proto protocol.Protocol, asJSON bool, res *api.ReceiveMessageResult, apiErr *api.Error, id string) {
	out := w
	var rec *httptest.ResponseRecorder
	if asJSON {
		rec = httptest.NewRecorder()
		out = rec
	}
	if apiErr != nil {
		protocol.WriteError(out, proto, apiErr, id)
	} else {
		protocol.WriteResponse(out, proto, api.ActionReceiveMessage, res, id)
	}
	if rec == nil {
		return
	}
	doc, err := xmlToJSON(rec.Body.Bytes())
	if err != nil {
		s.logger.Error("developer endpoint: the XML answer does not convert to JSON", "err", err)
		doc, _ = json.Marshal(map[string]string{"error": "internal failure"})
		rec.Code = http.StatusInternalServerError
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(doc)
}

// xmlToJSON writes an XML document as JSON: an element that holds only
// text becomes a string (null if empty), one that holds elements an
// object with a key per child name, whose value is a list when the name
// repeats; attributes (the namespace) are left out.
func xmlToJSON(doc []byte) ([]byte, error) {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if start, ok := tok.(xml.StartElement); ok {
			v, err := xmlValue(dec)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{start.Name.Local: v})
		}
	}
}

// xmlValue reads the content of the element whose start was just read,
// up to its end.
func xmlValue(dec *xml.Decoder) (any, error) {
	var text strings.Builder
	var obj map[string]any
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.CharData:
			text.Write(t)
		case xml.StartElement:
			v, err := xmlValue(dec)
			if err != nil {
				return nil, err
			}
			if obj == nil {
				obj = map[string]any{}
			}
			name := t.Name.Local
			switch prev, seen := obj[name]; {
			case !seen:
				obj[name] = v
			default:
				if list, ok := prev.([]any); ok {
					obj[name] = append(list, v)
				} else {
					obj[name] = []any{prev, v}
				}
			}
		case xml.EndElement:
			if obj != nil {
				return obj, nil
			}
			if text.Len() > 0 {
				return text.String(), nil
			}
			return nil, nil
		}
	}
}

// oldestFirst returns the messages of a split queue's partitions, each
// list oldest first, as one list in sequence order (sequence numbers are
// unique in the queue, and the console's peek merges partitions so too),
// each partition's own order kept, cut at engine.MaxListMessages.
func oldestFirst(parts [][]engine.ListedMessage) []engine.ListedMessage {
	if len(parts) == 1 {
		return parts[0]
	}
	seq := func(lm engine.ListedMessage) uint64 {
		n, _ := strconv.ParseUint(lm.Attributes[api.MsgAttrSequenceNumber], 10, 64)
		return n
	}
	var out []engine.ListedMessage
	for len(out) < engine.MaxListMessages {
		next := -1
		for i, p := range parts {
			if len(p) > 0 && (next < 0 || seq(p[0]) < seq(parts[next][0])) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		out = append(out, parts[next][0])
		parts[next] = parts[next][1:]
	}
	return out
}
