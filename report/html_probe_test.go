package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/view"
)

// probeResult is a plausible probe of a server with 21ms + 201ms per 1k
// prompt tokens of prefill, ~20ms between tokens, that meets TTFT p99 ≤ 2s
// up to concurrency 8 and breaks at 16, where the diagnosis (the demo's
// queue-bound one) was made.
func probeResult(t testing.TB) *probe.Result {
	t.Helper()
	d := loadDiagnosis(t, filepath.Join("testdata", "html", "queue-bound.json"))
	r := &probe.Result{Schema: probe.Schema, Target: "http://10.0.0.7:8000", Model: d.Targets[0].Target.Model, API: "completions",
		Plan: probe.Plan{SLO: probe.SLO{TTFTP99: 2 * time.Second, ITLP99: 100 * time.Millisecond, TPOTP50: 50 * time.Millisecond},
			Limits: probe.Limits{Requests: 2000}},
		Seconds: 184, Sent: 1211, Failed: 3, Tokens: probe.TokenCount{Fixed: 4, PerWord: 1.3, Usage: true},
		Metrics: "http://10.0.0.7:8000/metrics", Diagnosis: d, Notes: []string{"prefix caching is on: prompts start distinct"}}
	for i, n := range []int{128, 512, 1024, 2048, 4096} {
		for k := range 3 {
			jit := 1 + 0.04*float64(k-1)
			r.Sweep.Samples = append(r.Sweep.Samples, probe.Sample{Prompt: n + i, Asked: n, Output: 16, Usage: true,
				TTFT: (0.021 + 0.201*float64(n)/1000) * jit, E2E: 0.4})
		}
	}
	r.Sweep.Samples = append(r.Sweep.Samples, probe.Sample{Asked: 4096, Error: "timeout", Usage: true})
	r.Sweep.Fit = &probe.Fit{PerKToken: 0.201, Intercept: 0.021, PerKTokenErr: 0.004, InterceptErr: 0.002, R2: 0.99, Points: 15,
		MinTokens: 128, MaxTokens: 4100}
	r.ITL = &probe.Percentiles{N: 900, P50: 0.019, P99: 0.024}
	pc := func(p50, p99 float64) probe.Percentiles {
		return probe.Percentiles{N: 100, Mean: p50 * 1.1, P50: p50, P90: (p50 + p99) / 2, P99: p99, P99Low: p99 * 0.9, P99High: p99 * 1.1}
	}
	for i, c := range []float64{1, 2, 4, 8, 16} {
		ttft := []float64{0.24, 0.27, 0.35, 0.8, 3.4}[i]
		itl := []float64{0.021, 0.023, 0.027, 0.045, 0.12}[i]
		s := probe.Step{Load: c, Seconds: 30, Sent: 100, Completed: 100, Throughput: []float64{3.1, 6, 11.2, 17.5, 19}[i],
			TTFT: pc(ttft/2, ttft), ITL: pc(itl*0.8, itl), TPOT: pc(itl*0.85, itl), E2E: pc(3, 4+ttft), MeetsSLO: c <= 8, SurelyMeets: c <= 4,
			Stages: &probe.Stages{Queue: fptr(ttft / 3), Prefill: fptr(0.1), Decode: fptr(2.6)}, Verdict: "healthy"}
		s.Goodput = s.Throughput
		if c == 16 {
			s.Goodput, s.Misses, s.Verdict, s.Failed = 7.2, []string{"TTFT p99 3.40s > 2s", "ITL p99 120ms > 100ms"}, "queueing (critical)", 3
		}
		r.Steps = append(r.Steps, s)
	}
	r.Knee = &probe.Knee{Step: 2, Load: 4, Elasticity: 2.4}
	r.Capacity = &probe.Capacity{Step: 3, Load: 8, Throughput: 17.5, Low: 14.4, High: 21, Goodput: 17.5, OutputTokens: 2240, Broke: 4}
	r.DiagnosedStep = 4
	return r
}

func fptr(x float64) *float64 { return &x }

