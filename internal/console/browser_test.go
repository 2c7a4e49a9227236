package console_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/integration"
)

// fastRefresh makes the console poll every 300 ms, so that its live
// charts fill within a second or two of a test.
const fastRefresh = `localStorage.setItem("fifoq.refresh", "300")`

// TestBrowserConsole drives the console of a server without credentials
// in headless Chromium: every page, every action, each result checked
// through the SQS API, and a screenshot of each page.
func TestBrowserConsole(t *testing.T) {
	findChromium(t) // skips at once without one
	env := integration.Start(t)
	s := newSQS(t, env)
	groups := seed(s)
	traffic(s)
	b := newBrowser(t, env.URL, fastRefresh)

	t.Run("queues", func(t *testing.T) { browseQueueList(t, b, s) })
	t.Run("queue overview", func(t *testing.T) { browseQueueOverview(t, b) })
	t.Run("peek", func(t *testing.T) { browsePeek(t, b, s, groups) })
	t.Run("groups", func(t *testing.T) { browseGroups(t, b) })
	t.Run("send", func(t *testing.T) { browseSend(t, b, s) })
	t.Run("purge", func(t *testing.T) { browsePurge(t, b, s) })
	t.Run("redrive", func(t *testing.T) { browseRedrive(t, b, s) })
	t.Run("missing queue", func(t *testing.T) { browseMissingQueue(t, b) })

	// Last, when the console has sampled the traffic for a while: the
	// live charts, in light and dark.
	t.Run("live charts", func(t *testing.T) { browseLiveCharts(t, b) })
}

// browseQueueList checks the queue list page: each queue's depths as SQS
// gives them, the dead-letter mark, the filter, and the throughput chart.
func browseQueueList(t *testing.T, b *browser, s *sqsClient) {
	b.t = t
	b.open("queues")
	b.waitFor("the queue list", `document.querySelectorAll("#queues-table tr[data-queue]").length === 5`)
	// Depths as GetQueueAttributes gives them.
	for _, name := range []string{qOrders, qOrdersDLQ, qEvents, qAudit} {
		c := s.counts(name)
		row := fmt.Sprintf(`#queues-table tr[data-queue=%q]`, name)
		if got := b.text(row + ` td[data-col="visible"]`); got != strconv.Itoa(c[0]) {
			t.Errorf("%s: the console shows %q available, SQS says %d", name, got, c[0])
		}
		if got := b.text(row + ` td[data-col="inflight"]`); got != strconv.Itoa(c[1]) {
			t.Errorf("%s: the console shows %q in flight, SQS says %d", name, got, c[1])
		}
	}
	if !strings.Contains(b.text(`#queues-table tr[data-queue="orders-dlq.fifo"]`), "DLQ") {
		t.Error("the dead-letter queue is not marked as one")
	}
	// The filter narrows the list.
	b.fill("#queue-filter", "orders")
	b.waitFor("the filtered list", `document.querySelectorAll("#queues-table tr[data-queue]").length === 2`)
	b.fill("#queue-filter", "")
	b.waitFor("the whole list", `document.querySelectorAll("#queues-table tr[data-queue]").length === 5`)
	// The live chart draws once the traffic has been sampled twice.
	b.waitFor("the throughput chart", `document.querySelectorAll(".chart path.line.sent").length === 1`)
}

// browseQueueOverview checks orders' overview page: its attributes, the
// redrive policy, a tag and the queue's charts.
func browseQueueOverview(t *testing.T, b *browser) {
	b.t = t
	b.goTo("queues/" + qOrders)
	b.waitText(`#attributes dd[data-attr="VisibilityTimeout"]`, "60 s")
	b.waitText(`#attributes dd[data-attr="RedrivePolicy"]`, qOrdersDLQ+" after 3 receives")
	b.waitText(".page", "checkout") // a tag
	b.waitFor("the queue's charts", `document.querySelectorAll(".chart").length === 2`)
	b.shot("queue-overview")
}

