package browsertest

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Height is the height of the viewport of every [Browser.Load].
const Height = 900

// DocPath is the only path that the test server of a [Page] serves.
const DocPath = "/report.html"

// faviconPath is where the browser looks for the icon of a page that has no
// icon link.
const faviconPath = "/favicon.ico"

// settleLimit bounds how long Load and the Page methods wait for the
// requests of the page to end. A page whose requests do not end by then is
// still returned, and the test gets a log line.
const settleLimit = 5 * time.Second

// Page is a document that [Browser.Load] opened in its own tab.
//
// The slice fields are a snapshot of what the tab did. Load takes it once the
// page has loaded and its requests have ended, and every Page method takes it
// again when it returns, so that it also holds what the method caused. Events
// that come later show up in the next snapshot.
type Page struct {
	// URL is the address of the document, http://127.0.0.1:PORT/report.html.
	URL string

	// ConsoleErrors are the errors that the DevTools console would show, in
	// order: calls of console.error and of a failing console.assert,
	// uncaught exceptions and unhandled rejections, and entries of the
	// browser log with the level error. The log is where Chromium reports a
	// Content-Security-Policy violation, a failed or blocked request, and a
	// 404. Each has a prefix that tells its kind, such as "console.error: ",
	// "uncaught: " or "log/security: ", and ends with " (at URL:LINE)" when
	// the browser knows the place; URL has no origin when it is the test
	// server.
	ConsoleErrors []string

	// Requests are the URLs that the tab requested, in order, as
	// Network.requestWillBeSent reported them: the document itself first,
	// then what it loaded or fetched, also the requests that failed or that
	// the page's Content-Security-Policy blocked (Chromium reports those
	// too). A redirect adds the new URL. Left out: data: URLs (Chromium
	// reports few of them anyway), and the request for /favicon.ico that
	// the browser itself makes for a page with no icon link, at a time of
	// its own.
	Requests []string

	// ServerHits are the request URIs (path and query) that the loopback
	// test server received, in order. The server answers DocPath with the
	// document, /favicon.ico with 204 No Content (that hit is not recorded,
	// see Requests), and every other path with 404.
	ServerHits []string

	width int
	ctx   context.Context // the tab
	col   *collector
}

// Load serves doc from a new loopback test server at [DocPath], opens it in a
// new tab with a viewport of width×[Height] CSS pixels and a device scale
// factor of 1 (a desktop viewport: no mobile emulation, no scroll bars),
// waits for the load event and for document.readyState == "complete", and
// then for the requests of the page to end. It fails the test when that takes
// longer than 30 s.
//
// The page can reach its own server and other loopback addresses. Any other
// request goes to the guard proxy of the browser, which closes the
// connection: the request fails, as on a closed network, and shows up in
// Requests and, as a failed load, in ConsoleErrors.
//
// The tab and the server stay until the end of the test t, whose Cleanup
// closes them.
func (b *Browser) Load(t testing.TB, doc []byte, width int) *Page {
	t.Helper()
	if width <= 0 {
		t.Fatalf("browsertest: Load: width %d, want > 0", width)
	}
	col := &collector{inflight: map[network.RequestID]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == faviconPath {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		col.hit(r.URL.RequestURI())
		if r.URL.Path != DocPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(doc)
	}))
	col.origin = srv.URL
	p := &Page{URL: srv.URL + DocPath, width: width, col: col}

	tabCtx, tabCancel := chromedp.NewContext(b.ctx, chromedp.WithListener(col.event))
	p.ctx = tabCtx
	t.Cleanup(func() {
		tabCancel() // closes the tab and waits until it is gone
		srv.Close()
	})

	// The first action on tabCtx creates the tab and ties the life of the
	// tab to the context it gets, so the timeout is a timer, not a context.
	var stage string
	timer := time.AfterFunc(timeout, tabCancel)
	defer timer.Stop()
	fail := func(err error) {
		t.Helper()
		if !timer.Stop() {
			t.Fatalf("browsertest: loading %s at width %d took longer than %v (stuck at: %s): %v%s", p.URL, width, timeout, stage, err, b.outputTail())
		}
		t.Fatalf("browsertest: loading %s at width %d: %s: %v%s", p.URL, width, stage, err, b.outputTail())
	}

	// The tab exists once this returns, and chromedp has enabled the Runtime,
	// Log, Network and Page domains: WithListener sees every event.
	stage = "opening a tab"
	if err := chromedp.Do(tabCtx); err != nil {
		fail(err)
	}
	stage = "setting up the tab"
	if _, err := chromedp.Call(tabCtx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(width), Height: Height, DeviceScaleFactor: 1,
	}); err != nil {
		fail(err)
	}

	stage = "navigating"
	resp, err := chromedp.Run(tabCtx, chromedp.NavigateResponse(p.URL))
	if err != nil {
		fail(err)
	}
	if resp == nil || resp.Status != http.StatusOK {
		var status int64
		if resp != nil {
			status = resp.Status
		}
		fail(fmt.Errorf("the document came with the HTTP status %d", status))
	}

	for {
		stage = `waiting for document.readyState == "complete"`
		state, err := chromedp.Run(tabCtx, chromedp.Evaluate[string](`location.href === `+jsString(p.URL)+` ? document.readyState : "elsewhere: " + location.href`))
		if err != nil {
			fail(err)
		}
		if state == "complete" {
			break
		}
		stage += " (it is " + jsString(state) + ")"
		time.Sleep(10 * time.Millisecond)
	}

	stage = "waiting for the requests of the page to end"
	if err := p.settle(tabCtx, t); err != nil {
		fail(err)
	}
	if !timer.Stop() {
		fail(errors.New("the tab was closed"))
	}
	return p
}

