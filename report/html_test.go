package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// selfContained fails unless page loads nothing: the CSP meta tag is there
// and no element or style can fetch anything. Links people click (a rule's
// docs, serve's navigation) are allowed; they load nothing on their own.
func selfContained(t *testing.T, page []byte) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(page))
	csp, inStyle := false, false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if !csp {
				t.Error("no Content-Security-Policy meta tag")
			}
			return
		case html.TextToken:
			if inStyle {
				css := strings.ToLower(string(z.Text()))
				for _, bad := range []string{"url(", "@import", "@font-face"} {
					if strings.Contains(css, bad) {
						t.Errorf("the style sheet has %s", bad)
					}
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "style" {
				inStyle = false
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "script", "link", "img", "iframe", "object", "embed", "source", "video", "audio", "image", "use", "base", "form", "foreignobject":
				t.Errorf("page has a <%s> element", tok.Data)
			case "style":
				inStyle = tt == html.StartTagToken
			}
			for _, a := range tok.Attr {
				k := strings.ToLower(a.Key)
				switch {
				case strings.HasPrefix(k, "on"):
					t.Errorf("<%s> has an event handler %s", tok.Data, k)
				case k == "style" && strings.Contains(strings.ToLower(a.Val), "url("):
					t.Errorf("<%s> style loads %q", tok.Data, a.Val)
				case (k == "src" || k == "srcset" || k == "xlink:href" || k == "data" || k == "poster"):
					t.Errorf("<%s> loads %s=%q", tok.Data, k, a.Val)
				case k == "href" && tok.Data != "a":
					t.Errorf("<%s> has href=%q", tok.Data, a.Val)
				}
			}
			if tok.Data == "meta" {
				var equiv, content string
				for _, a := range tok.Attr {
					switch a.Key {
					case "http-equiv":
						equiv = a.Val
					case "content":
						content = a.Val
					}
				}
				if strings.EqualFold(equiv, "Content-Security-Policy") {
					csp = true
					if content != CSP {
						t.Errorf("CSP %q, want %q", content, CSP)
					}
				}
			}
		}
	}
}

func loadDiagnosis(t testing.TB, path string) *advisor.Diagnosis {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := &advisor.Diagnosis{}
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// The page of one demo diagnosis is a golden file: its charts' SVG and
// the sections around them are reviewed like code.
func TestHTMLGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "html", "*.json"))
	if len(files) == 0 {
		t.Fatal("no diagnoses in testdata/html")
	}
	for _, f := range files {
		d := loadDiagnosis(t, f)
		var b bytes.Buffer
		if err := HTML(&b, d, Options{}); err != nil {
			t.Fatal(err)
		}
		selfContained(t, b.Bytes())
		golden := strings.TrimSuffix(f, ".json") + ".html"
		if *testkit.Update {
			if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test ./report -update writes it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs from the page rendered now; review the change and run go test ./report -update", golden)
		}
	}
}

