package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/internal/testkit/browsertest"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/simrun/accuracy"
)

// The README's picture and the page it was taken of, by a digest of the
// page with the simulator's loopback port left out.
var (
	readmePicture = filepath.Join("..", "..", "docs", "report.png")
	readmeDigest  = filepath.Join("..", "..", "docs", "report.png.sha256")
	loopbackPort  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

// screenshotDir is where the browser test leaves its screenshots.
func screenshotDir() string {
	if d := os.Getenv("LLMDOCTOR_SCREENSHOTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "llmdoctor-screenshots")
}

// pageCase is one page to open, with the diagnosis it shows when there is one.
type pageCase struct {
	name string
	page []byte
	d    *advisor.Diagnosis
	// charts are the chart ids the page must draw.
	charts []string
}

// renderHTML renders a diagnosis as the html format does.
func renderHTML(t *testing.T, d *advisor.Diagnosis) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := report.HTML(&b, d, report.Options{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Every demo scenario's page, a fleet, a run with request-level data and a
// checklist open in headless Chromium with no console error and no request
// beyond the page; the verdict and the cited numbers are in the rendered
// DOM; every chart draws marks and readable text; nothing is wider than a
// 390 px phone.
func TestHTMLReportInBrowser(t *testing.T) {
	testkit.NeedHeavy(t, "every report page in Chromium")
	b := browsertest.Start(t)
	set, cfg, err := loadRules("-", nil)
	if err != nil {
		t.Fatal(err)
	}
	var cases []pageCase
	for _, engine := range []string{"vllm", "sglang"} {
		var names []string
		if engine == "sglang" {
			names = []string{"queue-bound", "decode-bound"}
		}
		rs, err := accuracy.RunScenarios(set, cfg, engine, names...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			// The simulator exports GPU metrics of one server: every time
			// series is there. A scenario of several servers has none.
			charts := []string{"target-1-latency", "target-1-ttft", "target-1-queue", "target-1-kv", "target-1-gpu"}
			if r.Scenario.Router != nil || r.Scenario.Engine.Disaggregated != nil {
				charts = charts[:4]
			}
			cases = append(cases, pageCase{name: engine + "-" + r.Scenario.Name, page: renderHTML(t, r.Diagnosis), d: r.Diagnosis, charts: charts})
		}
	}
	cases = append(cases, fleetPage(t), requestsPage(t), checklistPage(t), comparePage(t))

	dir := screenshotDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, width := range []int{390, 1280} {
				p := b.Load(t, c.page, width)
				if len(p.ConsoleErrors) > 0 {
					t.Errorf("%d px: console errors %q", width, p.ConsoleErrors)
				}
				if len(p.Requests) != 1 || p.Requests[0] != p.URL {
					t.Errorf("%d px: requests %q, want only the page %s", width, p.Requests, p.URL)
				}
				if width == 390 {
					if o := p.Overflow(t); len(o) > 0 {
						t.Errorf("wider than 390 px: %q", o)
					}
				}
				checkCharts(t, p, width, c.charts)
				if c.d != nil {
					checkDiagnosisDOM(t, p, c.d)
				}
				p.Screenshot(t, filepath.Join(dir, fmt.Sprintf("%s-%d.png", c.name, width)))
			}
		})
	}
	t.Logf("screenshots in %s", dir)
}

// chartReport is what the page's charts look like once laid out.
type chartReport struct {
	ID      string  `json:"id"`
	Marks   int     `json:"marks"`
	Texts   int     `json:"texts"`
	Empty   int     `json:"empty"`
	MinPx   float64 `json:"minPx"`
	Width   float64 `json:"width"`
	Title   string  `json:"title"`
	Desc    string  `json:"desc"`
	Escapes bool    `json:"escapes"`
}

const chartsJS = `(() => [...document.querySelectorAll('svg.chart')].map(svg => {
  const texts = [...svg.querySelectorAll('text')];
  const scale = svg.getScreenCTM().a;
  const box = svg.getBoundingClientRect();
  const marks = [...svg.querySelectorAll('.data')].filter(e => {
    if (e.tagName === 'path') return (e.getAttribute('d') || '').length > 3;
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  });
  return {
    id: svg.closest('figure') ? svg.closest('figure').id : '',
    marks: marks.length,
    texts: texts.length,
    empty: texts.filter(t => !t.textContent.trim()).length,
    minPx: Math.min(...texts.map(t => parseFloat(getComputedStyle(t).fontSize) * scale)),
    width: box.width,
    title: (svg.querySelector('title') || {}).textContent || '',
    desc: (svg.querySelector('desc') || {}).textContent || '',
    escapes: texts.some(t => { const r = t.getBoundingClientRect(); return r.right > box.right + 1 || r.left < box.left - 1; }),
  };
}))()`

// minTextPx is the smallest text a chart may render, in CSS pixels.
const minTextPx = 9

func checkCharts(t *testing.T, p *browsertest.Page, width int, want []string) {
	t.Helper()
	var charts []chartReport
	p.Eval(t, chartsJS, &charts)
	got := map[string]bool{}
	for _, c := range charts {
		got[c.ID] = true
		switch {
		case c.Marks == 0:
			t.Errorf("%d px: chart %s draws no data", width, c.ID)
		case c.Texts == 0 || c.Empty > 0:
			t.Errorf("%d px: chart %s has %d texts, %d empty", width, c.ID, c.Texts, c.Empty)
		case c.MinPx < minTextPx:
			t.Errorf("%d px: chart %s has text %.1f px high, under %d px", width, c.ID, c.MinPx, minTextPx)
		case c.Title == "" || c.Desc == "":
			t.Errorf("%d px: chart %s has no title or text alternative", width, c.ID)
		case c.Escapes:
			t.Errorf("%d px: chart %s has text outside its box", width, c.ID)
		case c.Width > float64(width):
			t.Errorf("%d px: chart %s is %.0f px wide", width, c.ID, c.Width)
		}
	}
	for _, id := range want {
		if !got[id] {
			t.Errorf("%d px: no chart %s (charts %v)", width, id, got)
		}
	}
}

// checkDiagnosisDOM finds each target's verdict and every number its
// findings cite in the rendered page, as the text and JSON reports give them.
func checkDiagnosisDOM(t *testing.T, p *browsertest.Page, d *advisor.Diagnosis) {
	t.Helper()
	text := p.Text(t)
	for i, tg := range d.Targets {
		var verdict string
		p.Eval(t, fmt.Sprintf(`document.querySelector('#target-%d').dataset.bottleneck + '|' + document.querySelector('#target-%d-verdict').innerText`, i+1, i+1), &verdict)
		bottleneck, banner, _ := strings.Cut(verdict, "|")
		if bottleneck != tg.Primary.Bottleneck {
			t.Errorf("target %d: page says bottleneck %q, diagnosis %q", i+1, bottleneck, tg.Primary.Bottleneck)
		}
		if !strings.Contains(banner, tg.Primary.Summary) {
			t.Errorf("target %d: banner %q lacks the summary %q", i+1, banner, tg.Primary.Summary)
		}
		for _, f := range tg.Findings {
			for k, v := range f.Evidence {
				var cell string
				p.Eval(t, fmt.Sprintf(`[...document.querySelectorAll('#target-%d article[data-rule=%q] td[data-path=%q]')].map(e => e.innerText).join('|')`, i+1, f.Rule, k), &cell)
				if want := report.FormatValue(k, v); !strings.Contains("|"+cell+"|", "|"+want+"|") {
					t.Errorf("target %d, %s: %s shows %q, want %q", i+1, f.Rule, k, cell, want)
				}
			}
		}
		for _, s := range tg.Next {
			if !strings.Contains(text, s.Do) {
				t.Errorf("target %d: next step %q not on the page", i+1, s.Do)
			}
		}
	}
}

// fleetPage: three healthy replicas and one that queues.
func fleetPage(t *testing.T) pageCase {
	t.Helper()
	d, _ := fleetDiagnosis(t)
	page := renderHTML(t, d)
	if !bytes.Contains(page, []byte("highlighted: the instance the fleet/outlier finding names for this number")) {
		t.Error("the fleet page does not highlight the outlier the finding names")
	}
	return pageCase{name: "fleet", page: page, d: d,
		charts: []string{"target-1-ttft", "target-1-queue", "target-1-members-1", "target-1-members-2", "target-1-members-3"}}
}

// requestsPage: a log and a benchmark result, through the CLI, for the
// prompt-length scatter.
func requestsPage(t *testing.T) pageCase {
	t.Helper()
	dir := t.TempDir()
	sc, err := sim.Load("long-prompt")
	if err != nil {
		t.Fatal(err)
	}
	logF, _ := os.Create(filepath.Join(dir, "vllm.log"))
	benchF, _ := os.Create(filepath.Join(dir, "run.json"))
	if err := (sim.Offline{Log: logF, Bench: benchF}).Run(sc); err != nil {
		t.Fatal(err)
	}
	if err := logF.Close(); err != nil {
		t.Fatal(err)
	}
	if err := benchF.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"diagnose", "--log", logF.Name(), "--bench", benchF.Name(), "--format", "html"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var jsonOut bytes.Buffer
	if code := run([]string{"diagnose", "--log", logF.Name(), "--bench", benchF.Name(), "--format", "json"}, nil, &jsonOut, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	d := &advisor.Diagnosis{}
	if err := json.Unmarshal(jsonOut.Bytes(), d); err != nil {
		t.Fatal(err)
	}
	return pageCase{name: "log-and-bench", page: out.Bytes(), d: d, charts: []string{"target-1-prompt", "target-1-queue", "target-1-kv"}}
}

// checklistPage: the checklist of the same kind of run.
func checklistPage(t *testing.T) pageCase {
	t.Helper()
	dir := t.TempDir()
	sc, err := sim.Load("kv-capacity")
	if err != nil {
		t.Fatal(err)
	}
	benchF, _ := os.Create(filepath.Join(dir, "run.json"))
	if err := (sim.Offline{Bench: benchF}).Run(sc); err != nil {
		t.Fatal(err)
	}
	if err := benchF.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"checklist", "--bench", benchF.Name(), "--format", "html"}, nil, &out, &errb); code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !bytes.Contains(out.Bytes(), []byte(`data-status="fail"`)) && !bytes.Contains(out.Bytes(), []byte(`data-status="pass"`)) {
		t.Fatalf("checklist page without items:\n%s", out.Bytes())
	}
	return pageCase{name: "checklist", page: out.Bytes()}
}

