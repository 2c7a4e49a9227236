package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/integration"
	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/testenv"
)

// apiClient calls the console's JSON API as the console's page does: with
// a cookie jar and the CSRF token of the session.
type apiClient struct {
	t    *testing.T
	url  string // http://127.0.0.1:PORT
	hc   *http.Client
	csrf string
}

func newAPIClient(t *testing.T, url string) *apiClient {
	jar, _ := cookiejar.New(nil)
	c := &apiClient{t: t, url: url, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}}
	t.Cleanup(c.hc.CloseIdleConnections)
	c.refreshSession()
	return c
}

type sessionJSON struct {
	AuthRequired bool   `json:"authRequired"`
	SignedIn     bool   `json:"signedIn"`
	Account      string `json:"account"`
	AccessKeyID  string `json:"accessKeyId"`
	ExpiresAt    int64  `json:"expiresAt"`
	CSRFToken    string `json:"csrfToken"`
	Region       string `json:"region"`
}

type apiErr struct {
	Error struct{ Code, Message string } `json:"error"`
}

func (c *apiClient) refreshSession() sessionJSON {
	c.t.Helper()
	var s sessionJSON
	if st, code := c.get("session", &s); st != 200 {
		c.t.Fatalf("GET session: %d %s", st, code)
	}
	c.csrf = s.CSRFToken
	return s
}

// do sends a request and decodes a 200 answer into out; it returns the
// status and, for an error, its code.
func (c *apiClient) do(req *http.Request, out any) (int, string) {
	c.t.Helper()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		var e apiErr
		json.Unmarshal(body, &e)
		return resp.StatusCode, e.Error.Code
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.t.Fatalf("%s %s: Content-Type %q", req.Method, req.URL, ct)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", req.Method, req.URL, body, err)
		}
	}
	return 200, ""
}

func (c *apiClient) get(path string, out any) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest("GET", c.url+"/console/api/"+path, nil)
	return c.do(req, out)
}

func (c *apiClient) post(path string, in, out any) (int, string) {
	c.t.Helper()
	return c.postWith(path, in, out, map[string]string{"X-CSRF-Token": c.csrf})
}