// Every section the page promises is there for a diagnosis that has them,
// and charts are drawn only from data that exists.
func TestHTMLSections(t *testing.T) {
	d := loadDiagnosis(t, filepath.Join("testdata", "html", "queue-bound.json"))
	var b bytes.Buffer
	if err := HTML(&b, d, Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	tg := d.Targets[0]
	for _, want := range []string{
		`data-bottleneck="queueing"`, "Verdict: queueing", tg.Primary.Summary,
		"Request conditions", "Latency map (mean TTFT", "Over the window",
		`id="target-1-ttft"`, `id="target-1-queue"`, `id="target-1-kv"`, `id="target-1-gpu"`, `id="target-1-latency"`,
		"no chart of prompt length", "Findings", "Next steps, cheapest first",
		DocsBase + tg.Findings[0].Docs, "vllm:request_queue_time_seconds",
		"scrape", "dcgm", "note: simulated scenario",
	} {
		if !strings.Contains(page, html.EscapeString(want)) && !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Each cited number is on the page, formatted as every report does.
	for _, f := range tg.Findings {
		for k, v := range f.Evidence {
			cell := `data-path="` + k + `">` + html.EscapeString(FormatValue(k, v)) + "<"
			if !strings.Contains(page, cell) {
				t.Errorf("finding %s: %s=%s not on the page", f.Rule, k, FormatValue(k, v))
			}
		}
	}
	if strings.Count(page, "<svg") != 5 {
		t.Errorf("%d charts, want 5 (latency, TTFT, queue, KV, GPU)", strings.Count(page, "<svg"))
	}
}

// A curve of withheld evidence is never drawn, and a page with nothing to
// chart says what is missing instead.
func TestHTMLNoDataNoChart(t *testing.T) {
	d := &advisor.Diagnosis{Schema: advisor.Schema, Targets: []advisor.TargetReport{{Target: evidence.Target{Model: "m"},
		Primary: advisor.Primary{Status: "inconclusive", Summary: "nothing"}}}}
	var b bytes.Buffer
	if err := HTML(&b, d, Options{}); err != nil {
		t.Fatal(err)
	}
	selfContained(t, b.Bytes())
	page := b.String()
	if strings.Contains(page, "<svg") {
		t.Error("a chart without data")
	}
	for _, want := range []string{"no chart of TTFT per step", "no chart of GPU DRAM", "Verdict: inconclusive"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Text from the diagnosis is escaped: a model name cannot inject markup.
func TestHTMLEscapes(t *testing.T) {
	d := &advisor.Diagnosis{Schema: advisor.Schema, Notes: []string{`<script>alert(1)</script>`},
		Targets: []advisor.TargetReport{{Target: evidence.Target{Model: `m"><img src=x onerror=alert(1)>`},
			Primary: advisor.Primary{Status: "found", Bottleneck: "queueing", Summary: "<b>x</b>"}}}}
	var b bytes.Buffer
	if err := HTML(&b, d, Options{Nav: []Link{{Text: "<i>", Href: "javascript:alert(1)"}}}); err != nil {
		t.Fatal(err)
	}
	selfContained(t, b.Bytes())
	if strings.Contains(b.String(), "javascript:") {
		t.Error("a javascript: link survived")
	}
}

func TestChecklistHTML(t *testing.T) {
	c := sampleChecklist()
	var b bytes.Buffer
	if err := ChecklistHTML(&b, c, Options{}); err != nil {
		t.Fatal(err)
	}
	selfContained(t, b.Bytes())
	page := b.String()
	for _, want := range []string{"NOT READY", `data-item="measurement/non-streaming" data-status="fail"`,
		`data-item="check/kv-headroom" data-status="cannot check"`, `data-status="pass"`, "does not stream &lt;&amp;&gt;",
		"fix [config] stream", "how: scrape the server", "1 passed · 1 failed · 1 could not be checked"} {
		if !strings.Contains(page, want) {
			t.Errorf("checklist page lacks %q", want)
		}
	}
	// Failures come first.
	if strings.Index(page, "non-streaming") > strings.Index(page, "fixed-prompt-lengths") {
		t.Error("a passing item is listed before the failure")
	}
}

// The fleet finding names an instance for both numbers, but only the one
// whose ratio crossed the threshold is highlighted; instances and engines
// (two partitions of one target) never share a chart.
func TestHTMLMemberBars(t *testing.T) {
	member := func(inst, eng string, ttft, waiting float64) advisor.Member {
		return advisor.Member{Target: evidence.Target{Model: "m", Instance: inst, Engine: eng},
			Evidence: map[string]float64{"stage.ttft.p99": ttft, "service.waiting.mean": waiting}}
	}
	tg := advisor.TargetReport{Target: evidence.Target{Model: "m"},
		Primary: advisor.Primary{Status: "found", Bottleneck: "imbalance", Rule: "fleet/outlier", Summary: "s"},
		Findings: []advisor.Finding{{Rule: "fleet/outlier", Severity: "warning", Bottleneck: "imbalance", Title: "t", Message: "m",
			Evidence: map[string]float64{"service.ttft_p99_outlier_ratio": 1, "service.waiting_outlier_ratio": 7}}},
		Text: map[string]string{"service.ttft_p99_outlier": "10.0.0.1:8000", "service.waiting_outlier": "10.0.0.3:8000"},
		Members: []advisor.Member{member("10.0.0.1:8000", "", 8.81, 2), member("10.0.0.2:8000", "", 8.81, 2), member("10.0.0.3:8000", "", 8.81, 14),
			member("", "0", 8.81, 9), member("", "1", 8.81, 9)}}
	charts := memberCharts("target-1", tg)
	if len(charts) != 2 {
		t.Fatalf("%d member charts, want TTFT and waiting per instance", len(charts))
	}
	for _, c := range charts {
		if strings.Contains(c.SVG, "engine 0") {
			t.Errorf("%s mixes engines with instances", c.Title)
		}
		highlighted := strings.Contains(c.Caption, "highlighted")
		switch {
		case strings.HasPrefix(c.Title, "TTFT") && highlighted:
			t.Errorf("TTFT p99 bars highlight an instance at 1× its peers: %s", c.Alt)
		case strings.HasPrefix(c.Title, "Mean waiting") && (!highlighted || !strings.Contains(c.Alt, "highlighted: 10.0.0.3:8000")):
			t.Errorf("waiting bars do not highlight 10.0.0.3: %s", c.Alt)
		}
	}
}

// A gate with blocking items unchecked and none failed is never READY: every
// format says NOT VERIFIED and how many could not be checked, and only
// --strict turns it into NOT READY.
func TestChecklistUnverifiedIsNeverReady(t *testing.T) {
	for _, strict := range []bool{false, true} {
		c := sampleChecklist()
		c.Targets[0].Items[1].Status = advisor.Pass
		c.Strict = strict
		c.Decide()
		want := map[bool]string{false: advisor.Unverified, true: advisor.Fail}[strict]
		if c.Status != want || c.BlockingUnchecked != 1 {
			t.Fatalf("strict=%v: status %s, %d blocking unchecked", strict, c.Status, c.BlockingUnchecked)
		}
		var page, text, md bytes.Buffer
		if err := ChecklistHTML(&page, c, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := ChecklistText(&text, c, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := ChecklistMarkdown(&md, c); err != nil {
			t.Fatal(err)
		}
		slack := SlackChecklist(c, SlackOptions{})
		outs := map[string]string{"html": page.String(), "text": text.String(), "markdown": md.String()}
		for _, m := range slack {
			outs["slack"] += m.Main.Text
		}
		for name, out := range outs {
			switch {
			case strings.Contains(strings.ToUpper(out), "✓ READY") || strings.Contains(out, "✅ ready"):
				t.Errorf("strict=%v %s: READY with a blocking item unchecked:\n%s", strict, name, out)
			case !strict && !strings.Contains(strings.ToUpper(out), "NOT VERIFIED"):
				t.Errorf("%s: does not say NOT VERIFIED:\n%s", name, out)
			case !strict && name != "slack" && !strings.Contains(out, "1 blocking item could not be checked"):
				t.Errorf("%s: does not count what was not checked:\n%s", name, out)
			case strict && !strings.Contains(strings.ToUpper(out), "NOT READY"):
				t.Errorf("strict %s: does not say NOT READY:\n%s", name, out)
			}
		}
	}
}

// The latency bar stacks only parts that make its whole: decode joins TTFT
// when mean TTFT + mean decode is mean end-to-end, not when the means of
// different requests overrun it.
func TestHTMLLatencyBarAddsUp(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		name          string
		m             advisor.LatencyMap
		decode, whole string
	}{
		{"parts make the whole", advisor.LatencyMap{TTFT: f(19.14), Queue: f(19.09), Prefill: f(0.025), Front: f(0.026), Decode: f(2.41), E2E: f(21.54)}, "decode 2.41s (11%)", "end-to-end 21.54s"},
		{"means overrun it", advisor.LatencyMap{TTFT: f(178.6), Queue: f(139.9), Prefill: f(1.3), Front: f(37.4), Decode: f(114.7), E2E: f(255.9)}, "", "TTFT 2m58s"},
		{"no end-to-end", advisor.LatencyMap{TTFT: f(1), Queue: f(0.5), Prefill: f(0.4), Front: f(0.1), Decode: f(9)}, "", "TTFT 1.00s"},
	} {
		l, _ := latencyPage("t", c.m, 0)
		if c.decode == "" && strings.Contains(l.Chart.Alt, "decode") || c.decode != "" && !strings.Contains(l.Chart.Alt, c.decode) {
			t.Errorf("%s: %s", c.name, l.Chart.Alt)
		}
		if !strings.Contains(l.Chart.Title, c.whole) {
			t.Errorf("%s: the bar is of %q, want %q", c.name, l.Chart.Title, c.whole)
		}
	}
}

// The page and the text name the configuration file the rules ran with.
func TestReportsNameTheConfigFile(t *testing.T) {
	d := sample()
	d.Config = "llmdoctor.yaml"
	var page bytes.Buffer
	if err := HTML(&page, d, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "rules configured by llmdoctor.yaml") {
		t.Errorf("the page does not name the config file")
	}
	if out := textOf(t, d, 80); !strings.Contains(out, "\n  config llmdoctor.yaml\n") {
		t.Errorf("the text does not name the config file:\n%s", out)
	}
}
