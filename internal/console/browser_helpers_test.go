package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromiumNames are the names a Chromium or Chrome binary goes by.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findChromium returns the path of a Chromium binary, or skips the test
// (fails it if FIFOQ_REQUIRE_CHROMIUM is set).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("FIFOQ_REQUIRE_CHROMIUM") != "" {
		// CI sets it, so that a missing browser fails instead of skipping.
		t.Fatalf("FIFOQ_REQUIRE_CHROMIUM is set but no Chromium binary is in PATH (looked for %s)", strings.Join(chromiumNames, ", "))
	}
	t.Skipf("no Chromium binary in PATH (looked for %s): the console's browser tests need one (Debian: apt-get install chromium)", strings.Join(chromiumNames, ", "))
	return ""
}

// artifactDir is where screenshots go: $FIFOQ_TEST_ARTIFACTS/console if
// set (CI keeps it), else a temporary directory of the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv("FIFOQ_TEST_ARTIFACTS"); root != "" {
		dir = filepath.Join(root, "console")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifact directory: %v", err)
	}
	return dir
}

// browser is one headless Chromium tab on the console of a test server.
type browser struct {
	t    *testing.T // the test or subtest running now
	root *testing.T // the test that started the browser
	ctx  context.Context
	base string // the console's URL: http://127.0.0.1:PORT/console/
	dir  string // where screenshots go

	mu      sync.Mutex
	errs    []string   // console errors and uncaught exceptions of the page
	allowed [][]string // errors the test provokes: all of the parts match
}

// Viewport of the screenshots: a laptop screen.
const viewportW, viewportH = 1440, 900

// newBrowser starts Chromium for the console at serverURL. Each script in
// init runs in the page before the console's own scripts, at every load.
func newBrowser(t *testing.T, serverURL string, init ...string) *browser {
	t.Helper()
	path := findChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		// Containers run tests as root, where Chromium's sandbox cannot
		// start; the pages are the test's own.
		chromedp.NoSandbox,
		chromedp.WindowSize(viewportW, viewportH),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	b := &browser{t: t, root: t, ctx: ctx, base: serverURL + "/console/", dir: artifactDir(t)}
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to ctx
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.record(m)
		}
	}()
	for _, src := range init {
		if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
			t.Fatalf("add init script: %v", err)
		}
	}
	b.do(chromedp.EmulateViewport(viewportW, viewportH))
	t.Cleanup(b.checkNoErrors)
	return b
}

// record keeps the page's console errors and exceptions (the browser
// logs a Content-Security-Policy violation as an error too): a console
// that throws or breaks its policy fails the test.
func (b *browser) record(m chromedp.ConsoleMessage) {
	if m.Type != chromedp.ConsoleError && !m.IsException() {
		return
	}
	msg := m.String() + " (" + m.URL + ")"
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, parts := range b.allowed {
		match := true
		for _, p := range parts {
			match = match && strings.Contains(msg, p)
		}
		if match {
			return
		}
	}
	b.errs = append(b.errs, msg)
}

// checkNoErrors fails the test if the page reported an error that the
// test did not allow.
func (b *browser) checkNoErrors() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errs {
		b.root.Errorf("the page reported: %s", e)
	}
}

// allowRefusal lets the page log the refusal of a request the test
// provokes on purpose: the browser logs every answer of status 4xx, at a
// moment of its own, so the test says beforehand which one to expect.
func (b *browser) allowRefusal(status int, path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed = append(b.allowed, []string{fmt.Sprintf("status of %d", status), path})
}

// timeout bounds each step; a step that waits for the page fails after it
// with what it waited for.
const stepTimeout = 15 * time.Second

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v%s", err, b.pageErrors())
	}
}

func (b *browser) pageErrors() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errs) == 0 {
		return ""
	}
	return "\npage errors:\n  " + strings.Join(b.errs, "\n  ")
}

// open loads the console afresh at a route ("queues", "queues/q/messages").
func (b *browser) open(route string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base + "#/" + route))
}

