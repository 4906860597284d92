package browsertest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

var screenshotDir = flag.String("screenshots", "", "keep the screenshots of the tests in this directory")

const cleanDoc = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Clean</title></head>
<body><h1>Hello report</h1><p>All checks passed.</p></body></html>`

// TestPages checks what Load records, on one shared browser.
func TestPages(t *testing.T) {
	testkit.NeedHeavy(t, "Chromium")
	b := Start(t)

	t.Run("clean", func(t *testing.T) {
		p := b.Load(t, []byte(cleanDoc), 390)
		if len(p.ConsoleErrors) != 0 {
			t.Errorf("ConsoleErrors = %q, want none", p.ConsoleErrors)
		}
		if want := []string{p.URL}; !slices.Equal(p.Requests, want) {
			t.Errorf("Requests = %q, want %q", p.Requests, want)
		}
		if want := []string{DocPath}; !slices.Equal(p.ServerHits, want) {
			t.Errorf("ServerHits = %q, want %q", p.ServerHits, want)
		}
		if text := p.Text(t); !strings.Contains(text, "Hello report") || !strings.Contains(text, "All checks passed.") {
			t.Errorf("Text = %q, want the heading and the paragraph", text)
		}
		var size struct{ W, H, Scale float64 }
		p.Eval(t, `({W: innerWidth, H: innerHeight, Scale: devicePixelRatio})`, &size)
		if size.W != 390 || size.H != Height || size.Scale != 1 {
			t.Errorf("viewport = %+v, want 390×%d at scale 1", size, Height)
		}
	})

	t.Run("external image", func(t *testing.T) {
		before := b.guarded.Load()
		p := b.Load(t, []byte(`<!doctype html><body><p>x</p><img src="http://198.51.100.1/x.png"></body>`), 390)
		const img = "http://198.51.100.1/x.png"
		if want := []string{p.URL, img}; !slices.Equal(p.Requests, want) {
			t.Errorf("Requests = %q, want %q", p.Requests, want)
		}
		if want := []string{DocPath}; !slices.Equal(p.ServerHits, want) {
			t.Errorf("ServerHits = %q, want %q", p.ServerHits, want)
		}
		if !containsAll(p.ConsoleErrors, "Failed to load resource", img) {
			t.Errorf("ConsoleErrors = %q, want the failed load of %s", p.ConsoleErrors, img)
		}
		// The request went to the guard proxy on loopback, not out.
		if b.guarded.Load() == before {
			t.Errorf("the guard proxy saw no connection for %s", img)
		}
	})

	t.Run("fetch", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><body><p>x</p><script>fetch('/other?q=1')</script></body>`), 390)
		if want := []string{p.URL, strings.TrimSuffix(p.URL, DocPath) + "/other?q=1"}; !slices.Equal(p.Requests, want) {
			t.Errorf("Requests = %q, want %q", p.Requests, want)
		}
		if want := []string{DocPath, "/other?q=1"}; !slices.Equal(p.ServerHits, want) {
			t.Errorf("ServerHits = %q, want %q", p.ServerHits, want)
		}
		if !containsAll(p.ConsoleErrors, "404", "/other") {
			t.Errorf("ConsoleErrors = %q, want the 404 of /other", p.ConsoleErrors)
		}
	})

	const csp = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`
	t.Run("CSP inline script", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><head>`+csp+`</head><body><p id=s>blocked</p>
<script>document.getElementById('s').textContent = 'script ran'</script></body>`), 390)
		if !containsAll(p.ConsoleErrors, "Content Security Policy", "inline script") {
			t.Errorf("ConsoleErrors = %q, want the CSP violation of the inline script", p.ConsoleErrors)
		}
		if text := p.Text(t); strings.Contains(text, "script ran") {
			t.Errorf("the inline script ran despite the CSP: Text = %q", text)
		}
	})

	t.Run("CSP external image", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><head>`+csp+`</head><body><p>x</p>
<img src="http://198.51.100.1/y.png"><img alt="inline" src="data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs="></body>`), 390)
		if !containsAll(p.ConsoleErrors, "Content Security Policy", "http://198.51.100.1/y.png") {
			t.Errorf("ConsoleErrors = %q, want the CSP violation of the image", p.ConsoleErrors)
		}
		if len(p.ConsoleErrors) != 1 {
			t.Errorf("ConsoleErrors = %q, want only the violation (the data: image is allowed)", p.ConsoleErrors)
		}
		for _, r := range p.Requests {
			if strings.HasPrefix(r, "data:") {
				t.Errorf("Requests has the data: URL %q", r)
			}
		}
	})

	t.Run("console errors and exceptions", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><body><p>x</p>
<script>console.log('fine'); console.warn('careful'); console.error('x')</script>
<script>throw new Error('y')</script>
<script>console.assert(1 === 2, 'z'); Promise.reject(new Error('w'))</script>
<script>setTimeout(() => { throw new Error('late') }, 0)</script></body>`), 390)
		want := []string{
			"console.error: x (at /report.html:2)",
			"uncaught: Uncaught Error: y (at /report.html:3)",
			"console.assert: z (at /report.html:4)",
			"uncaught: Uncaught (in promise) Error: w (at /report.html:4)",
			"uncaught: Uncaught Error: late (at /report.html:5)",
		}
		if !slices.Equal(p.ConsoleErrors, want) {
			t.Errorf("ConsoleErrors =\n\t%s\nwant\n\t%s", strings.Join(p.ConsoleErrors, "\n\t"), strings.Join(want, "\n\t"))
		}
		// An error that a method causes shows up when it returns.
		p.Eval(t, `console.error('from Eval', 42)`, nil)
		if got := p.ConsoleErrors[len(p.ConsoleErrors)-1]; !strings.HasPrefix(got, "console.error: from Eval 42") {
			t.Errorf("last ConsoleErrors entry after Eval = %q, want the console.error of Eval", got)
		}
	})

	const wide = `<div id="wide" class="box big" style="width:600px;height:40px;background:#c00">wide <span>child</span></div>`
	t.Run("overflow", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><body>`+wide+`</body>`), 390)
		want := []string{"document: scrollWidth=608 > clientWidth=390", "div#wide.box.big: right=608"}
		if got := p.Overflow(t); !slices.Equal(got, want) {
			t.Errorf("Overflow() = %q, want %q", got, want)
		}
	})

	t.Run("overflow in a scroll box", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><body><div style="width:100%;overflow-x:auto">`+wide+`</div></body>`), 390)
		if got := p.Overflow(t); len(got) != 0 {
			t.Errorf("Overflow() = %q, want none", got)
		}
		var sw int
		p.Eval(t, `document.querySelector('#wide').parentElement.scrollWidth`, &sw)
		if sw != 600 {
			t.Errorf("the scroll box is %dpx wide inside, want 600: the check above tested nothing", sw)
		}
	})

	t.Run("overflow of a long word", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><body><p id="w">`+strings.Repeat("x", 200)+`</p></body>`), 390)
		got := p.Overflow(t)
		if len(got) != 2 || !strings.HasPrefix(got[1], "p#w (text): right=") {
			t.Errorf("Overflow() = %q, want the document and the text of p#w", got)
		}
	})

	t.Run("no overflow when wide enough", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><body>`+wide+`</body>`), 800)
		if got := p.Overflow(t); len(got) != 0 {
			t.Errorf("Overflow() at width 800 = %q, want none", got)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><body style="margin:0;background:#fff">
<h1 style="margin:0;padding:16px;font:bold 32px sans-serif">Screenshot test</h1>
<div style="height:1500px;background:linear-gradient(#36c 0 50%, #c33 50% 100%)"></div></body>`), 390)
		img := screenshot(t, p, "tall-390.png")
		if b := img.Bounds(); b.Dx() != 390 || b.Dy() < 1500 {
			t.Errorf("screenshot is %dx%d, want 390 wide and the whole page (> 1500) high", b.Dx(), b.Dy())
		}
		// Below the viewport, so this checks the full page too.
		if c := rgb(img.At(200, 1400)); c != [3]uint8{0xcc, 0x33, 0x33} {
			t.Errorf("pixel at (200,1400) = %v, want #cc3333", c)
		}
		if c := rgb(img.At(200, 300)); c != [3]uint8{0x33, 0x66, 0xcc} {
			t.Errorf("pixel at (200,300) = %v, want #3366cc", c)
		}
	})

	t.Run("screenshot of an overflowing page", func(t *testing.T) {
		p := b.Load(t, []byte(`<!doctype html><body>`+wide+`</body>`), 390)
		img := screenshot(t, p, "wide-390.png")
		if b := img.Bounds(); b.Dx() != 608 || b.Dy() != Height {
			t.Errorf("screenshot is %dx%d, want 608x%d", b.Dx(), b.Dy(), Height)
		}
	})

	t.Run("Eval", func(t *testing.T) {
		p := b.Load(t, []byte(cleanDoc), 390)
		var n int
		p.Eval(t, `new Promise(r => setTimeout(() => r(6 * 7), 10))`, &n)
		if n != 42 {
			t.Errorf("Eval of a promise = %d, want 42", n)
		}
		for _, tc := range []struct{ js, want string }{
			{`throw new Error('boom')`, "boom"},
			{`1 +`, "SyntaxError"},
			{`undefined`, "not a JSON value"},
			{`"text"`, "decoding"},
		} {
			f := runFake(func(tb testing.TB) { p.Eval(tb, tc.js, &n) })
			if !f.failedWith(tc.want) {
				t.Errorf("Eval(%q) failed with %q, want a failure with %q", tc.js, f.fatals, tc.want)
			}
		}
	})
}

// TestLoadTimeout checks that a page that never loads fails the test with a
// clear message, and that the browser still works after it.
func TestLoadTimeout(t *testing.T) {
	testkit.NeedHeavy(t, "Chromium")
	b := Start(t)
	// An image from a loopback server that never answers holds up the load
	// event.
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := hold.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if err := hold.Close(); err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close() // held open only to be counted
		}
	})

	defer func(d time.Duration) { timeout = d }(timeout)
	timeout = 2 * time.Second
	doc := fmt.Sprintf(`<!doctype html><body><img src="http://%s/never.png"></body>`, hold.Addr())
	start := time.Now()
	f := runFake(func(tb testing.TB) { b.Load(tb, []byte(doc), 390) })
	if !f.failedWith("took longer than 2s (stuck at: navigating)") {
		t.Errorf("Load of a page that never loads failed with %q, want a timeout", f.fatals)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timeout of 2s took %v", d)
	}
	timeout = 30 * time.Second
	p := b.Load(t, []byte(cleanDoc), 390)
	if !strings.Contains(p.Text(t), "Hello report") {
		t.Errorf("the browser does not work after a timeout")
	}
}

// TestTabsAreClosed checks that each Load has a tab of its own, closed when
// its test ends, in the one browser process.
func TestTabsAreClosed(t *testing.T) {
	testkit.NeedHeavy(t, "Chromium")
	b := Start(t)
	before := pageTargets(t, b)
	t.Run("load", func(t *testing.T) {
		b.Load(t, []byte(cleanDoc), 390)
		b.Load(t, []byte(cleanDoc), 390)
		if n := pageTargets(t, b); n != before+2 {
			t.Errorf("%d tabs during two Loads, want %d", n, before+2)
		}
	})
	if n := pageTargets(t, b); n != before {
		t.Errorf("%d tabs after the Loads, want %d", n, before)
	}
}

// TestNoLeftovers checks that no process of the browser survives the test
// that started it, and that its profile is gone.
func TestNoLeftovers(t *testing.T) {
	testkit.NeedHeavy(t, "Chromium")
	var dir string
	t.Run("browser", func(t *testing.T) {
		b := Start(t)
		b.Load(t, []byte(cleanDoc), 390)
		dir = userDataDir(t, b)
		// The check below must be able to see the processes.
		if procs := processesUsing(t, dir); len(procs) < 2 {
			t.Fatalf("pgrep found %d processes of the running browser (%q), want the browser and its children", len(procs), procs)
		}
	})
	if procs := processesUsing(t, dir); len(procs) > 0 {
		t.Errorf("processes left after the test: %q", procs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the profile %s is still there (Stat: %v)", dir, err)
	}
}

// childEnv makes TestChild run, as the child process of TestFailingTestCleansUp.
const childEnv = "BROWSERTEST_CHILD"

// TestFailingTestCleansUp runs TestChild in a child process, where it fails
// or panics with a browser open, and checks that no process survives it.
func TestFailingTestCleansUp(t *testing.T) {
	testkit.NeedHeavy(t, "Chromium")
	for _, mode := range []string{"fatal", "panic"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the child passed, want a failure:\n%s", out)
			}
			if !bytes.Contains(out, []byte("on purpose")) {
				t.Fatalf("the child failed for another reason: %v\n%s", err, out)
			}
			m := regexp.MustCompile(`(?m)^DATADIR=(.+)$`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("the child printed no DATADIR:\n%s", out)
			}
			dir := string(m[1])
			if procs := processesUsing(t, dir); len(procs) > 0 {
				t.Errorf("processes left after the child: %q", procs)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the profile %s is still there (Stat: %v)", dir, err)
			}
		})
	}
}

func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs only as the child of TestFailingTestCleansUp")
	}
	b := Start(t)
	b.Load(t, []byte(cleanDoc), 390)
	fmt.Printf("DATADIR=%s\n", userDataDir(t, b))
	if mode == "panic" {
		panic("panicking on purpose")
	}
	t.Fatal("failing on purpose")
}

// TestNoChromium checks that Start skips without Chromium, and fails in CI.
func TestNoChromium(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "")
	f := runFake(func(tb testing.TB) { Start(tb) })
	if len(f.skips) != 1 || !strings.Contains(f.skips[0], "chromium or chromium-browser or") || len(f.fatals) > 0 {
		t.Errorf("without CI: skips %q, fatals %q; want one skip", f.skips, f.fatals)
	}
	t.Setenv("CI", "true")
	f = runFake(func(tb testing.TB) { Start(tb) })
	if !f.failedWith("CI must install it") || len(f.skips) > 0 {
		t.Errorf("with CI: skips %q, fatals %q; want a failure", f.skips, f.fatals)
	}
}

// TestSpeed measures Start and ten Loads, each in its own tab that closes
// after it.
func TestSpeed(t *testing.T) {
	testkit.NeedHeavy(t, "Chromium")
	start := time.Now()
	b := Start(t)
	started := time.Since(start)
	for i := range 10 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := b.Load(t, []byte(cleanDoc), 390)
			if len(p.ConsoleErrors) > 0 {
				t.Errorf("ConsoleErrors = %q", p.ConsoleErrors)
			}
		})
	}
	total := time.Since(start)
	t.Logf("Start: %v; Start and 10 Loads: %v (%v a Load)", started.Round(time.Millisecond), total.Round(time.Millisecond), ((total - started) / 10).Round(time.Millisecond))
	if total > time.Minute {
		t.Errorf("Start and 10 Loads took %v", total)
	}
}

func containsAll(list []string, subs ...string) bool {
	return slices.ContainsFunc(list, func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	})
}

func rgb(c color.Color) [3]uint8 {
	r, g, b, _ := c.RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

// screenshot takes a screenshot of p, decodes it, and keeps a copy in
// -screenshots.
func screenshot(t *testing.T, p *Page, name string) image.Image {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	p.Screenshot(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if *screenshotDir != "" {
		if err := os.WriteFile(filepath.Join(*screenshotDir, name), data, 0o644); err != nil {
			t.Error(err)
		}
	}
	return img
}

func pageTargets(t *testing.T, b *Browser) int {
	t.Helper()
	infos, err := chromedp.Targets(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, info := range infos {
		if info.Type == "page" {
			n++
		}
	}
	return n
}

// userDataDir returns the profile directory of the browser, from its command
// line.
func userDataDir(t testing.TB, b *Browser) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.proc.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for arg := range strings.SplitSeq(string(cmdline), "\x00") {
		if dir, ok := strings.CutPrefix(arg, "--user-data-dir="); ok {
			return dir
		}
	}
	t.Fatalf("no --user-data-dir in %q", cmdline)
	return ""
}

// processesUsing lists, with pgrep, the processes whose command line has the
// profile directory dir.
func processesUsing(t testing.TB, dir string) []string {
	t.Helper()
	out, err := exec.Command("pgrep", "-l", "-f", "--", "--user-data-dir="+regexp.QuoteMeta(dir)).Output()
	if err != nil {
		if e := (*exec.ExitError)(nil); errors.As(err, &e) && e.ExitCode() == 1 {
			return nil // no process matched
		}
		t.Fatalf("pgrep: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// fakeTB is a testing.TB that records failures and skips, for the checks
// that the package fails or skips a test. Its Fatal and Skip methods end
// the goroutine, as the real ones do. The methods that it does not have
// panic on the nil TB.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	fatals   []string
	skips    []string
	cleanups []func()
}

// runFake runs fn with a fakeTB on a goroutine of its own, and then the
// cleanups that fn registered.
func runFake(fn func(testing.TB)) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	return f
}

func (f *fakeTB) failedWith(sub string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.fatals, func(s string) bool { return strings.Contains(s, sub) })
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Logf(string, ...any)       {}
func (f *fakeTB) Cleanup(fn func())         { f.mu.Lock(); f.cleanups = append(f.cleanups, fn); f.mu.Unlock() }
func (f *fakeTB) Errorf(s string, a ...any) { f.record(&f.fatals, fmt.Sprintf(s, a...)) }
func (f *fakeTB) Fatalf(s string, a ...any) {
	f.record(&f.fatals, fmt.Sprintf(s, a...))
	runtime.Goexit()
}
func (f *fakeTB) Fatal(a ...any) { f.record(&f.fatals, fmt.Sprint(a...)); runtime.Goexit() }
func (f *fakeTB) Skip(a ...any) {
	f.record(&f.skips, fmt.Sprint(a...))
	runtime.Goexit()
}
func (f *fakeTB) Skipf(s string, a ...any) {
	f.record(&f.skips, fmt.Sprintf(s, a...))
	runtime.Goexit()
}
func (f *fakeTB) record(to *[]string, s string) { f.mu.Lock(); *to = append(*to, s); f.mu.Unlock() }