// comparePage is the page of compare --format html: two example windows
// whose traffic differs.
func comparePage(t *testing.T) pageCase {
	t.Helper()
	dir := t.TempDir()
	var saved []string
	for _, name := range []string{"queueing", "kv-capacity"} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"diagnose", "--format", "json"}, example(name)...), nil, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		saved = append(saved, p)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"compare", "--format", "html", saved[0], saved[1]}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !bytes.Contains(out.Bytes(), []byte(`data-verdict="not-comparable"`)) || !bytes.Contains(out.Bytes(), []byte(`data-beyond="true"`)) {
		t.Fatalf("compare page without its verdict:\n%s", out.Bytes())
	}
	return pageCase{name: "compare", page: out.Bytes()}
}

// The README shows the demo's report as a picture: docs/report.png, taken
// of the page `llmdoctor demo --format html` writes. The picture is stale
// when the page changed since; -update takes it again.
func TestReadmePicture(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "--format", "html"}, nil, &out, &errb); code != 0 {
		t.Fatalf("demo --format html: exit %d: %s", code, errb.String())
	}
	sum := sha256.Sum256(loopbackPort.ReplaceAll(out.Bytes(), []byte("127.0.0.1:PORT")))
	digest := hex.EncodeToString(sum[:]) + "\n"
	if *testkit.Update {
		b := browsertest.Start(t)
		p := b.Load(t, out.Bytes(), 1280)
		if len(p.ConsoleErrors) > 0 {
			t.Fatalf("console errors %q", p.ConsoleErrors)
		}
		p.ScreenshotTop(t, readmePicture, 1900)
		if err := os.WriteFile(readmeDigest, []byte(digest), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(readmeDigest)
	if err != nil || string(got) != digest {
		t.Errorf("docs/report.png was taken of another page than demo --format html writes now: run go test ./cmd/llmdoctor -run TestReadmePicture -update")
	}
	if _, err := os.Stat(readmePicture); err != nil {
		t.Error(err)
	}
	readme, _ := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if !bytes.Contains(readme, []byte("](docs/report.png)")) {
		t.Error("README.md does not show docs/report.png")
	}
}
