package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/internal/testkit/browsertest"
	"github.com/llmdoctor/llmdoctor/view"
)

// probeChartBox is one chart of the page once laid out.
type probeChartBox struct {
	ID      string  `json:"id"`
	Width   float64 `json:"width"`
	Height  float64 `json:"height"`
	Marks   int     `json:"marks"`
	Escapes bool    `json:"escapes"`
}

const probeChartsJS = `[...document.querySelectorAll('svg.chart')].map(svg => {
  const box = svg.getBoundingClientRect();
  return {
    id: svg.closest('figure') ? svg.closest('figure').id : '',
    width: box.width, height: box.height,
    marks: [...svg.querySelectorAll('.data')].filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 || r.height > 0; }).length,
    escapes: [...svg.querySelectorAll('text')].some(t => { const r = t.getBoundingClientRect(); return r.right > box.right + 1 || r.left < box.left - 1; }),
  };
})`

// The probe page in headless Chromium, at a desktop's and a phone's width:
// no console error, nothing fetched, nothing wider than the window, every
// chart laid out with a box, marks and its text inside it, and the lead in
// view.ProbeOf's words. The screenshots go to $LLMDOCTOR_SCREENSHOTS, or
// the test's temporary directory.
func TestProbeHTMLInBrowser(t *testing.T) {
	testkit.NeedHeavy(t, "the probe page in Chromium")
	b := browsertest.Start(t)
	r := probeResult(t)
	page := renderProbe(t, r)
	v := view.ProbeOf(r)
	dir := os.Getenv("LLMDOCTOR_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, width := range []int{1280, 390} {
		p := b.Load(t, []byte(page), width)
		if len(p.ConsoleErrors) > 0 {
			t.Errorf("%d px: console errors %q", width, p.ConsoleErrors)
		}
		if len(p.Requests) != 1 || p.Requests[0] != p.URL {
			t.Errorf("%d px: requests %q, want only the page", width, p.Requests)
		}
		if o := p.Overflow(t); len(o) > 0 {
			t.Errorf("wider than %d px: %q", width, o)
		}
		var charts []probeChartBox
		p.Eval(t, probeChartsJS, &charts)
		got := map[string]bool{}
		for _, c := range charts {
			got[c.ID] = true
			switch {
			case c.Width < 1 || c.Height < 1:
				t.Errorf("%d px: chart %s is %.0f×%.0f", width, c.ID, c.Width, c.Height)
			case c.Marks == 0:
				t.Errorf("%d px: chart %s draws nothing", width, c.ID)
			case c.Escapes:
				t.Errorf("%d px: chart %s has text outside its box", width, c.ID)
			case c.Width > float64(width):
				t.Errorf("%d px: chart %s is %.0f px wide", width, c.ID, c.Width)
			}
		}
		for _, id := range []string{"probe-prompt", "probe-ttft", "probe-itl", "probe-throughput"} {
			if !got[id] {
				t.Errorf("%d px: no chart %s (charts %v)", width, id, got)
			}
		}
		var lead string
		p.Eval(t, `document.querySelector('#probe-verdict').innerText`, &lead)
		if !strings.Contains(strings.Join(strings.Fields(lead), " "), strings.Join(strings.Fields(v.Capacity), " ")) {
			t.Errorf("%d px: the lead %q lacks the capacity %q", width, lead, v.Capacity)
		}
		p.Screenshot(t, filepath.Join(dir, fmt.Sprintf("probe-%d.png", width)))
	}
	t.Logf("screenshots in %s", dir)
}