// settle waits until the page has no request in flight, or settleLimit
// passes, and then takes the snapshot of the fields of p.
//
// Each round evaluates a promise that resolves after the tasks that are due,
// so that a request or an error of a timer of 0 ms is seen. Its answer comes
// after every event that the browser sent before it, and the listener of the
// tab has handled those events by then.
func (p *Page) settle(ctx context.Context, t testing.TB) error {
	t.Helper()
	deadline := time.Now().Add(settleLimit)
	for {
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`new Promise(r => setTimeout(r, 0))`, chromedp.EvalAwaitPromise)); err != nil {
			return err
		}
		pending := p.col.pending()
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("browsertest: %s: requests still open after %v: %q", p.URL, settleLimit, pending)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.col.snapshot(p)
	return nil
}

// run runs a on the tab with the timeout, settles, and fails the test on an
// error.
func run[T any](p *Page, t testing.TB, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err == nil {
		err = p.settle(ctx, t)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			t.Fatalf("browsertest: %s on %s took longer than %v: %v", what, p.URL, timeout, err)
		}
		t.Fatalf("browsertest: %s on %s: %v", what, p.URL, err)
	}
	return v
}

// Eval evaluates the JavaScript expression js in the page and decodes its
// JSON value into out, which is a pointer, or nil to drop the value. A
// promise is awaited. An exception or a value that cannot be decoded fails
// the test.
func (p *Page) Eval(t testing.TB, js string, out any) {
	t.Helper()
	raw := run(p, t, "Eval", chromedp.Evaluate[*runtime.RemoteObject](js, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
	if out == nil {
		return
	}
	if raw == nil || len(raw.Value) == 0 {
		what := "missing"
		if raw != nil {
			what = string(raw.Type)
		}
		t.Fatalf("browsertest: Eval %q on %s: the result is %s, not a JSON value", js, p.URL, what)
	}
	if err := json.Unmarshal(raw.Value, out); err != nil {
		t.Fatalf("browsertest: Eval %q on %s: decoding %s into %T: %v", js, p.URL, raw.Value, out, err)
	}
}

// Text returns document.body.innerText: the text that the page shows, as
// rendered (hidden elements left out, one line for each block).
func (p *Page) Text(t testing.TB) string {
	t.Helper()
	var s string
	p.Eval(t, `document.body ? document.body.innerText : ""`, &s)
	return s
}

//go:embed overflow.js
var overflowJS string

// Overflow reports what makes the page wider than its viewport. The first
// entry is "document: scrollWidth=N > clientWidth=M" when the page scrolls
// sideways. The others name each element, or the parent of a text, whose
// right edge passes the width of the viewport, as "tag#id.class: right=NNN"
// (or "tag#id.class (text): right=NNN"). An empty result means the page fits.
//
// Choices:
//   - An element inside a container whose overflow-x is not visible (auto,
//     scroll, hidden or clip) is left out: that container clips it or
//     scrolls it, so it cannot widen the page. A wide table in a scroll box
//     that fits is fine. The container itself is reported when it is too
//     wide. The html and body elements do not count as such containers,
//     because overflow on them clips the page itself and would hide the
//     problem.
//   - An element that lies within an element already reported (its right
//     edge not further right) is left out, so a wide box gives one entry
//     and not one for each child.
//   - Elements with no size, and the left edge (content pushed out to the
//     left does not scroll), are not checked. An edge counts when it passes
//     the viewport by more than half a pixel.
func (p *Page) Overflow(t testing.TB) []string {
	t.Helper()
	var out []string
	p.Eval(t, overflowJS, &out)
	return out
}

// Screenshot writes a PNG of the whole page to path, creating its directory:
// the full height, and the full width when the page is wider than its
// viewport (so that the overflow shows), at a device scale factor of 1.
func (p *Page) Screenshot(t testing.TB, path string) { p.ScreenshotTop(t, path, 0) }

// ScreenshotTop is Screenshot cut to the page's top maxHeight pixels (0:
// the whole page), for a picture of what a reader sees first.
func (p *Page) ScreenshotTop(t testing.TB, path string, maxHeight int) {
	t.Helper()
	png := run(p, t, "Screenshot", func(ctx context.Context, tgt *chromedp.Target) ([]byte, error) {
		m, err := cdp.Call(ctx, tgt, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return nil, err
		}
		w, h := float64(p.width), float64(Height)
		if cs := m.CSSContentSize; cs != nil {
			w, h = max(w, cs.Width), max(h, cs.Height)
		}
		if maxHeight > 0 {
			h = min(h, float64(maxHeight))
		}
		res, err := cdp.Call(ctx, tgt, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format:                page.CaptureScreenshotFormatPng,
			Clip:                  &page.Viewport{Width: w, Height: h, Scale: 1},
			CaptureBeyondViewport: new(true),
			FromSurface:           new(true),
		})
		return res.Data, err
	})
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("browsertest: Screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("browsertest: Screenshot: %v", err)
	}
}

// collector gathers the events of one tab and the hits of its server. The
// listener of the tab and the server write to it on their own goroutines.
type collector struct {
	origin string

	mu            sync.Mutex
	consoleErrors []string
	requests      []string
	serverHits    []string
	inflight      map[network.RequestID]string
}

func (c *collector) hit(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverHits = append(c.serverHits, uri)
}

// event is the listener of the tab. It runs in the loop that reads the
// messages of the tab, so it must be quick and send no command.
func (c *collector) event(ev any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			msg := "console." + string(ev.Type) + ": " + argsText(ev.Args)
			if st := ev.StackTrace; st != nil && len(st.CallFrames) > 0 {
				f := st.CallFrames[0]
				msg += c.at(f.URL, f.LineNumber+1)
			}
			c.consoleErrors = append(c.consoleErrors, msg)
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			desc, _, _ := strings.Cut(valueText(d.Exception), "\n    at ")
			text += " " + desc
		}
		url := d.URL
		if url == "" && d.StackTrace != nil && len(d.StackTrace.CallFrames) > 0 {
			url = d.StackTrace.CallFrames[0].URL
		}
		c.consoleErrors = append(c.consoleErrors, "uncaught: "+strings.TrimSpace(text)+c.at(url, d.LineNumber+1))
	case *log.EventEntryAdded:
		if e := ev.Entry; e.Level == log.EntryLevelError {
			c.consoleErrors = append(c.consoleErrors, "log/"+string(e.Source)+": "+e.Text+c.at(e.URL, e.LineNumber+1))
		}
	case *network.EventRequestWillBeSent:
		url := ev.Request.URL + ev.Request.URLFragment
		if strings.HasPrefix(url, "data:") || url == c.origin+faviconPath && ev.Type == network.ResourceTypeOther {
			return
		}
		c.requests = append(c.requests, url)
		c.inflight[ev.RequestID] = url
	case *network.EventLoadingFinished:
		delete(c.inflight, ev.RequestID)
	case *network.EventLoadingFailed:
		delete(c.inflight, ev.RequestID)
	}
}

