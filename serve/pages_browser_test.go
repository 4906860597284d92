package serve

import (
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/internal/testkit/browsertest"
	"github.com/llmdoctor/llmdoctor/serve/watch/watchtest"
)

// The index and a report, as serve answers them, open in headless Chromium
// at a phone's width with no console error, no request beyond the page and
// nothing wider than the screen.
func TestReportPagesInBrowser(t *testing.T) {
	testkit.NeedHeavy(t, "serve's pages in Chromium")
	b := browsertest.Start(t)
	s, f := newPagesServer(t, Config{})
	targets := []watchtest.TV{{Model: "meta-llama/Llama-3.1-70B-Instruct", Bottleneck: "", Sev: "healthy"}, {Model: "m-crit", Bottleneck: "decode", Sev: "critical"}}
	pagesRun(t, s, f, watchtest.DiagOf(targets...), latestWatch)
	pagesRun(t, s, f, watchtest.DiagOf(targets...), latestWatch)
	for _, path := range []string{"/", "/report/m-crit", "/?refresh=60"} {
		w := apiGet(s, path)
		checkPage(t, path, w, "")
		p := b.Load(t, w.Body.Bytes(), 390)
		if len(p.ConsoleErrors) > 0 {
			t.Errorf("%s: console errors %q", path, p.ConsoleErrors)
		}
		if len(p.Requests) != 1 {
			t.Errorf("%s: requests %q", path, p.Requests)
		}
		if o := p.Overflow(t); len(o) > 0 {
			t.Errorf("%s: wider than 390 px: %q", path, o)
		}
	}
}
