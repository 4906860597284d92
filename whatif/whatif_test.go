package whatif

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
)

// simulated diagnoses a built-in scenario's window.
func simulated(t *testing.T, name string) (Options, *advisor.Diagnosis) {
	t.Helper()
	o := options(t)
	sc, err := sim.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	d, err := simulate(context.Background(), sc, o)
	if err != nil || len(d.Targets) != 1 {
		t.Fatalf("%s: %v", name, err)
	}
	return o, d
}

func options(t *testing.T) Options {
	t.Helper()
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Rules: set, Config: &rules.Config{}}
}

// Quick tier: two scenarios of the validation set, one predicted and one
// declined. The predicted one's change, run in the simulator, lands within
// the error docs/whatif.md publishes; the declined one's replay missed a
// figure, and the case says which.
func TestValidationSample(t *testing.T) {
	o := options(t)
	ctx := context.Background()
	c, err := validateOne(ctx, validationScenario(ValidationSeed, 0), 0, o)
	if err != nil {
		t.Fatal(err)
	}
	if !c.PredictedAny() || c.Whatif != "more_seqs" || c.ReplayError > DefaultTolerance {
		t.Fatalf("case 0: predicted %v (%s), replay error %.2f, why %q", c.PredictedAny(), c.Whatif, c.ReplayError, c.Why)
	}
	// docs/whatif.md's p90 errors, with room for a case to be worse than
	// most: a prediction past these is a regression whatever the set says.
	for name, limit := range map[string]float64{"ttft_p99": 0.5, "e2e_p99": 0.25, "itl_p99": 0.5} {
		if e := c.Error(name); !(e <= limit) {
			t.Errorf("case 0 %s: predicted %.4g, measured %.4g: error %.2f over %.2f", name, c.Predicted[name], c.Actual[name], e, limit)
		}
	}
	d, err := validateOne(ctx, validationScenario(ValidationSeed, 3), 3, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.PredictedAny() || d.Reproduced || d.Missed != "itl_p99" || !strings.Contains(d.Why, "could not be reproduced") {
		t.Errorf("case 3: predicted %v, reproduced %v, missed %q, why %q; want declined for itl_p99", d.PredictedAny(), d.Reproduced, d.Missed, d.Why)
	}
}

// Heavy tier: the validation. Random scenarios predicted and then run with
// the change; docs/whatif.md publishes the error (-update rewrites it, as
// go generate does), and the queue-bound demo's first step must land
// within it.
func TestValidation(t *testing.T) {
	testkit.NeedHeavy(t, "runs a few hundred simulated windows")
	o := options(t)
	ctx := context.Background()
	cs, err := Validate(ctx, ValidationSeed, ValidationWant, validationMax, o)
	if err != nil {
		t.Fatal(err)
	}
	demo, err := RunDemo(ctx, "queue-bound", o)
	if err != nil {
		t.Fatal(err)
	}
	doc := ValidationReport(cs, demo, DefaultTolerance)
	path := filepath.Join("..", "docs", "whatif.md")
	if *testkit.Update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != doc {
		t.Error("docs/whatif.md is stale: run go generate ./whatif (or this test with -update)")
	}

	predicted := 0
	for _, c := range cs {
		if c.PredictedAny() {
			predicted++
			if c.ReplayError > DefaultTolerance {
				t.Errorf("%s: predicted with a replay error of %.2f, over the tolerance", c.Scenario, c.ReplayError)
			}
		}
	}
	if predicted < 50 {
		t.Errorf("%d predictions, want at least 50", predicted)
	}
	// Guards: what the page publishes may not silently get worse.
	guards := map[string]struct{ median, p90, direction float64 }{
		"ttft_p99": {0.25, 1.5, 0.7}, "e2e_p99": {0.2, 1, 0.7}, "itl_p99": {0.25, 0.5, 0.7}, "e2e_p50": {0.2, 0.75, 0.7},
	}
	published := map[string]Summary{}
	for _, s := range Summarize(cs) {
		published[s.Name] = s
		if g, ok := guards[s.Name]; ok && (s.Median > g.median || s.P90 > g.p90 || s.Direction < g.direction) {
			t.Errorf("%s: median error %.2f, p90 %.2f, direction %.2f; guards %+v", s.Name, s.Median, s.P90, s.Direction, g)
		}
	}
	// The must-show: the queue-bound demo's first step, within the
	// published error: every figure within its p90, the p99s within ±25%.
	if len(demo.Figures) < 6 {
		t.Fatalf("demo predicted %d figures", len(demo.Figures))
	}
	for _, f := range demo.Figures {
		e := math.Abs(f.Predicted-f.Actual) / f.Actual
		limit := published[f.Name].P90
		if strings.HasSuffix(f.Name, "p99") {
			limit = min(limit, 0.25)
		}
		if !(e <= limit) {
			t.Errorf("queue-bound %s: predicted %.4g, measured %.4g: error %.2f over the published %.2f", f.Name, f.Predicted, f.Actual, e, limit)
		}
	}
	if !strings.Contains(demo.Change, "max_num_seqs 32 → 128") {
		t.Errorf("queue-bound's first step simulated %q, want max_num_seqs 32 → 128", demo.Change)
	}
}

// A calibration that lacks what it needs says so and predicts nothing.
func TestCalibrateRefuses(t *testing.T) {
	o, d := simulated(t, "queue-bound")
	ctx := context.Background()
	base := d.Targets[0]
	for _, tc := range []struct {
		drop, want string
	}{
		{"cond.gpu_blocks", "KV cache's size is unknown"},
		{"service.request_rate", "no request rate"},
		{"stage.prefill", "no prefill time"},
		{"cond.prompt_tokens", "prompt lengths"},
		{"cond.window_seconds", "window's length"},
	} {
		t.Run(tc.drop, func(t *testing.T) {
			tr := base
			tr.Evidence = without(base.Evidence, tc.drop)
			tr.Next = append([]advisor.Step{}, base.Next...)
			got := Calibrate(ctx, &tr, o)
			if !strings.Contains(got.Why, tc.want) || got.Reproduced {
				t.Fatalf("why %q, reproduced %v; want %q", got.Why, got.Reproduced, tc.want)
			}
			for _, s := range got.Steps {
				if s.Effect != nil || !strings.HasPrefix(s.Why, "not predicted: ") {
					t.Errorf("step %q priced without a calibration: %+v", s.Step, s)
				}
			}
		})
	}
	for _, tc := range []struct {
		path  string
		value float64
		want  string
	}{
		{"service.instances", 2, "sums 2 engines or replicas"},
		{"cond.engines", 4, "sums 4 engines or replicas"},
		{"stage.itl.mean", 2e-5, "faster than any engine steps"},
	} {
		tr := base
		tr.Evidence = with(base.Evidence, tc.path, tc.value)
		if got := Calibrate(ctx, &tr, o); !strings.Contains(got.Why, tc.want) {
			t.Errorf("%s = %v: why %q, want %q", tc.path, tc.value, got.Why, tc.want)
		}
	}
	// A queue that never emptied, without the running gauge: refused by
	// name, and the result still encodes (no NaN anywhere).
	tr := base
	tr.Evidence = without(base.Evidence, "service.running")
	got := Calibrate(ctx, &tr, o)
	if !strings.Contains(got.Why, "without the running and waiting gauges' means") {
		t.Errorf("no running gauge: why %q", got.Why)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("the result does not encode: %v", err)
	}
	tr = base
	tr.Inconsistencies = []evidence.Inconsistency{{Check: "x", Note: "queue exceeds TTFT"}}
	if got := Calibrate(ctx, &tr, o); !strings.Contains(got.Why, "contradicts itself (queue exceeds TTFT)") {
		t.Errorf("inconsistent evidence: why %q", got.Why)
	}
}

// edited copies an evidence tree with the value at one dotted path
// replaced by what change returns for it; nil removes it.
func edited(tree map[string]any, path string, change func(old any) any) map[string]any {
	out := map[string]any{}
	for k, v := range tree {
		out[k] = v
	}
	head, rest, deeper := strings.Cut(path, ".")
	next := change(tree[head])
	if m, ok := tree[head].(map[string]any); ok && deeper {
		next = edited(m, rest, change)
	}
	if next == nil {
		delete(out, head)
	} else {
		out[head] = next
	}
	return out
}

func without(tree map[string]any, path string) map[string]any {
	return edited(tree, path, func(any) any { return nil })
}

func with(tree map[string]any, path string, v float64) map[string]any {
	return edited(tree, path, func(any) any { return v })
}

// A window the replay misses gets no numbers, and the reason names the figure.
func TestNotReproducedPredictsNothing(t *testing.T) {
	o, d := simulated(t, "queue-bound")
	ctx := context.Background()
	tr := d.Targets[0]
	// Claim twice the TTFT the window had: nothing about the rest explains it.
	tr.Evidence = with(tr.Evidence, "stage.ttft.mean", 2*evidence.TreeNumber(tr.Evidence, "stage.ttft.mean"))
	got := Calibrate(ctx, &tr, o)
	if got.Reproduced || got.Missed != "ttft_mean" || !strings.Contains(got.Why, "the replay's ttft_mean is") {
		t.Fatalf("reproduced %v, missed %q, why %q", got.Reproduced, got.Missed, got.Why)
	}
	for _, s := range got.Steps {
		if s.Effect != nil {
			t.Errorf("step %q priced", s.Step)
		}
	}
}

// Run puts each effect on the step it belongs to, and a note per target.
func TestRunAnnotatesSteps(t *testing.T) {
	o, d := simulated(t, "queue-bound")
	ctx := context.Background()
	res := Run(ctx, d, o)
	if len(res.Targets) != 1 || !res.Targets[0].Reproduced {
		t.Fatalf("not reproduced: %+v", res.Targets[0].Why)
	}
	priced := 0
	for _, s := range d.Targets[0].Next {
		if (s.Effect != nil) != (s.Whatif != "") {
			t.Errorf("step %q: whatif %q, effect %v", s.Do, s.Whatif, s.Effect)
		}
		if s.Effect != nil {
			priced++
			if s.Effect.ReplayError != res.Targets[0].Error || len(s.Effect.Figures) != 6 {
				t.Errorf("effect %+v", s.Effect)
			}
		}
	}
	if priced != 2 {
		t.Errorf("%d steps priced, want the batch step and the replica step", priced)
	}
	if len(d.Notes) == 0 || !strings.Contains(d.Notes[len(d.Notes)-1], "predicted effects are beside the steps") {
		t.Errorf("notes %q", d.Notes)
	}
}

// A change that moves nothing is reported as no change, not as the replay's
// own error: decode-bound's KV cache holds no more requests than its cap,
// and fp8 does not move its figures by a tenth.
func TestUnchangedFigures(t *testing.T) {
	o, d := simulated(t, "decode-bound")
	ctx := context.Background()
	cal := Calibrate(ctx, &d.Targets[0], o)
	if !cal.Reproduced {
		t.Fatalf("decode-bound not reproduced: %s", cal.Why)
	}
	seen := map[string]bool{}
	for _, p := range cal.Steps {
		seen[p.Whatif] = true
		switch p.Whatif {
		case "more_seqs":
			if p.Effect != nil || !strings.Contains(p.Why, "no more than max_num_seqs") {
				t.Errorf("more_seqs: %+v", p)
			}
		case "fp8_kv":
			if p.Effect == nil {
				t.Fatalf("fp8_kv not predicted: %s", p.Why)
			}
			ttftSame := false
			for _, f := range p.Effect.Figures {
				if f.Unchanged && f.Predicted != f.Observed {
					t.Errorf("%s unchanged but predicted %v, observed %v", f.Name, f.Predicted, f.Observed)
				}
				ttftSame = ttftSame || f.Name == "ttft_p99" && f.Unchanged
			}
			if !ttftSame {
				t.Errorf("fp8 moved TTFT p99 by a tenth or more: %+v", p.Effect.Figures)
			}
		}
	}
	if !seen["more_seqs"] || !seen["fp8_kv"] {
		t.Errorf("decode-bound's steps name %v, want more_seqs and fp8_kv", seen)
	}
}

// A change applies to a modelled scenario and a fitted one alike.
func TestChangeApply(t *testing.T) {
	sc := &sim.Scenario{Name: "x", Model: "llama-8b", GPU: "H100-SXM", Workload: sim.Workload{Rate: 10,
		Steps: []sim.RateStep{{Rate: 20}}}}
	c := Change{MaxNumSeqs: 64, MaxNumBatchedTokens: 4096, ChunkedPrefill: true, FP8KV: true, RateFactor: 0.5}
	got := c.Apply(sc)
	if got.Engine.MaxNumSeqs != 64 || got.Engine.MaxNumBatchedTokens != 4096 || !got.Engine.ChunkedPrefill ||
		got.Engine.KVCacheDTypeBytes != 1 || got.Workload.Rate != 5 || got.Workload.Steps[0].Rate != 10 {
		t.Errorf("modelled: %+v", got)
	}
	if sc.Workload.Rate != 10 || sc.Workload.Steps[0].Rate != 20 {
		t.Error("Apply changed its input")
	}
	fitted := &sim.Scenario{Name: "y", Engine: sim.EngineConfig{GPUBlocks: 1000, Cost: &sim.StepCost{Fixed: 1, PerContext: 2}}}
	got = Change{FP8KV: true}.Apply(fitted)
	if got.Engine.GPUBlocks != 2000 || got.Engine.Cost.PerContext != 1 || fitted.Engine.Cost.PerContext != 2 {
		t.Errorf("fitted: blocks %d, per context %v (input %v)", got.Engine.GPUBlocks, got.Engine.Cost.PerContext, fitted.Engine.Cost.PerContext)
	}
}

// One target's whatif on the queue-bound demo: the calibration's replays
// and both steps' predictions, against the diagnosis of the same window.
func BenchmarkWhatifQueueBound(b *testing.B) {
	set, err := rules.Load()
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Rules: set, Config: &rules.Config{}}
	ctx := context.Background()
	sc, _ := sim.Load("queue-bound")
	d, err := simulate(ctx, sc, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("diagnosis", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := simulate(ctx, sc, o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whatif", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			tr := d.Targets[0]
			tr.Next = append([]advisor.Step{}, tr.Next...)
			if c := Calibrate(ctx, &tr, o); !c.Reproduced {
				b.Fatal(c.Why)
			}
		}
	})
}