// at tells where a message came from, with no origin for the test server.
func (c *collector) at(url string, line int64) string {
	if url == "" {
		return ""
	}
	url = strings.TrimPrefix(url, c.origin)
	if line <= 0 {
		return " (at " + url + ")"
	}
	return fmt.Sprintf(" (at %s:%d)", url, line)
}

func (c *collector) pending() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var urls []string
	for _, u := range c.inflight {
		urls = append(urls, u)
	}
	return urls
}

func (c *collector) snapshot(p *Page) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.ConsoleErrors = append([]string(nil), c.consoleErrors...)
	p.Requests = append([]string(nil), c.requests...)
	p.ServerHits = append([]string(nil), c.serverHits...)
}

// argsText renders the arguments of a console call, separated by spaces.
func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = valueText(a)
	}
	return strings.Join(parts, " ")
}

// valueText renders one value: a string as it is, an object by its
// description.
func valueText(o *runtime.RemoteObject) string {
	if o == nil {
		return "null"
	}
	if o.Type == runtime.RemoteObjectTypeString {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
	}
	switch {
	case o.UnserializableValue != "":
		return string(o.UnserializableValue)
	case o.Description != "":
		return o.Description
	case len(o.Value) > 0:
		return string(o.Value)
	}
	return string(o.Type)
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
