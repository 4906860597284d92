// Package browsertest opens HTML documents in a real headless Chromium, for
// tests. It is a normal package so that tests in other packages can import it,
// but only _test.go files should.
//
// A test starts one browser with [Start] and loads each document in a fresh
// tab with [Browser.Load]:
//
//	b := browsertest.Start(t)
//	p := b.Load(t, doc, 390)
//	if len(p.ConsoleErrors) > 0 {
//		t.Errorf("console errors: %q", p.ConsoleErrors)
//	}
//	if o := p.Overflow(t); len(o) > 0 {
//		t.Errorf("wider than 390px: %q", o)
//	}
//
// Start skips the test when no Chromium is installed, unless it runs in CI
// (testkit.CI): then it fails, because CI must run the browser tests.
//
// The pages can reach loopback only, so no test traffic leaves the machine:
// Chromium sends every other request to a guard proxy on loopback that closes
// the connection, and it resolves no host name. Such a request fails as on a
// closed network; it shows up in [Page.Requests] and, as a failed load, in
// [Page.ConsoleErrors]. Nothing in the page is changed or blocked by the
// harness, so a Content-Security-Policy acts as in any browser.
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// timeout bounds each step of the package: the start of the browser, one
// [Browser.Load], and each [Page] method. A step that takes longer fails the
// test. The tests of the package shorten it.
var timeout = 30 * time.Second

// chromiumNames are the names that Start looks up in PATH, in order.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell", "chrome"}

// Browser is one headless Chromium process. Its tabs, one for each
// [Browser.Load], share the process. It is closed by the Cleanup of the test
// that started it.
type Browser struct {
	ctx     context.Context // the first tab; its children are new tabs
	proc    *os.Process
	guarded atomic.Int64 // connections that the guard proxy refused

	mu     sync.Mutex
	output bytes.Buffer // what Chromium printed, for the messages of failures
}

// Start launches one headless Chromium for the test t and its subtests. The
// t.Cleanup that Start registers closes the browser, also when the test fails,
// and waits until the browser process and its children are gone.
//
// When no Chromium is found, Start skips the test with a one-line reason,
// unless it runs in CI: then it fails the test (testkit.Need).
func Start(t testing.TB) *Browser {
	t.Helper()
	path := testkit.Need(t, "chromium", chromiumNames...)

	// The guard proxy gets every request that does not go to loopback
	// (Chromium never proxies loopback) and closes the connection at once,
	// so nothing leaves the machine: the page sees a failed load and logs
	// an error, as on a closed network. An answer such as 502 would not do:
	// Chromium blocks it for an image (ERR_BLOCKED_BY_ORB) and logs nothing.
	b := &Browser{}
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("browsertest: listening for the guard proxy: %v", err)
	}
	go b.refuseAll(proxy)

	// chromedp's defaults give headless mode, no first run and a new
	// temporary --user-data-dir, which chromedp removes. The flags below
	// keep Chromium off the network: without the background-networking,
	// component-update and sync ones it calls Google's services at start,
	// and a closed network refuses them.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // Chromium refuses to run as root with its sandbox
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("mute-audio", true),
		// Without it a long page gets a 15px scroll bar, and its layout
		// is narrower than the width that Load was given.
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("proxy-server", "http://"+proxy.Addr().String()),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.CombinedOutput(lockedWriter{b}),
	)
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b.ctx = ctx
	t.Cleanup(func() {
		// Close gracefully, then make sure: cancel kills what is left, and
		// allocCancel waits for the process, kills any children that
		// outlived it, and removes the temporary profile.
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		err := chromedp.Cancel(cctx)
		ccancel()
		cancel()
		allocCancel()
		if err := proxy.Close(); err != nil {
			t.Logf("browsertest: closing the proxy: %v", err)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("browsertest: closing the browser: %v", err)
		}
	})

	// The first action starts the browser, and ties its life to the
	// context that it gets, so it cannot get a context with a timeout.
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case err = <-done:
	case <-time.After(timeout):
		cancel()
		// The abandoned start's own error, if any, follows the timeout.
		err = errors.Join(fmt.Errorf("no answer within %v", timeout), <-done)
	}
	if err != nil {
		t.Fatalf("browsertest: starting %s: %v%s", path, err, b.outputTail())
	}
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil {
		b.proc = c.Browser.Process()
	}
	return b
}

// refuseAll accepts connections on l and closes them at once, until l is
// closed.
func (b *Browser) refuseAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		b.guarded.Add(1)
		_ = c.Close() // refused: nothing was sent on it
	}
}

// lockedWriter collects the output of Chromium, which arrives on another
// goroutine.
type lockedWriter struct{ b *Browser }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if w.b.output.Len() < 1<<20 {
		w.b.output.Write(p)
	}
	return len(p), nil
}

// outputTail returns the last lines that Chromium printed, to add to the
// message of a failure.
func (b *Browser) outputTail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var lines []string
	for line := range strings.SplitSeq(b.output.String(), "\n") {
		// Chromium complains about the missing D-Bus on every start.
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(line, "dbus") {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "\nChromium's last output:\n\t" + strings.Join(lines, "\n\t")
}