// goTo changes the route of the loaded console, as a click on a link does.
func (b *browser) goTo(route string) {
	b.t.Helper()
	b.eval(fmt.Sprintf("location.hash = %q", "#/"+route))
}

// eval runs JavaScript in the page and returns its result (awaited, if
// it is a promise) as a string.
func (b *browser) eval(js string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[any](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v%s", js, err, b.pageErrors())
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// waitFor waits until the JavaScript expression is truthy.
func (b *browser) waitFor(what, js string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout+time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(stepTimeout))); err != nil {
		b.t.Fatalf("waiting for %s (%s): %v%s", what, js, err, b.pageErrors())
	}
}

// waitText waits until the element's text contains want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf("%q in %s", want, sel), fmt.Sprintf("(document.querySelector(%q)||{}).textContent?.includes(%q)", sel, want))
}

// text returns an element's text.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return b.eval(fmt.Sprintf("(document.querySelector(%q)||{}).textContent || ''", sel))
}

// count returns the number of elements a selector matches.
func (b *browser) count(sel string) int {
	b.t.Helper()
	n, err := strconv.Atoi(b.eval(fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		b.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// click clicks an element with the mouse. The console redraws live parts
// of a page at each refresh; if the element found is replaced before the
// click lands, the click is tried again on the new one.
func (b *browser) click(sel string) {
	b.t.Helper()
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return
		}
		if try == 3 || !strings.Contains(err.Error(), "Could not find node") {
			b.t.Fatalf("click %s: %v%s", sel, err, b.pageErrors())
		}
	}
}

// holdClick clicks sel as a person does, only slower: the pointer pressed
// on the element's middle, held for hold (past the page's next live
// refresh, where hold is longer than its interval), then released there.
// A page that rebuilt the element meanwhile, rather than keeping it, gets
// no click at all.
func (b *browser) holdClick(sel string, hold time.Duration) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.ScrollIntoView(chromedp.CSS(sel)))
	var xy []float64
	if err := json.Unmarshal([]byte(b.eval(fmt.Sprintf(`(() => {
		const r = document.querySelector(%q).getBoundingClientRect();
		return JSON.stringify([r.x + r.width / 2, r.y + r.height / 2]);
	})()`, sel))), &xy); err != nil || len(xy) != 2 {
		b.t.Fatalf("the middle of %s: %v %v", sel, xy, err)
	}
	b.do(chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, xy[0], xy[1], chromedp.ButtonLeft, chromedp.ClickCount(1)))
	time.Sleep(hold)
	b.do(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, xy[0], xy[1], chromedp.ButtonLeft, chromedp.ClickCount(1)))
}

// fill replaces the value of an input, select or textarea as typing
// would: the page gets an input event.
func (b *browser) fill(sel, value string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS(sel)))
	b.eval(fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		el.focus();
		el.value = %q;
		el.dispatchEvent(new Event("input", {bubbles: true}));
		el.dispatchEvent(new Event("change", {bubbles: true}));
		return true;
	})()`, sel, value))
}

// shot saves a PNG of the whole page as name.png in the artifact directory.
func (b *browser) shot(name string) { b.t.Helper(); b.capture(name, chromedp.FullScreenshot(100)) }

// shotViewport saves a PNG of what the window shows: a modal dialog's
// backdrop covers the window, not the whole page.
func (b *browser) shotViewport(name string) {
	b.t.Helper()
	b.capture(name, chromedp.CaptureScreenshot())
}

func (b *browser) capture(name string, shoot chromedp.Action[[]byte]) {
	b.t.Helper()
	// Let a chart or a toast finish drawing: screenshots are for people.
	b.do(chromedp.Poll[chromedp.Void]("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"))
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, shoot)
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatalf("write screenshot: %v", err)
	}
	b.t.Logf("screenshot %s", p)
}

// darkMode makes the page see a system dark theme.
func (b *browser) darkMode(on bool) {
	b.t.Helper()
	scheme := "light"
	if on {
		scheme = "dark"
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	}); err != nil {
		b.t.Fatalf("emulate %s mode: %v", scheme, err)
	}
}