func (c *apiClient) postWith(path string, in, out any, header map[string]string) (int, string) {
	c.t.Helper()
	body, _ := json.Marshal(in)
	req, _ := http.NewRequest("POST", c.url+"/console/api/"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return c.do(req, out)
}

func wantStatus(t *testing.T, what string, status int, code string, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || code != wantCode {
		t.Errorf("%s: %d %s, want %d %s", what, status, code, wantStatus, wantCode)
	}
}

// The JSON shapes the tests read.
type queueJSON struct {
	Name                 string `json:"name"`
	FIFO                 bool   `json:"fifo"`
	Visible              int    `json:"visible"`
	NotVisible           int    `json:"notVisible"`
	Delayed              int    `json:"delayed"`
	DeadLetterTargetName string `json:"deadLetterTargetName"`
	DeadLetterSources    int    `json:"deadLetterSources"`
	Groups               int    `json:"groups"`
	Counters             struct {
		Sent, Received uint64
	} `json:"counters"`
}

type messageJSON struct {
	MessageID      string `json:"messageId"`
	Body           string `json:"body"`
	GroupID        string `json:"groupId"`
	SequenceNumber string `json:"sequenceNumber"`
	State          string `json:"state"`
	ReceiveCount   int    `json:"receiveCount"`
	Attributes     []struct {
		Name, Type, Value string
	} `json:"attributes"`
}

type groupJSON struct {
	ID       string `json:"id"`
	Messages int    `json:"messages"`
	InFlight int    `json:"inFlight"`
	Owner    *struct {
		ReceiptHandle string `json:"receiptHandle"`
		AttemptID     string `json:"attemptId"`
	} `json:"owner"`
}

// TestAPIOpen runs the console's JSON API against a server without
// credentials; the subtests share one seeded server and run in order, each
// seeing what the earlier ones changed.
func TestAPIOpen(t *testing.T) {
	env := integration.Start(t)
	s := newSQS(t, env)
	groups := seed(s)
	c := newAPIClient(t, env.URL)

	t.Run("session", func(t *testing.T) { checkOpenSession(t, c) })
	t.Run("queues", func(t *testing.T) { checkOpenQueueList(t, c, s) })
	t.Run("queue", func(t *testing.T) { checkOpenQueueDetail(t, c) })
	t.Run("peek", func(t *testing.T) { checkOpenPeek(t, c, s, groups) })
	t.Run("groups", func(t *testing.T) { checkOpenGroups(t, c) })
	t.Run("send", func(t *testing.T) { checkOpenSend(t, c) })
	t.Run("csrf", func(t *testing.T) { checkOpenCSRF(t, c, s, env) })
	t.Run("move tasks", func(t *testing.T) { checkOpenMoveTasks(t, c, s) })
	t.Run("http", func(t *testing.T) { checkOpenHTTP(t, env) })
}

// checkOpenSession checks the session of a server without credentials:
// signed in as the default account, and no login possible.
func checkOpenSession(t *testing.T, c *apiClient) {
	sess := c.refreshSession()
	if sess.AuthRequired || !sess.SignedIn || sess.Account != integration.Account || sess.CSRFToken == "" || sess.Region != integration.Region {
		t.Fatalf("session without credentials: %+v", sess)
	}
	st, code := c.post("login", map[string]string{"accessKeyId": "x", "secretAccessKey": "y"}, nil)
	wantStatus(t, "login without credentials", st, code, 400, "NoCredentialsConfigured")
}

// checkOpenQueueList checks the seeded queues' list and the figures it
// gives for orders and its dead-letter queue against SQS's.
func checkOpenQueueList(t *testing.T, c *apiClient, s *sqsClient) {
	var out struct {
		Now    int64       `json:"now"`
		Queues []queueJSON `json:"queues"`
	}
	if st, code := c.get("queues", &out); st != 200 {
		t.Fatalf("GET queues: %d %s", st, code)
	}
	byName := map[string]queueJSON{}
	for _, q := range out.Queues {
		byName[q.Name] = q
	}
	if len(out.Queues) != 5 || out.Queues[0].Name != qAudit || out.Now == 0 {
		t.Fatalf("queues: %+v", out)
	}
	o := byName[qOrders]
	if c := s.counts(qOrders); o.Visible != c[0] || o.NotVisible != c[1] || o.Delayed != c[2] {
		t.Errorf("orders figures %+v, SQS %v", o, c)
	}
	if !o.FIFO || o.DeadLetterTargetName != qOrdersDLQ || o.Groups != 6 || o.Counters.Sent != 13 || o.Counters.Received != 3 {
		t.Errorf("orders: %+v", o)
	}
	if d := byName[qOrdersDLQ]; d.DeadLetterSources != 1 || d.Visible != 12 {
		t.Errorf("orders-dlq: %+v", d)
	}
}

// checkOpenQueueDetail checks one queue's detail (attributes, tags,
// dead-letter sources, move tasks) and the answer for a missing queue.
func checkOpenQueueDetail(t *testing.T, c *apiClient) {
	var out struct {
		Queue             queueJSON         `json:"queue"`
		Attributes        map[string]string `json:"attributes"`
		Tags              map[string]string `json:"tags"`
		DeadLetterSources []string          `json:"deadLetterSources"`
		MoveTasks         []any             `json:"moveTasks"`
	}
	if st, code := c.get("queues/"+qOrdersDLQ, &out); st != 200 {
		t.Fatalf("GET queue: %d %s", st, code)
	}
	if out.Queue.Name != qOrdersDLQ || out.Attributes["FifoQueue"] != "true" || len(out.DeadLetterSources) != 1 || out.DeadLetterSources[0] != qOrders || out.MoveTasks == nil {
		t.Fatalf("dlq detail: %+v", out)
	}
	if st, code := c.get("queues/"+qOrders, &out); st != 200 || out.Tags["team"] != "checkout" {
		t.Fatalf("orders detail: %d %s %+v", st, code, out.Tags)
	}
	st, code := c.get("queues/nope", nil)
	wantStatus(t, "missing queue", st, code, 404, "QueueDoesNotExist")
}

// checkOpenPeek checks that peeking at orders shows its messages in group
// order, in flight or waiting, by group too, and changes nothing a consumer
// sees; and that bad limits and missing queues are refused.
func checkOpenPeek(t *testing.T, c *apiClient, s *sqsClient, groups map[string][]string) {
	before := s.counts(qOrders)
	var out struct {
		Messages []messageJSON `json:"messages"`
	}
	if st, code := c.get("queues/"+qOrders+"/messages?limit=4", &out); st != 200 {
		t.Fatalf("peek: %d %s", st, code)
	}
	want := []string{groups["customer-1"][0], groups["customer-1"][1], groups["customer-2"][0], groups["customer-2"][1]}
	if len(out.Messages) != 4 {
		t.Fatalf("peeked %d messages, want 4", len(out.Messages))
	}
	for i, m := range out.Messages {
		if m.Body != want[i] || m.SequenceNumber == "" || len(m.Attributes) != 1 || m.Attributes[0].Value != "web" {
			t.Errorf("peeked %d: %+v, want body %s", i, m, want[i])
		}
	}
	if m := out.Messages[0]; m.State != "inflight" || m.ReceiveCount != 1 {
		t.Errorf("held message peeked as %+v", m)
	}
	if m := out.Messages[3]; m.State != "visible" || m.ReceiveCount != 0 {
		t.Errorf("waiting message peeked as %+v", m)
	}
	var byGroup struct {
		Messages []messageJSON `json:"messages"`
	}
	if st, code := c.get("queues/"+qOrders+"/messages?group=customer-4&limit=100", &byGroup); st != 200 || len(byGroup.Messages) != 4 || byGroup.Messages[0].GroupID != "customer-4" {
		t.Fatalf("peek by group: %d %s %+v", st, code, byGroup.Messages)
	}
	// Peeking twice changed nothing: counts, and the next consumer
	// gets customer-3 on its first receive.
	if after := s.counts(qOrders); after != before {
		t.Fatalf("peek changed the counts from %v to %v", before, after)
	}
	got := s.receive(qOrders, 1, 30, "")
	if len(got) != 1 || *got[0].Body != groups["customer-3"][0] || got[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("receive after peeking: %+v", got)
	}

	for _, q := range []string{"limit=0", "limit=x", "limit=-1"} {
		st, code := c.get("queues/"+qOrders+"/messages?"+q, nil)
		wantStatus(t, "peek "+q, st, code, 400, "BadRequest")
	}
	st, code := c.get("queues/nope/messages", nil)
	wantStatus(t, "peek a missing queue", st, code, 404, "QueueDoesNotExist")
}

// checkOpenGroups checks the paged list of orders' groups, the held group
// first with its owner's receipt handle and attempt id.
func checkOpenGroups(t *testing.T, c *apiClient) {
	var out struct {
		FIFO     bool        `json:"fifo"`
		Total    int         `json:"total"`
		InFlight int         `json:"inFlight"`
		Groups   []groupJSON `json:"groups"`
		Next     string      `json:"next"`
	}
	if st, code := c.get("queues/"+qOrders+"/groups?limit=2", &out); st != 200 {
		t.Fatalf("groups: %d %s", st, code)
	}
	if !out.FIFO || out.Total != 6 || out.InFlight != 3 || len(out.Groups) != 2 || out.Next == "" {
		t.Fatalf("groups page: %+v", out)
	}
	if g := out.Groups[0]; g.ID != heldGroup || g.Owner == nil || g.Owner.AttemptID != attemptID || g.Owner.ReceiptHandle == "" {
		t.Fatalf("held group: %+v", g)
	}
	var page2 struct {
		Groups []groupJSON `json:"groups"`
		Next   string      `json:"next"`
	}
	if st, _ := c.get("queues/"+qOrders+"/groups?limit=10&after="+out.Next, &page2); st != 200 || len(page2.Groups) != 4 || page2.Groups[0].ID != "customer-3" || page2.Next != "" {
		t.Fatalf("second page: %+v", page2)
	}
}

// checkOpenSend checks a send with attributes of each type, that the
// API's validation and the console's own refuse bad sends, and that the
// sent message can be peeked.
func checkOpenSend(t *testing.T, c *apiClient) {
	var sent struct {
		MessageID      string `json:"messageId"`
		SequenceNumber string `json:"sequenceNumber"`
	}
	in := map[string]any{
		"body": "from the console", "groupId": "console",
		"attributes": []map[string]string{
			{"name": "kind", "type": "String", "value": "probe"},
			{"name": "blob", "type": "Binary", "value": "AAEC"},
			{"name": "n", "type": "Number.int", "value": "42"},
		},
	}
	if st, code := c.post("queues/"+qOrdersDLQ+"/messages", in, &sent); st != 200 || sent.MessageID == "" || sent.SequenceNumber == "" {
		t.Fatalf("send: %d %s %+v", st, code, sent)
	}
	// The API's own validation applies: a FIFO message needs a group.
	st, code := c.post("queues/"+qOrdersDLQ+"/messages", map[string]any{"body": "x"}, nil)
	wantStatus(t, "send without a group", st, code, 400, "MissingParameter")
	st, code = c.post("queues/"+qEvents+"/messages", map[string]any{"body": "x", "attributes": []map[string]string{{"name": "b", "type": "Binary", "value": "!!"}}}, nil)
	wantStatus(t, "send bad base64", st, code, 400, "BadRequest")
	st, code = c.post("queues/"+qEvents+"/messages", map[string]any{"body": "x", "color": "red"}, nil)
	wantStatus(t, "send an unknown field", st, code, 400, "BadRequest")
	st, code = c.postWith("queues/"+qEvents+"/messages", nil, nil, map[string]string{"X-CSRF-Token": c.csrf})
	wantStatus(t, "send null", st, code, 400, "MissingParameter")

	var out struct {
		Messages []messageJSON `json:"messages"`
	}
	c.get("queues/"+qOrdersDLQ+"/messages?group=console", &out)
	if len(out.Messages) != 1 || out.Messages[0].Body != "from the console" || len(out.Messages[0].Attributes) != 3 || out.Messages[0].Attributes[0].Value != "AAEC" {
		t.Fatalf("the sent message peeked: %+v", out.Messages)
	}
}

// checkOpenCSRF checks that a purge without the session's CSRF token, or
// from another origin, is refused and changes nothing, and that one from the
// same origin purges.
func checkOpenCSRF(t *testing.T, c *apiClient, s *sqsClient, env *integration.Env) {
	before := s.counts(qEvents)
	for name, h := range map[string]map[string]string{
		"no token":     {},
		"wrong token":  {"X-CSRF-Token": "AAAA"},
		"other origin": {"X-CSRF-Token": c.csrf, "Origin": "http://evil.example.com"},
	} {
		st, code := c.postWith("queues/"+qEvents+"/purge", map[string]any{}, nil, h)
		want := "InvalidCSRFToken"
		if name == "other origin" {
			want = "CrossOriginRequest"
		}
		wantStatus(t, name, st, code, 403, want)
	}
	if after := s.counts(qEvents); after != before {
		t.Fatalf("refused purges changed the queue: %v -> %v", before, after)
	}
	st, code := c.postWith("queues/"+qEvents+"/purge", map[string]any{}, nil, map[string]string{"X-CSRF-Token": c.csrf, "Origin": env.URL})
	wantStatus(t, "same origin", st, code, 200, "")
	if after := s.counts(qEvents); after != [3]int{} {
		t.Fatalf("after the purge: %v", after)
	}
	st, code = c.post("queues/"+qEvents+"/purge", map[string]any{}, nil)
	wantStatus(t, "purge again", st, code, 403, "PurgeQueueInProgress")
}

// checkOpenMoveTasks starts a redrive of orders' dead-letter queue through
// the console, checks it in SQS, cancels it, and checks the refusals on
// the way.
func checkOpenMoveTasks(t *testing.T, c *apiClient, s *sqsClient) {
	st, code := c.post("queues/"+qEvents+"/move-tasks", map[string]any{}, nil)
	wantStatus(t, "redrive a queue that is no DLQ", st, code, 400, "InvalidParameterValue")
	var started struct {
		TaskHandle string `json:"taskHandle"`
	}
	if st, code := c.post("queues/"+qOrdersDLQ+"/move-tasks", map[string]any{"maxNumberOfMessagesPerSecond": 1}, &started); st != 200 || started.TaskHandle == "" {
		t.Fatalf("start: %d %s", st, code)
	}
	if tasks := s.moveTasks(qOrdersDLQ); len(tasks) != 1 || *tasks[0].Status != "RUNNING" || *tasks[0].TaskHandle != started.TaskHandle {
		t.Fatalf("tasks after start: %+v", tasks)
	}
	st, code = c.post("queues/"+qOrdersDLQ+"/move-tasks", map[string]any{}, nil)
	wantStatus(t, "a second redrive", st, code, 400, "InvalidParameterValue")
	if st, code := c.post("move-tasks/cancel", map[string]any{"taskHandle": started.TaskHandle}, nil); st != 200 {
		t.Fatalf("cancel: %d %s", st, code)
	}
	if tasks := s.moveTasks(qOrdersDLQ); *tasks[0].Status != "CANCELLED" {
		t.Fatalf("tasks after cancel: %+v", tasks)
	}
	st, code = c.post("move-tasks/cancel", map[string]any{"taskHandle": started.TaskHandle}, nil)
	wantStatus(t, "cancel twice", st, code, 404, "ResourceNotFoundException")
}

// checkOpenHTTP checks the console's pages over plain HTTP: the redirect,
// the page's security headers and revalidation, the script, 404s, and the
// refusal of a host name that could be rebound to the loopback address.
func checkOpenHTTP(t *testing.T, env *integration.Env) {
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer hc.CloseIdleConnections()
	get := func(path string, host string) *http.Response {
		req, _ := http.NewRequest("GET", env.URL+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := get("/console", ""); r.StatusCode != 301 || r.Header.Get("Location") != "/console/" {
		t.Errorf("/console: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	r := get("/console/", "")
	if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") || r.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("/console/: %d %v", r.StatusCode, r.Header)
	}
	etag := r.Header.Get("ETag")
	req, _ := http.NewRequest("GET", env.URL+"/console/", nil)
	req.Header.Set("If-None-Match", etag)
	if r2, err := hc.Do(req); err != nil || r2.StatusCode != 304 {
		t.Errorf("revalidation: %v %v", r2, err)
	} else {
		r2.Body.Close()
	}
	if r := get("/console/static/app.js", ""); r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	for _, p := range []string{"/console/static/nope.js", "/console/nope", "/console/api/nope"} {
		if r := get(p, ""); r.StatusCode != 404 {
			t.Errorf("%s: %d", p, r.StatusCode)
		}
	}
	// Without credentials, a host name that could be rebound to the
	// loopback address is refused; IP addresses and localhost work.
	if r := get("/console/api/queues", "attacker.example.com"); r.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("rebound host name: %d", r.StatusCode)
	}
	if r := get("/console/api/queues", "localhost"); r.StatusCode != 200 {
		t.Errorf("localhost: %d", r.StatusCode)
	}
}

// startWithCredentials starts a server whose credentials are creds, with
// its log in a buffer, and returns its URL.
func startWithCredentials(t *testing.T, creds ...auth.Credential) (string, *testenv.SyncBuffer) {
	t.Helper()
	store, err := auth.NewStore(creds)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.SyncBuffer{}
	srv, err := server.New(server.Config{
		Account:  integration.Account,
		Region:   integration.Region,
		Logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Verifier: &auth.Verifier{Store: store, DefaultAccount: integration.Account, Region: integration.Region},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return "http://" + ln.Addr().String(), logs
}

func TestAPISignIn(t *testing.T) {
	const (
		keyA, secretA = "AKIACONSOLEA", "secret-of-account-a-0123456789"
		keyB, secretB = "AKIACONSOLEB", "secret-of-account-b-9876543210"
		accountB      = "222233334444"
	)
	url, logs := startWithCredentials(t,
		auth.Credential{AccessKeyID: keyA, SecretAccessKey: secretA, Account: integration.Account},
		auth.Credential{AccessKeyID: keyB, SecretAccessKey: secretB, Account: accountB})
	c := newAPIClient(t, url)

	sess := c.refreshSession()
	if !sess.AuthRequired || sess.SignedIn || sess.Account != "" || sess.CSRFToken == "" {
		t.Fatalf("session before sign-in: %+v", sess)
	}
	st, code := c.get("queues", nil)
	wantStatus(t, "queues before sign-in", st, code, 401, "SignInRequired")
	st, code = c.post("queues/q/purge", map[string]any{}, nil)
	wantStatus(t, "purge before sign-in", st, code, 401, "SignInRequired")

	for name, in := range map[string]map[string]string{
		"wrong secret":  {"accessKeyId": keyA, "secretAccessKey": secretB},
		"unknown key":   {"accessKeyId": "AKIANOBODY", "secretAccessKey": secretA},
		"empty secret":  {"accessKeyId": keyA, "secretAccessKey": ""},
		"secret prefix": {"accessKeyId": keyA, "secretAccessKey": secretA[:10]},
	} {
		st, code := c.post("login", in, nil)
		wantStatus(t, name, st, code, 401, "InvalidCredentials")
	}
	st, code = c.postWith("login", map[string]string{"accessKeyId": keyA, "secretAccessKey": secretA}, nil, nil)
	wantStatus(t, "sign-in without the CSRF token", st, code, 403, "InvalidCSRFToken")

	anonymous := c.csrf
	var signed sessionJSON
	if st, code := c.post("login", map[string]string{"accessKeyId": keyB, "secretAccessKey": secretB}, &signed); st != 200 {
		t.Fatalf("sign-in: %d %s", st, code)
	}
	if !signed.SignedIn || signed.Account != accountB || signed.AccessKeyID != keyB || signed.CSRFToken == anonymous || signed.ExpiresAt == 0 {
		t.Fatalf("signed-in session: %+v", signed)
	}
	cookies := c.hc.Jar.Cookies(mustParse(t, url+"/console/"))
	if len(cookies) != 1 || cookies[0].Name != "fifoq_console" || strings.Contains(cookies[0].Value, secretB) {
		t.Fatalf("cookies: %v", cookies)
	}

	// The console acts as account B: B's queues, not A's.
	c.csrf = signed.CSRFToken
	sqsA := newSQSAt(t, url, keyA, secretA)
	sqsA.create("only-in-a", nil, nil)
	var list struct {
		Queues []queueJSON `json:"queues"`
	}
	if st, code := c.get("queues", &list); st != 200 || len(list.Queues) != 0 {
		t.Fatalf("B's queues: %d %s %+v", st, code, list)
	}
	st, code = c.get("queues/only-in-a/messages", nil)
	wantStatus(t, "peek A's queue as B", st, code, 404, "QueueDoesNotExist")

	// The anonymous token does not do for the session.
	st, code = c.postWith("queues/x/purge", map[string]any{}, nil, map[string]string{"X-CSRF-Token": anonymous})
	wantStatus(t, "the pre-sign-in token", st, code, 403, "InvalidCSRFToken")

	// A tampered cookie is no session.
	value := cookies[0].Value
	tampered := newAPIClient(t, url)
	tampered.hc.Jar.SetCookies(mustParse(t, url+"/console/"), []*http.Cookie{{Name: "fifoq_console", Value: strings.Replace(value, value[:4], "AAAA", 1), Path: "/console/"}})
	st, code = tampered.get("queues", nil)
	wantStatus(t, "tampered cookie", st, code, 401, "SignInRequired")

	// Sign-out ends the session, even for a copy of its cookie.
	var out sessionJSON
	if st, code := c.post("logout", map[string]any{}, &out); st != 200 || out.SignedIn {
		t.Fatalf("logout: %d %s %+v", st, code, out)
	}
	st, code = c.get("queues", nil)
	wantStatus(t, "after sign-out", st, code, 401, "SignInRequired")
	replay := newAPIClient(t, url)
	replay.hc.Jar.SetCookies(mustParse(t, url+"/console/"), []*http.Cookie{{Name: "fifoq_console", Value: value, Path: "/console/"}})
	st, code = replay.get("queues", nil)
	wantStatus(t, "a signed-out cookie replayed", st, code, 401, "SignInRequired")

	// The log tells who signed in and who failed, never a secret.
	log := logs.String()
	for _, want := range []string{"console sign-in failed", "console sign-in ", "console sign-out", keyB} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, secret := range []string{secretA, secretB, secretA[:10]} {
		if strings.Contains(log, secret) {
			t.Fatalf("the log holds a secret:\n%s", log)
		}
	}
}

func TestAPISignInLimit(t *testing.T) {
	url, _ := startWithCredentials(t, auth.Credential{AccessKeyID: "AKIALIMIT", SecretAccessKey: "the-right-secret", Account: integration.Account})
	c := newAPIClient(t, url)
	for i := range 10 {
		st, code := c.post("login", map[string]string{"accessKeyId": "AKIALIMIT", "secretAccessKey": "guess"}, nil)
		wantStatus(t, fmt.Sprintf("failed attempt %d", i+1), st, code, 401, "InvalidCredentials")
	}
	// Past the burst, even the right secret waits.
	st, code := c.post("login", map[string]string{"accessKeyId": "AKIALIMIT", "secretAccessKey": "the-right-secret"}, nil)
	wantStatus(t, "attempt past the limit", st, code, 429, "TooManyAttempts")
}