func renderProbe(t *testing.T, r *probe.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := ProbeHTML(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	selfContained(t, b.Bytes())
	return b.String()
}

// dom is a parsed page with the look-ups the probe tests need.
type dom struct{ root *html.Node }

func parsePage(t *testing.T, page string) dom {
	t.Helper()
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return dom{root}
}

func (d dom) all(match func(n *html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(d.root)
	return out
}

func (d dom) byID(id string) *html.Node {
	if ns := d.all(func(n *html.Node) bool { return attrOf(n, "id") == id }); len(ns) > 0 {
		return ns[0]
	}
	return nil
}

func attrOf(n *html.Node, k string) string {
	for _, a := range n.Attr {
		if a.Key == k {
			return a.Val
		}
	}
	return ""
}

// nodeText is n's text with runs of space made one.
func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// The page leads with the capacity and the verdict in view.ProbeOf's
// words, draws the sweep with its fit and the ladder with the SLO, the
// knee and the capacity marked, tables the ladder and ends with the
// deciding step's diagnosis drawn as a diagnosis page draws it.
func TestProbeHTML(t *testing.T) {
	r := probeResult(t)
	page := renderProbe(t, r)
	d := parsePage(t, page)
	v := view.ProbeOf(r)

	lead := d.byID("probe-verdict")
	if lead == nil {
		t.Fatal("no verdict box")
	}
	said := nodeText(lead)
	for _, want := range []string{v.CapacityMark + " capacity " + v.Capacity, v.Band, "breaks " + v.Breaks,
		"at " + v.DiagnosedLoad + ": " + v.Verdict.Names, v.Verdict.Summary} {
		if !strings.Contains(said, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the lead lacks %q:\n%s", want, said)
		}
	}
	if got := attrOf(d.byID("probe"), "data-capacity"); got != "capacity" {
		t.Errorf("data-capacity %q", got)
	}
	if i, j := strings.Index(page, `id="probe-verdict"`), strings.Index(page, "<svg"); i < 0 || j < i {
		t.Error("the capacity does not lead the page")
	}

	figs := map[string]string{}
	for _, id := range []string{"probe-prompt", "probe-ttft", "probe-itl", "probe-throughput"} {
		n := d.byID(id)
		if n == nil {
			t.Errorf("no chart %s", id)
			continue
		}
		var b strings.Builder
		if err := html.Render(&b, n); err != nil {
			t.Fatal(err)
		}
		figs[id] = b.String()
	}
	if d.byID("probe-e2e") != nil {
		t.Error("an end-to-end chart without an end-to-end SLO")
	}
	for id, wants := range map[string][]string{
		"probe-prompt":     {`class="data fit"`, "TTFT ≈ 21ms + 201ms per 1k tokens", "15 points"},
		"probe-ttft":       {`class="ref"`, "SLO TTFT p99 ≤ 2s", `class="mark"`, ">knee<", ">capacity<", "knee at concurrency 4", "capacity at concurrency 8"},
		"probe-itl":        {"SLO ITL p99 ≤ 100ms", "SLO TPOT p50 ≤ 50ms", ">knee<", ">capacity<"},
		"probe-throughput": {"goodput (met the SLO)", ">capacity<"},
	} {
		for _, w := range wants {
			if !strings.Contains(figs[id], w) {
				t.Errorf("chart %s lacks %q", id, w)
			}
		}
	}

	rows := d.all(func(n *html.Node) bool { return n.Data == "tr" && attrOf(n, "data-load") != "" })
	if len(rows) != len(r.Steps) {
		t.Fatalf("%d ladder rows, want %d", len(rows), len(r.Steps))
	}
	for i, row := range rows {
		s := v.Steps[i]
		text := nodeText(row)
		for _, want := range []string{s.Load, s.Throughput, s.TTFTP99, s.ITLP99, s.TPOTP50, s.E2EP99, s.Queue, s.Verdict} {
			if !strings.Contains(text, want) {
				t.Errorf("row %s lacks %q: %s", s.Load, want, text)
			}
		}
		switch s.Load {
		case "8":
			if attrOf(row, "class") != "ok" || !strings.Contains(text, "capacity") {
				t.Errorf("the capacity row is not marked: %s", text)
			}
		case "16":
			if attrOf(row, "class") != "critical" || !strings.Contains(text, "breaks") || !strings.Contains(text, "TTFT p99 3.40s > 2s") {
				t.Errorf("the breaking row is not marked with its misses: %s", text)
			}
		case "4":
			if !strings.Contains(text, "knee") {
				t.Errorf("the knee row is not marked: %s", text)
			}
		}
	}

	for _, want := range []string{v.Prefill, v.Decode, v.Knee, v.Sent, "judged against " + v.SLO, "note: " + r.Notes[0], v.Stages} {
		if !strings.Contains(page, html.EscapeString(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The diagnosis is the diagnosis page's target section for that step.
	tg := d.byID("target-1")
	if tg == nil || attrOf(tg, "data-bottleneck") != r.Diagnosis.Targets[0].Primary.Bottleneck {
		t.Fatalf("no diagnosis section of the deciding step")
	}
	if !strings.Contains(page, "Diagnosis at "+v.DiagnosedLoad) || !strings.Contains(nodeText(tg), "Next steps, cheapest first") {
		t.Error("the diagnosis is not headed with its load or lacks its next steps")
	}

	// The html renderer renders probes, as ProbeHTML does.
	h, ok := Lookup("html")
	if !ok || !h.Renders(ProbeDoc) {
		t.Fatal("html does not render probes")
	}
	var b bytes.Buffer
	if err := h.Probe(&b, r, Options{}); err != nil || b.String() != page {
		t.Errorf("the renderer's page differs from ProbeHTML's (%v)", err)
	}
}

// A chart without its data is left out and named; a fit, a mark or an SLO
// line that the result lacks is not drawn.
func TestProbeHTMLLeavesOut(t *testing.T) {
	r := probeResult(t)
	r.Sweep.Fit, r.Sweep.FitNote = nil, "2 sweep requests completed; a fit needs 3"
	r.Knee, r.Plan.SLO.ITLP99 = nil, 0
	page := renderProbe(t, r)
	d := parsePage(t, page)
	var b strings.Builder
	_ = html.Render(&b, d.byID("probe-prompt"))
	if strings.Contains(b.String(), `class="data fit"`) {
		t.Error("a fitted line without a fit")
	}
	if !strings.Contains(b.String(), "no fitted line: 2 sweep requests completed") {
		t.Error("the sweep chart does not say why it has no line")
	}
	if strings.Contains(page, ">knee<") || strings.Contains(page, "SLO ITL p99") {
		t.Error("a knee or an ITL SLO line the result does not have")
	}

	r = probeResult(t)
	r.Sweep.Samples = nil
	for i := range r.Steps {
		r.Steps[i].ITL, r.Steps[i].TPOT = probe.Percentiles{}, probe.Percentiles{}
	}
	page = renderProbe(t, r)
	d = parsePage(t, page)
	if d.byID("probe-prompt") != nil || d.byID("probe-itl") != nil {
		t.Error("a chart without data")
	}
	for _, want := range []string{"no chart of TTFT against prompt length", "no chart of inter-token latency against load"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if d.byID("probe-ttft") == nil || d.byID("probe-throughput") == nil {
		t.Error("the charts with data are gone too")
	}

	// Nothing measured: no chart, no table, no diagnosis; the lead says so.
	r = &probe.Result{Schema: probe.Schema, Target: "http://127.0.0.1:8000", Model: "m", Stopped: "interrupted",
		Sweep: probe.Sweep{FitNote: "0 sweep requests completed; a fit needs 3"}, DiagnosedStep: -1}
	page = renderProbe(t, r)
	d = parsePage(t, page)
	if strings.Contains(page, "<svg") || strings.Contains(page, "<table") || d.byID("target-1") != nil {
		t.Error("charts, a ladder or a diagnosis of nothing")
	}
	v := view.ProbeOf(r)
	if lead := nodeText(d.byID("probe-verdict")); !strings.Contains(lead, "not measured "+v.Capacity) || !strings.Contains(lead, v.Stopped) {
		t.Errorf("lead %q", lead)
	}
	if err := ProbeHTML(&bytes.Buffer{}, nil, Options{}); err == nil {
		t.Error("no error for no result")
	}
}

// Text from the server and the probe is escaped: a model name, a note or
// a reason cannot inject markup into the page or its charts.
func TestProbeHTMLEscapes(t *testing.T) {
	r := probeResult(t)
	evil := `<script>alert(1)</script>`
	r.Model, r.Notes, r.Stopped = `m"><img src=x onerror=alert(1)>`+evil, []string{evil}, evil
	r.Sweep.Fit, r.Sweep.FitNote = nil, evil
	r.Steps[4].Misses = []string{evil}
	r.Diagnosis.Targets[0].Target.Model = r.Model
	page := renderProbe(t, r)
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Error("unescaped text on the page")
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Error("the hostile text is not shown escaped")
	}
	parsePage(t, page)
}
