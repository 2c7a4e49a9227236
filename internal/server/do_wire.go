package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// The wire forms of POST /cluster/do. A busy high-throughput queue's
// batches are split over its partitions, and each part that another
// member leads is one such request (partition_route.go), so what it costs
// to encode and decode counts.
//
// The query form, which this fifoq sends, names the group, partition,
// account and action in the URL's query (doQuery) and carries the
// request's AWS JSON as the body, encoded once and decoded once; its
// answer is the result's AWS JSON as the body, marked hdrDoAnswer
// "result", or else a doAnswer (an error, a misdirection, a peek's
// answer), as an envelope's is.
//
// The envelope form (doRouted, answered with a doAnswer) is what a fifoq
// from before the query form sends and reads: it nests the request's JSON
// in another JSON document, which costs a second encoding and a second
// scan of every byte on each side. It is still read, from such a member,
// and still sent, to one: such a member reads a query form's body as an
// envelope without an account and refuses it before doing anything
// (legacyDoRefusal), and this member then sends it again as an envelope
// and keeps sending that member envelopes for legacyDoRecheck.

// hdrDoAnswer, set to doAnswerResult, marks an answer whose body is the
// result's AWS JSON; an answer without it is a doAnswer.
const (
	hdrDoAnswer    = "X-Fifoq-Do-Answer"
	doAnswerResult = "result"
)

// legacyDoRecheck is how long a member that refused the query form is
// sent envelopes before the query form is tried on it again: it may have
// been upgraded meanwhile.
const legacyDoRecheck = time.Minute

// maxRoutedBody bounds a routed request's body: an SQS request's, and
// room for an envelope around it.
const maxRoutedBody = MaxRequestBodyBytes + 64<<10

// legacyRefusal is what a fifoq that reads only envelopes answers a body
// without an account (serveClusterDo). A member that reads the query form
// never answers a query form with it.
const legacyRefusal = "want a routed request"

// doQuery returns the query form's path and query for d (whose Request is
// sent as the body).
func doQuery(d doRouted) string {
	v := url.Values{}
	v.Set("shard", strconv.FormatUint(uint64(d.Shard), 10))
	if d.Part != 0 {
		v.Set("part", strconv.FormatUint(uint64(d.Part), 10))
	}
	if d.Peek {
		v.Set("peek", "1")
	}
	v.Set("account", d.Account)
	v.Set("action", string(d.Action))
	return clusterDoPath + "?" + v.Encode()
}

// readRouted reads a routed request in either form; query reports the
// query form. An error says what was wrong, for a 400.
func readRouted(r *http.Request) (d doRouted, query bool, err error) {
	body := io.LimitReader(r.Body, maxRoutedBody)
	if r.URL.RawQuery == "" {
		if err := json.NewDecoder(body).Decode(&d); err != nil || d.Account == "" {
			return d, false, errors.New(legacyRefusal)
		}
		return d, false, nil
	}
	v := r.URL.Query()
	shard, err := strconv.ParseUint(v.Get("shard"), 10, 32)
	if err != nil {
		return d, true, fmt.Errorf("the routed request's shard: %q", v.Get("shard"))
	}
	d.Shard = uint32(shard)
	if p := v.Get("part"); p != "" {
		part, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return d, true, fmt.Errorf("the routed request's partition: %q", p)
		}
		d.Part = uint32(part)
	}
	d.Peek = v.Get("peek") == "1"
	d.Account, d.Action = v.Get("account"), api.Action(v.Get("action"))
	if d.Account == "" || d.Action == "" {
		return d, true, errors.New("the routed request names no account or no action")
	}
	if d.Request, err = io.ReadAll(body); err != nil {
		return d, true, fmt.Errorf("the routed request's body: %v", err)
	}
	return d, true, nil
}

// legacyDoRefusal reports whether err is a member's refusal of the query
// form for want of an envelope: a fifoq from before the query form, which
// did nothing with the request.
func legacyDoRefusal(err error) bool {
	var refused *peerRefusal
	return errors.As(err, &refused) && strings.HasPrefix(refused.status, "400") && strings.Contains(refused.msg, legacyRefusal)
}

// sendsEnvelopes reports whether member refused the query form within
// legacyDoRecheck.
func (s *Server) sendsEnvelopes(member string) bool {
	at, ok := s.legacyDo.Load(member)
	if !ok {
		return false
	}
	if time.Since(at.(time.Time)) < legacyDoRecheck {
		return true
	}
	s.legacyDo.CompareAndDelete(member, at)
	return false
}

// readDoAnswer reads the answer to a routed request into a.
func readDoAnswer(resp *http.Response, a *doAnswer) error {
	if resp.Header.Get(hdrDoAnswer) == doAnswerResult {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxRoutedBody))
		a.Result = b
		return err
	}
	return json.NewDecoder(resp.Body).Decode(a)
}

// writeDoResult answers a query form's request with its result's JSON.
func writeDoResult(w http.ResponseWriter, result []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(hdrDoAnswer, doAnswerResult)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(result)
}
