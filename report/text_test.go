package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
)

func sample() *advisor.Diagnosis {
	ttft, q := 2.0, 1.5
	return &advisor.Diagnosis{Schema: advisor.Schema, Window: advisor.Window{Seconds: 900, Points: 2},
		Sources: []advisor.Source{{Kind: "snapshot", Path: "a.prom", OK: true}},
		Targets: []advisor.TargetReport{{
			Primary:    advisor.Primary{Bottleneck: "queueing", Rule: "queue/x", Status: "found", Summary: "TTFT is mostly queue wait"},
			Findings:   []advisor.Finding{{Rule: "queue/x", Severity: "critical", Title: "t", Message: strings.Repeat("a long message ", 20), Evidence: map[string]float64{"stage.queue.mean": 1.5}, Docs: "docs/rules/queue/x.md"}},
			LatencyMap: advisor.LatencyMap{TTFT: &ttft, Queue: &q},
			Next:       []advisor.Step{{Do: "raise --max-num-seqs", Cost: "config"}},
		}}}
}

func TestNoColorAndWidth(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	var b bytes.Buffer
	if err := Text(&b, sample(), Options{Color: "auto", IsTerminal: true, Details: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\x1b[") {
		t.Error("NO_COLOR ignored")
	}
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("%d columns: %q", n, l)
		}
	}
	for _, want := range []string{"✗ CRITICAL VERDICT queueing", "queue       1.50s  75%", "prefill         ?", "1. [config] raise --max-num-seqs", "evidence: stage.queue.mean=1.50s"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

func TestColorAlways(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, sample(), Options{Color: "always", Details: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[") {
		t.Error("--color always gave no colour")
	}
}

func TestColorOn(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("CLICOLOR_FORCE", "")
	t.Setenv("TERM", "xterm")
	if ColorOn("auto", false) || !ColorOn("auto", true) {
		t.Error("auto should follow the terminal")
	}
	t.Setenv("TERM", "dumb")
	if ColorOn("auto", true) {
		t.Error("TERM=dumb should turn colour off")
	}
	t.Setenv("CLICOLOR_FORCE", "1")
	if !ColorOn("auto", false) {
		t.Error("CLICOLOR_FORCE should turn colour on")
	}
	t.Setenv("NO_COLOR", "yes")
	if ColorOn("auto", true) {
		t.Error("NO_COLOR (any value) wins")
	}
}

func TestSparklineScalesFromZero(t *testing.T) {
	for _, c := range []struct {
		ys   []float64
		top  float64
		want string
	}{
		// Block k of 8 stands for values up to k/8 of the top; 0 is the
		// lowest block.
		{[]float64{0, 1, 2, 4, 8}, 8, "▁▁▂▄█"},
		{[]float64{0.5, 3.1, 5, 6.5}, 8, "▁▄▅▇"},
		// A p99 that only wiggles reads as flat: heights start at 0.
		{[]float64{1.9, 2.0, 2.1}, 2.1, "███"},
		// All zero (an empty queue) is a flat line at the bottom.
		{[]float64{0, 0, 0}, 0, "▁▁▁"},
		// Negative values (none expected) stay at the bottom.
		{[]float64{-1, 2}, 2, "▁█"},
	} {
		if got := sparkline(c.ys, 40, c.top); got != c.want {
			t.Errorf("sparkline(%v, top %v) = %q, want %q", c.ys, c.top, got, c.want)
		}
	}
}

func TestSparklineGaps(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	if got, want := sparkline([]float64{1, nan, 2, inf, 4}, 40, 4), "▂ ▄ █"; got != want {
		t.Errorf("got %q, want %q: NaN and Inf are spaces", got, want)
	}
	// Resampled, a run with one finite point shows it; a run of NaN is a gap.
	ys := []float64{nan, nan, nan, nan, 1, nan, 4, 4}
	if got, want := sparkline(ys, 4, 4), "  ▂█"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSparklineResamplingKeepsSpike(t *testing.T) {
	ys := make([]float64, 240)
	for i := range ys {
		ys[i] = 1
	}
	ys[157] = 10 // one step in 240
	got := sparkline(ys, 30, 10)
	if n := len([]rune(got)); n != 30 {
		t.Fatalf("%d columns, want 30: %q", n, got)
	}
	if strings.Count(got, "█") != 1 || strings.Count(got, "▁") != 29 {
		t.Errorf("the spike was lost or smeared: %q", got)
	}
	// Fewer points than columns: one column a point, not stretched.
	if got := sparkline([]float64{1, 2, 3}, 30, 3); len([]rune(got)) != 3 {
		t.Errorf("stretched: %q", got)
	}
}

// steps makes a per-step series, x every 15 s.
func steps(ys ...float64) [][2]float64 {
	pts := make([][2]float64, len(ys))
	for i, y := range ys {
		pts[i] = [2]float64{float64(i) * 15, y}
	}
	return pts
}

func TestOverTheWindow(t *testing.T) {
	nan := math.NaN()
	d := sample()
	d.Targets[0].Curves = map[string][][2]float64{
		"ttft_p99_steps": steps(nan, 1.2, 1.3, 2.0, 3.0, 3.6, nan, 3.4, nan),
		"waiting":        steps(0, 0, 40, 316, 316, 200, 90, 12),
		"ttft_p50_steps": steps(0.5, 0.6, 0.9),
	}
	out := textOf(t, d, 80)
	for _, want := range []string{
		"\nOver the window (heights from 0; blank: no data)\n",
		"\n  TTFT p99   ▃▃▅▇█ █   1.20s → 3.40s (max 3.60s)\n",
		"\n  waiting   ▁▁▂██▆▃▁   0 → 12 (max 316)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// After the latency map, before the findings.
	if i, j, k := strings.Index(out, "Latency map"), strings.Index(out, "Over the window"), strings.Index(out, "Findings"); !(i < j && j < k) {
		t.Errorf("section out of place:\n%s", out)
	}

	// Fewer than three finite points: no line, and never NaN.
	d.Targets[0].Curves = map[string][][2]float64{
		"ttft_p99_steps": steps(nan, 1.2, nan, nan, 3.0, nan),
		"waiting":        steps(1, 2),
	}
	out = textOf(t, d, 80)
	if strings.Contains(out, "Over the window") || strings.Contains(out, "NaN") || strings.Contains(out, "n/a") {
		t.Errorf("drawn from too few points:\n%s", out)
	}
	d.Targets[0].Curves = map[string][][2]float64{"waiting": steps(3, nan, 5, 8)}
	out = textOf(t, d, 80)
	if !strings.Contains(out, "  waiting   ▃ ▅█  3 → 8 (max 8)\n") || strings.Contains(out, "TTFT p99") {
		t.Errorf("want the waiting line alone:\n%s", out)
	}
}

// The lines share one time axis: a series that starts late starts late,
// and resampled spikes at the same time fall in the same column.
func TestOverTheWindowSharesTheAxis(t *testing.T) {
	d := sample()
	late := steps(0, 0, 0, 0, 0, 4, 8, 8, 8, 8)[5:]
	d.Targets[0].Curves = map[string][][2]float64{
		"ttft_p99_steps": steps(1, 1, 1, 1, 1, 2, 2, 2, 2, 2),
		"waiting":        late,
	}
	out := textOf(t, d, 80)
	for _, want := range []string{"\n  TTFT p99  ▄▄▄▄▄█████  1.00s → 2.00s (max 2.00s)\n", "\n  waiting        ▄████  4 → 8 (max 8)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}

	var p99, waiting []float64
	for range 600 {
		p99, waiting = append(p99, 1), append(waiting, 0)
	}
	p99[431], waiting[433] = 9, 50
	d.Targets[0].Curves = map[string][][2]float64{"ttft_p99_steps": steps(p99...), "waiting": steps(waiting...)}
	for _, width := range []int{40, 80, 120} {
		col := map[string]int{}
		for _, l := range strings.Split(textOf(t, d, width), "\n") {
			for _, name := range []string{"TTFT p99", "waiting"} {
				if strings.HasPrefix(l, "  "+name) {
					col[name] = slices.Index([]rune(l), '█')
				}
			}
		}
		if col["TTFT p99"] < 12 || col["TTFT p99"] != col["waiting"] {
			t.Errorf("width %d: spikes two steps apart in columns %v", width, col)
		}
	}
}

func textOf(t *testing.T, d *advisor.Diagnosis, width int) string {
	t.Helper()
	var b bytes.Buffer
	if err := Text(&b, d, Options{Color: "never", Width: width, Details: true}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// realistic is a diagnosis with every part the text report draws, long
// names, URLs and paths included.
func realistic() *advisor.Diagnosis {
	f := func(x float64) *float64 { return &x }
	nan := math.NaN()
	var p99, waiting, prompt [][2]float64
	for i := range 240 {
		y := 2 + math.Sin(float64(i)/20)
		if i%37 == 5 {
			y = nan
		}
		if i == 100 {
			y = 31
		}
		p99 = append(p99, [2]float64{float64(i) * 15, y})
		waiting = append(waiting, [2]float64{float64(i) * 15, math.Max(0, 300*math.Sin(float64(i)/30))})
	}
	for i := range 24 {
		prompt = append(prompt, [2]float64{float64(i+1) * 500, 0.05 + float64(i)*0.02})
	}
	long := "https://prometheus.monitoring.svc.cluster.local:9090/api/v1/query_range?query=histogram_quantile"
	finding := advisor.Finding{Rule: "queue/ttft-dominated", Severity: "critical", Title: "Time to first token is mostly scheduler queue wait",
		Message:  "100% of mean TTFT is spent waiting for the scheduler (19.09s per request, p99 29.77s); up to 316 requests were waiting.",
		Evidence: map[string]float64{"stage.queue.mean": 19.09, "service.waiting.max": 316, "stage.share.queue": 1},
		Sources:  map[string]string{"stage.queue.mean": "vllm:request_queue_time_seconds", "service.waiting.max": "vllm:num_requests_waiting"},
		Stage:    "queue", Impact: f(1), Capped: "a critical finding explains more of the latency", Docs: "docs/rules/queue/ttft-dominated.md"}
	explained := finding
	explained.Rule, explained.ExplainedBy = "queue/batch-full", "queue/ttft-dominated"
	explained.Docs = "docs/rules/queue/batch-full-and-a-much-longer-path-name.md"
	return &advisor.Diagnosis{Schema: advisor.Schema, Window: advisor.Window{Seconds: 3600, Points: 240},
		Sources: []advisor.Source{
			{Kind: "prom", URL: long, OK: true, Notes: []string{"step 15s"}},
			{Kind: "dcgm", URL: "http://10.0.0.1:9400/metrics", Error: "connection refused", Skipped: map[string]int{"x": 1}},
		},
		Notes: []string{"simulated scenario queue-bound: max_num_seqs is too low for the arrival rate"},
		Targets: []advisor.TargetReport{{
			Target: evidence.Target{Model: "meta-llama/Llama-3.1-70B-Instruct-FP8-dynamic", Instance: "10.0.12.7:8000", ServedBy: "vllm"},
			Primary: advisor.Primary{Bottleneck: "queueing", Rule: "queue/ttft-dominated", Status: "found", Summary: finding.Title,
				Unchecked: []string{"gpu/compute-bound", "gpu/memory-bound"}, Bounded: []advisor.Bounded{{Rule: "kv/pressure", Why: "KV cache usage never passed 40%"}}},
			Inconsistencies: []evidence.Inconsistency{{Check: "ttft-excludes-queue", Note: "the server's TTFT is shorter than its queue time: TTFT is taken to leave queue out"}},
			Conditions: map[string]any{"prompt_tokens": map[string]any{"mean": 898.0, "p90": 1800.0}, "output_tokens": map[string]any{"mean": 219.0},
				"kv_capacity_tokens": 426800.0, "prefix_caching": 1.0, "gpu_memory_utilization": 0.9, "engines": 1.0,
				"prompt_ttft_intercept": 0.04, "prompt_ttft_slope": 0.04, "prompt_ttft_r2": 0.98},
			LatencyMap: advisor.LatencyMap{TTFT: f(19.14), Queue: f(19.09), Prefill: f(0.025), Decode: f(2.41), E2E: f(21.54),
				ClientTTFT: f(19.3), NetworkShare: f(0.01), TTFTExcludesQueue: true},
			Curves:   map[string][][2]float64{"ttft_p99_steps": p99, "waiting": waiting, "prompt_ttft": prompt},
			Findings: []advisor.Finding{finding, explained},
			Next: []advisor.Step{{Do: "raise --max-num-seqs and --max-num-batched-tokens so each step admits more requests (watch KV cache usage as you do)", Cost: "config"},
				{Do: "put admission control or a rate limit in front of the server", Cost: "architecture"}},
			Gaps: []advisor.Gap{{Rule: "gpu/compute-bound", Details: []rules.Missing{{Path: "resource.sm_active.mean", Why: "missing"}, {Path: "resource.tensor_active.mean", Why: "only 2 samples (need 5)"}},
				How: "run dcgm-exporter with the profiling metrics (DCGM_FI_PROF_*) enabled and pass --dcgm host:9400"},
				{Rule: "kv/pressure", Details: []rules.Missing{{Path: "resource.kv_usage.max", Why: "missing"}}, Bounded: "KV cache usage never passed 40%"}},
			Skipped:    []advisor.Skip{{Source: "requests", Rules: []string{"a", "b"}, How: "a benchmark result (vllm bench serve JSON) or per-request records (JSONL/CSV)"}},
			Suppressed: []advisor.Finding{{Rule: "kv/preemptions", Suppressed: "known: preemptions during the nightly batch job, see INC-4211"}},
			Members: []advisor.Member{{Target: evidence.Target{Engine: "0"}, Evidence: map[string]float64{"stage.ttft.p99": 29.7, "stage.queue.mean": 19.1, "service.waiting.mean": 249, "resource.kv_usage.mean": 0.31}},
				{Target: evidence.Target{Instance: "10.0.12.8:8000"}, Evidence: map[string]float64{"stage.ttft.p99": 1.2}}},
			Checks: advisor.Checks{Fired: 2, Quiet: 23, Bounded: 1, Insufficient: 1},
		}}}
}

func realisticChecklist() *advisor.Checklist {
	return &advisor.Checklist{Schema: "llmdoctor.checklist/v1", Status: advisor.Fail, Strict: true,
		Sources: []advisor.Source{{Kind: "bench", Path: "/home/someone/benchmarks/2025-06-01/llama-3.1-70b-instruct-fp8-run-17.json", OK: true}},
		Targets: []advisor.ChecklistTarget{{Target: evidence.Target{Model: "meta-llama/Llama-3.1-70B-Instruct-FP8-dynamic", Instance: "10.0.12.7:8000"},
			Items: []advisor.Item{
				{Title: "TTFT p99 within the SLO (2s)", Status: advisor.Fail, Blocking: true, Message: "TTFT p99 was 29.77s, over the 2s SLO by 27.77s",
					Fix: []rules.Step{{Do: "raise --max-num-seqs and --max-num-batched-tokens so each step admits more requests", Cost: "config"}}},
				{Title: "GPU compute headroom", Status: advisor.CannotCheck, How: "run dcgm-exporter with the profiling metrics (DCGM_FI_PROF_*) enabled"},
				{Title: "No preemptions", Status: advisor.Pass},
			},
			Passed: 1, Failed: 1, CannotCheck: 1}}}
}

// Every line of a realistic report fits the width, in colour or not, and
// the latency bars scale with it.
func TestTextFitsWidth(t *testing.T) {
	bars := map[int]int{}
	for _, width := range []int{60, 80, 120, 160, 200} {
		for _, color := range []string{"never", "always"} {
			var b bytes.Buffer
			if err := Text(&b, realistic(), Options{Color: color, Width: width}); err != nil {
				t.Fatal(err)
			}
			if err := Text(&b, realistic(), Options{Color: color, Width: width, Details: true}); err != nil {
				t.Fatal(err)
			}
			if err := ChecklistText(&b, realisticChecklist(), Options{Color: color, Width: width}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, l := range strings.Split(out, "\n") {
				if n := ansi.StringWidth(l); n > width {
					t.Errorf("width %d, colour %s: %d columns: %q", width, color, n, l)
				}
			}
			for _, want := range []string{"Over the window", "TTFT p99", "waiting", "(max 31.00s)", "Prompt length", "CRITICAL", "NOT READY", "passed · 1 failed"} {
				if !strings.Contains(out, want) {
					t.Errorf("width %d: missing %q", width, want)
				}
			}
			if strings.Contains(out, "NaN") {
				t.Errorf("width %d: NaN printed", width)
			}
			if color == "never" {
				for _, l := range strings.Split(out, "\n") {
					if strings.HasPrefix(l, "  queue ") {
						bars[width] = strings.Count(l, "█") + strings.Count(l, "·")
					}
				}
			}
		}
	}
	if bars[80] != 38 || !(bars[40] < bars[60] && bars[60] < bars[80] && bars[80] < bars[120] && bars[120] < bars[160]) {
		t.Errorf("latency bars do not scale with the width: %v", bars)
	}
}

// A multiple reads as one (514×), a share as a percent: never 51370%.
func TestFormatValueByUnit(t *testing.T) {
	for path, c := range map[string]struct {
		x    float64
		want string
	}{
		"service.ttft_p99_outlier_ratio": {513.7, "514×"},
		"service.warmup_ratio":           {3.2, "3.20×"},
		"stage.share.queue":              {0.92, "92%"},
		"stage.ttft.mean":                {0, "0s"},
	} {
		if got := formatValue(path, c.x); got != c.want {
			t.Errorf("%s = %v: %q, want %q", path, c.x, got, c.want)
		}
	}
}

// The latency map says what each of its parts is, "front" above all.
func TestLatencyMapSaysWhatFrontIs(t *testing.T) {
	d := sample()
	front := 0.4
	d.Targets[0].LatencyMap.Front = &front
	out := textOf(t, d, 80)
	i, j := strings.Index(out, "Latency map"), strings.Index(out, "front: before the engine saw the request")
	if i < 0 || j < i {
		t.Errorf("no legend under the latency map:\n%s", out)
	}
}

// A request-level source's percentiles are a table on the first screen,
// the server's beside them where its metrics give them; without one, no
// table.
func TestPercentileTable(t *testing.T) {
	dist := func(p50, p90, p99, n float64) map[string]any {
		return map[string]any{"p50": p50, "p90": p90, "p99": p99, "count": n}
	}
	d := sample()
	d.Targets[0].Evidence = map[string]any{
		"service": map[string]any{"client_ttft": dist(0.025, 0.046, 0.088, 240), "client_itl": dist(0.008, 0.008, 0.019, 46256)},
		"stage":   map[string]any{"ttft": dist(0.02, 0.04, 0.08, 238)},
	}
	out := textOf(t, d, 80)
	for _, want := range []string{
		"\nLatency percentiles (clients; the server where its metrics say)\n                      p50      p90      p99  requests\n",
		"\n  TTFT               25ms     46ms     88ms       240\n",
		"\n  TTFT (server)      20ms     40ms     80ms       238\n",
		"\n  ITL                 8ms      8ms     19ms\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "E2E") {
		t.Errorf("a row without numbers:\n%s", out)
	}
	d.Targets[0].Evidence = map[string]any{"stage": map[string]any{"ttft": dist(0.02, 0.04, 0.08, 238)}}
	if out := textOf(t, d, 80); strings.Contains(out, "Latency percentiles") {
		t.Errorf("a table without a request-level source:\n%s", out)
	}
}

// Without engine metrics, the gaps only the engine can close are one line;
// a gap a request file could close, and one quiet by a bound, stay whole.
// With engine metrics every gap is listed.
func TestEngineGapsGroupedWithoutEngine(t *testing.T) {
	miss := func(rule string, bound string, paths ...string) advisor.Gap {
		g := advisor.Gap{Rule: rule, Severity: "warning", Missing: paths, Bounded: bound, How: "how " + rule}
		for _, p := range paths {
			g.Details = append(g.Details, rules.Missing{Path: p, Why: "missing"})
		}
		return g
	}
	d := sample()
	d.Targets[0].Target = evidence.Target{Model: "m"}
	d.Targets[0].Gaps = []advisor.Gap{
		miss("kv/saturated", "", "resource.kv_usage", "service.waiting"),
		miss("queue/batch-full", "", "service.running"),
		miss("measurement/early-stop", "", "cond.output_max_ratio"),
		miss("prefill/long-prompt-tail", "the prompts vary little", "stage.prefill", "stage.ttft"),
		miss("verdict/no-single-bottleneck", "", "kv/saturated", "queue/batch-full"),
	}
	out := textOf(t, d, 200)
	for _, want := range []string{
		"? 3 checks need the serving engine's metrics, which no source here gives (add --prom URL, or --target URL for its /metrics): kv/saturated, queue/batch-full, verdict/no-single-bottleneck\n",
		"? measurement/early-stop: needs cond.output_max_ratio\n",
		"? prefill/long-prompt-tail: needs stage.prefill, stage.ttft\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "how kv/saturated") {
		t.Errorf("a grouped gap is also listed:\n%s", out)
	}
	d.Targets[0].Target.ServedBy = "vllm"
	if out := textOf(t, d, 200); strings.Contains(out, "need the serving engine's metrics") || !strings.Contains(out, "? kv/saturated: needs") {
		t.Errorf("gaps grouped although the engine's metrics were read:\n%s", out)
	}
}

// The first screen: the verdict, the latency map, the top three findings
// with their messages (what they explain folded to a line), the next steps
// and one line each for what could not be checked and for the members;
// --details has the rest.
func TestTextFirstScreen(t *testing.T) {
	d := realistic()
	tr := &d.Targets[0]
	top := tr.Findings[0]
	for _, id := range []string{"kv/preemptions-b", "decode/slow", "gpu/hot"} {
		g := top
		g.Rule, g.Title, g.ExplainedBy = id, "title of "+id, ""
		tr.Findings = append(tr.Findings, g)
	}
	var short, full bytes.Buffer
	if err := Text(&short, d, Options{Color: "never", Width: 80}); err != nil {
		t.Fatal(err)
	}
	if err := Text(&full, d, Options{Color: "never", Width: 80, Details: true}); err != nil {
		t.Fatal(err)
	}
	s := short.String()
	for _, want := range []string{
		"✗ CRITICAL VERDICT queueing",
		"1 finding suppressed by configuration: kv/preemptions (--details says why).",
		"Latency map (mean TTFT 19.14s",
		"  ✗ CRITICAL queue/ttft-dominated:",
		"    ↳ explains queue/batch-full: Time to first token",
		"  ✗ CRITICAL kv/preemptions-b:",
		"  ✗ CRITICAL decode/slow:",
		"  + 1 more finding: gpu/hot\n",
		"1. [config] raise --max-num-seqs",
		"  ? 1 check could not run · 2 requests rules skipped: no requests data\n",
		"Could not check: gpu/compute-bound, gpu/memory-bound (--details says what each",
		"2 engines behind this target",
		"checks: 2 fired · 23 quiet (1 bounded) · 1 could not run",
		"--details: every finding",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("first screen lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"evidence:", "docs:", "from:", "Over the window", "Request conditions", "Could not check\n", "Suppressed\n", "Per instance", "bounded: kv/pressure", "title of gpu/hot"} {
		if strings.Contains(s, not) {
			t.Errorf("first screen has %q:\n%s", not, s)
		}
	}
	f := full.String()
	for _, want := range []string{"evidence: service.waiting.max=316", "docs: docs/rules/queue/ttft-dominated.md", "Over the window", "Request conditions",
		"Could not check\n", "Suppressed\n", "Per instance", "title of gpu/hot", "↳ explained by the finding above:", "bounded: kv/pressure"} {
		if !strings.Contains(f, want) {
			t.Errorf("--details lacks %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "--details:") {
		t.Errorf("--details points to itself:\n%s", f)
	}
}