// browsePeek checks orders' messages page: every message in group order,
// in flight or waiting, a message's details, a peek by group, and that
// peeking received nothing a consumer would see.
func browsePeek(t *testing.T, b *browser, s *sqsClient, groups map[string][]string) {
	b.t = t
	before := s.counts(qOrders)
	b.goTo("queues/" + qOrders + "/messages")
	total := 0
	for _, bodies := range groups {
		total += len(bodies)
	}
	b.waitFor("the peeked messages", fmt.Sprintf(`document.querySelectorAll("#messages-table tr[data-message-id]").length === %d`, total))
	// The held group's messages show as in flight on their first
	// receive; the others as available, never received.
	rows := b.eval(`JSON.stringify([...document.querySelectorAll("#messages-table tr[data-message-id]")].map(r => [r.children[2].textContent, r.dataset.state, r.dataset.receives]))`)
	var got [][3]string
	if err := json.Unmarshal([]byte(rows), &got); err != nil {
		t.Fatalf("rows %s: %v", rows, err)
	}
	var want [][3]string
	for i := range 6 {
		g := "customer-" + strconv.Itoa(i+1)
		for j := range groups[g] {
			held := g == heldGroup || (g == "customer-2" && j == 0)
			if held {
				want = append(want, [3]string{g, "inflight", "1"})
			} else {
				want = append(want, [3]string{g, "visible", "0"})
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("peeked rows (group, state, receives):\n got %v\nwant %v", got, want)
	}
	b.click(`#messages-table tr[data-message-id]`)
	b.waitFor("the message's details", `document.querySelector(".msg-detail pre.body") && document.querySelector("tr.detail:not([hidden])")`)
	b.waitText(".msg-detail", `"customer": "customer-1"`) // JSON bodies are pretty-printed
	b.shot("messages")

	// Peek again, by group, with the button.
	b.fill("#peek-group", "customer-4")
	b.click("#peek-refresh")
	b.waitFor("the group's messages", `document.querySelectorAll("#messages-table tr[data-message-id]").length === 4`)

	// Peeking received nothing: the counts are unchanged, and the next
	// receive gets customer-3 (customer-1 and -2 are held) on its first
	// receive.
	if after := s.counts(qOrders); after != before {
		t.Fatalf("peeking changed the queue's counts from %v to %v", before, after)
	}
	msgs := s.receive(qOrders, 1, 30, "")
	if len(msgs) != 1 || *msgs[0].Body != groups["customer-3"][0] {
		t.Fatalf("received %v after peeking, want customer-3's message", msgs)
	}
	if n := msgs[0].Attributes["ApproximateReceiveCount"]; n != "1" {
		t.Fatalf("ApproximateReceiveCount after peeking = %s, want 1", n)
	}
}

// browseGroups checks orders' groups page: the held groups with the
// attempt id, the summary, and the groups oldest message first.
func browseGroups(t *testing.T, b *browser) {
	b.t = t
	b.goTo("queues/" + qOrders + "/groups")
	b.waitFor("the groups", `document.querySelectorAll("#groups-table tr[data-group]").length === 6`)
	b.waitText(`#groups-table tr[data-group="customer-1"]`, "attempt "+attemptID)
	if held := b.count(`#groups-table tr[data-held="yes"]`); held != 3 { // customer-1, -2, and -3 since the peek test's receive
		t.Errorf("%d groups shown as held, want 3", held)
	}
	b.waitText("#groups-summary", "3 held by a consumer")
	// Groups come oldest message first: customer-1 sent first.
	if first := b.eval(`document.querySelector("#groups-table tr[data-group]").dataset.group`); first != heldGroup {
		t.Errorf("first group %q, want %s", first, heldGroup)
	}
	b.shot("groups")
}

// browseSend sends a message with an attribute through the send dialog
// and checks that a consumer receives it with the attribute.
func browseSend(t *testing.T, b *browser, s *sqsClient) {
	b.t = t
	b.goTo("queues/" + qEvents)
	b.waitText("#queue-name", qEvents)
	b.click("#send-open")
	b.waitFor("the send dialog", `document.querySelector("#send-dialog[open]")`)
	body := `{"event":"console-test","ok":true}`
	b.fill("#send-body", body)
	b.click(`#send-dialog .d-body .btn.small`) // + Add attribute
	b.fill(`#send-dialog .attr-name`, "origin")
	b.fill(`#send-dialog .attr-value`, "console")
	b.shotViewport("send")
	b.click("#send-dialog-submit")
	b.waitText("#toasts", "Message sent")
	b.waitFor("the dialog to close", `!document.querySelector("#send-dialog")`)

	// The message is there for a consumer, with its attribute.
	found := false
	for range 3 {
		for _, m := range s.receive(qEvents, 10, 30, "") {
			if *m.Body == body {
				found = true
				if v := m.MessageAttributes["origin"]; v.StringValue == nil || *v.StringValue != "console" {
					t.Errorf("attribute origin = %+v", v)
				}
			}
		}
		if found {
			break
		}
	}
	if !found {
		t.Fatal("the message sent from the console was not received")
	}
}

// browsePurge purges audit-log through its dialog, checks it empty in SQS,
// and checks that a second purge within the minute is refused with SQS's
// reason shown.
func browsePurge(t *testing.T, b *browser, s *sqsClient) {
	b.t = t
	b.goTo("queues/" + qAudit)
	b.waitText("#queue-name", qAudit)
	if c := s.counts(qAudit); c[0] != 30 {
		t.Fatalf("audit-log holds %v before the purge", c)
	}
	b.click("#purge-open")
	b.waitFor("the purge dialog", `document.querySelector("#purge-dialog[open]")`)
	b.waitText("#purge-dialog", "30 messages")
	b.shotViewport("purge")
	b.click("#purge-dialog-submit")
	b.waitText("#toasts", "Queue purged")
	if c := s.counts(qAudit); c != [3]int{} {
		t.Fatalf("after the purge, audit-log holds %v", c)
	}
	// Purging again within a minute is refused, as SQS does; the
	// console says why.
	b.allowRefusal(403, "/console/api/queues/"+qAudit+"/purge")
	b.click("#purge-open")
	b.click("#purge-dialog-submit")
	b.waitText("#purge-dialog .err", "Only one PurgeQueue")
	b.click(`#purge-dialog .d-foot .btn:not(.danger)`)
	b.waitFor("the dialog to close", `!document.querySelector("#purge-dialog")`)
}

// browseRedrive starts a redrive of orders' dead-letter queue at one
// message a second, cancels it, and checks both and what is left in SQS.
func browseRedrive(t *testing.T, b *browser, s *sqsClient) {
	b.t = t
	// The task moves at its rate of the server's clock: stopped for this
	// step, the clock lets it move nothing before the cancel, however
	// slowly the browser goes (at 1/s it would finish the queue's 12
	// messages in 12 s, and the cancel would find no task).
	s.clockStopped.Store(true)
	defer s.clockStopped.Store(false)
	b.goTo("queues/" + qOrdersDLQ + "/dead-letter")
	b.waitFor("the redrive form", `document.querySelector("#redrive-form")`)
	b.waitText("#redrive-form", "Move messages to")
	b.fill("#redrive-rate", "1")
	b.click("#redrive-start")
	b.waitText("#toasts", "Redrive started")
	b.waitFor("the running task", `document.querySelector('#tasks-table tr[data-status="RUNNING"] .cancel-task')`)
	tasks := s.moveTasks(qOrdersDLQ)
	if len(tasks) != 1 || aws.ToString(tasks[0].Status) != "RUNNING" || aws.ToInt32(tasks[0].MaxNumberOfMessagesPerSecond) != 1 {
		t.Fatalf("move tasks after starting: %+v", tasks)
	}
	b.shot("redrive")

	// Held past the page's refreshes (every 300 ms here), as a slow
	// click is: the table, rebuilt at each, once lost such clicks.
	b.holdClick(`#tasks-table tr[data-status="RUNNING"] .cancel-task`, time.Second)
	b.waitText("#toasts", "Redrive cancelled")
	b.waitFor("the cancelled task", `document.querySelector('#tasks-table tr[data-status="CANCELLED"]')`)
	if tasks := s.moveTasks(qOrdersDLQ); len(tasks) != 1 || aws.ToString(tasks[0].Status) != "CANCELLED" {
		t.Fatalf("move tasks after cancelling: %+v", tasks)
	}
	// At one message a second, a handful moved at most; the rest wait.
	if c := s.counts(qOrdersDLQ); c[0] < 6 {
		t.Fatalf("the dead-letter queue holds %v after a cancelled redrive at 1/s", c)
	}
}

// browseMissingQueue checks that the page of a queue that does not exist
// says so.
func browseMissingQueue(t *testing.T, b *browser) {
	b.t = t
	b.allowRefusal(404, "/console/api/queues/no-such-queue")
	b.goTo("queues/no-such-queue")
	b.waitText("#queue-error", "does not exist")
}

// browseLiveCharts waits for several seconds of sampled traffic and takes
// the screenshots of the live charts, of the queue list in light and dark
// and of one queue's page.
func browseLiveCharts(t *testing.T, b *browser) {
	b.t = t
	b.goTo("queues")
	const drawn = `(document.querySelector(".chart path.line.sent")?.getAttribute("d") || "").split("L").length > 20`
	b.waitFor("several seconds of samples", drawn)
	b.waitFor("the rates in the legend", `document.querySelector(".legend b").textContent !== "–"`)
	b.eval(`document.getElementById("toasts").replaceChildren()`) // the earlier steps' notices
	b.shot("queues")
	b.darkMode(true)
	b.shot("queues-dark")
	b.darkMode(false)
	b.goTo("queues/" + qTraffic)
	b.waitFor("the queue's live charts", drawn)
	b.shot("queue-live")
}

// TestBrowserSignIn drives the sign-in of a server with credentials:
// refused with a wrong secret, then signed in, then signed out.
func TestBrowserSignIn(t *testing.T) {
	const keyID, secret = "AKIAFIFOQCONSOLE01", "console-secret-0123456789abcdef"
	findChromium(t)
	env := integration.StartWith(t, integration.Options{
		Credentials: []auth.Credential{{AccessKeyID: keyID, SecretAccessKey: secret, Account: integration.Account}},
		AccessKeyID: keyID, SecretAccessKey: secret,
	})
	s := newSQS(t, env)
	s.create(qOrders, map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}, nil)
	s.send(qOrders, `{"order":1}`, "g", nil)
	b := newBrowser(t, env.URL, fastRefresh)

	b.open("queues")
	b.waitFor("the sign-in form", `document.querySelector("#login-key")`)
	if n := b.count("#queues-table"); n != 0 {
		t.Fatal("the queues show before sign-in")
	}
	b.shot("login")

	b.allowRefusal(401, "/console/api/login")
	b.fill("#login-key", keyID)
	b.fill("#login-secret", "wrong-secret")
	b.click("#login-submit")
	b.waitFor("the refusal", `!document.querySelector("#login-error").hidden`)
	if got := b.text("#login-error"); !strings.Contains(got, "wrong") {
		t.Fatalf("sign-in error %q", got)
	}
	b.shot("login-refused")

	b.fill("#login-secret", secret)
	b.click("#login-submit")
	b.waitFor("the queue list", `document.querySelectorAll("#queues-table tr[data-queue]").length === 1`)
	b.waitText(".topbar", keyID)

	cookies, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base}})
	if err != nil {
		t.Fatalf("GetCookies: %v", err)
	}
	var session *network.Cookie
	for _, c := range cookies.Cookies {
		if c.Name == "fifoq_console" {
			session = c
		}
	}
	if session == nil || !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Path != "/console/" || strings.Contains(session.Value, secret) {
		t.Fatalf("session cookie %+v", session)
	}

	// The page's script cannot read the cookie, and a call without the
	// CSRF token is refused even with it.
	if got := b.eval(`document.cookie`); strings.Contains(got, "fifoq_console") {
		t.Fatalf("document.cookie shows the session: %q", got)
	}
	b.allowRefusal(403, "/console/api/queues/orders.fifo/purge")
	status := b.eval(`fetch("api/queues/orders.fifo/purge", {method: "POST", body: "{}"}).then(r => r.status)`)
	if status != "403" {
		t.Fatalf("a POST without the CSRF token answered %s, want 403", status)
	}
	if c := s.counts(qOrders); c[0] != 1 {
		t.Fatalf("the refused purge changed the queue: %v", c)
	}

	b.allowRefusal(401, "/console/api/queues")
	b.click("#signout")
	b.waitFor("the sign-in form", `document.querySelector("#login-key")`)
	if status := b.eval(`fetch("api/queues").then(r => r.status)`); status != "401" {
		t.Fatalf("after sign-out, the API answered %s, want 401", status)
	}
}