// A TTFT p99 interpolated above end-to-end p99 is no test of a replay: the
// row is shown, not counted as "0% off".
func TestOutOfOrderQuantileIsNoTest(t *testing.T) {
	tr := advisor.TargetReport{
		Evidence:        map[string]any{"stage": map[string]any{"ttft": map[string]any{"p99": 39.6}}, "service": map[string]any{"e2e": map[string]any{"p99": 29.9}}},
		Resolution:      map[string][2]float64{"stage.ttft.p99": {20, 40}},
		Inconsistencies: []evidence.Inconsistency{{Check: "quantiles-out-of-order", Fields: []string{"stage.ttft.p99", "service.e2e.p99"}}},
	}
	rep := map[string]any{"stage": map[string]any{"ttft": map[string]any{"p99": 31.0}}, "service": map[string]any{"e2e": map[string]any{"p99": 29.9}}}
	rows, worst := compareFigures(&tr, rep, fitted{engines: 1})
	for _, r := range rows {
		if (r.Name == "ttft_p99" || r.Name == "e2e_p99") && !r.Shown {
			t.Errorf("%s counted: %+v", r.Name, r)
		}
	}
	if worst != 0 || len(rows) != 2 {
		t.Errorf("worst %v rows %+v", worst, rows)
	}
}
