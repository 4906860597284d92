package advisor

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
)

func rule(t *testing.T, id, bottleneck, severity, explains, next string) *rules.Rule {
	t.Helper()
	src := "id: " + id + "\ntitle: " + id + " title\nlayer: stage\nbottleneck: " + bottleneck +
		"\nseverity: " + severity + "\nstage: queue\nexplains: [" + explains + "]\nwhen: stage.ttft.mean > 0\nsays: m\nnext:\n" + next
	r, err := rules.Parse(id+".yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fired(r *rules.Rule, impact float64) rules.Result {
	return rules.Result{Rule: r, Outcome: rules.Fired, Severity: r.Sev, Impact: impact, ImpactMax: impact, Message: "m", Notes: &rules.Notes{Explains: r.Explains},
		Evidence: map[string]float64{"stage.ttft.mean": 1}}
}

func TestRootCauseBeatsLouderSymptom(t *testing.T) {
	q := rule(t, "queue/a", "queueing", "critical", "", "  - {do: raise max_num_seqs, cost: config}\n")
	kv := rule(t, "kv/a", "kv-capacity", "warning", "queueing", "  - {do: fp8 kv, cost: config}\n  - {do: more GPUs, cost: hardware}\n")
	d := Advise(evidence.New(evidence.Target{Model: "m"}), []rules.Result{fired(q, 0.9), fired(kv, 0)}, nil)
	if d.Primary.Bottleneck != "kv-capacity" || d.Primary.Rule != "kv/a" {
		t.Fatalf("primary %+v", d.Primary)
	}
	if d.Findings[0].Rule != "kv/a" || d.Findings[1].ExplainedBy != "kv/a" {
		t.Fatalf("order %v", d.Findings)
	}
	// Steps come from the cause only, cheapest first.
	if len(d.Next) != 2 || d.Next[0].Cost != "config" || d.Next[1].Cost != "hardware" || d.Next[0].Do != "fp8 kv" {
		t.Fatalf("next %+v", d.Next)
	}
}

func TestRankBySeverityThenImpact(t *testing.T) {
	a := rule(t, "a/a", "prefill", "warning", "", "")
	b := rule(t, "b/b", "queueing", "critical", "", "")
	c := rule(t, "c/c", "cpu-overhead", "critical", "", "")
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(a, 0.9), fired(b, 0.2), fired(c, 0.6)}, nil)
	got := []string{d.Findings[0].Rule, d.Findings[1].Rule, d.Findings[2].Rule}
	if strings.Join(got, " ") != "c/c b/b a/a" || d.Primary.Rule != "c/c" {
		t.Fatalf("order %v primary %s", got, d.Primary.Rule)
	}
}

func TestHealthyOnlyWhenDecidingRulesRan(t *testing.T) {
	crit := rule(t, "q/q", "queueing", "critical", "", "")
	warn := rule(t, "w/w", "prefill", "warning", "", "")
	quiet := []rules.Result{{Rule: crit, Outcome: rules.Quiet, Severity: rules.Critical}, {Rule: warn, Outcome: rules.Insufficient, Severity: rules.Warning,
		Notes: &rules.Notes{Missing: []rules.Missing{{Path: "stage.prefill", Why: "missing", How: "upgrade"}}}}}
	d := Advise(evidence.New(evidence.Target{}), quiet, nil)
	if d.Primary.Bottleneck != "none" || d.Primary.Status != "healthy" || len(d.Gaps) != 1 || d.Gaps[0].How != "upgrade" {
		t.Fatalf("primary %+v gaps %+v", d.Primary, d.Gaps)
	}
	unchecked := []rules.Result{{Rule: crit, Outcome: rules.Insufficient, Severity: rules.Critical,
		Notes: &rules.Notes{Missing: []rules.Missing{{Path: "stage.queue", Why: "missing"}}}}}
	d = Advise(evidence.New(evidence.Target{}), unchecked, nil)
	if d.Primary.Bottleneck != "unknown" || d.Primary.Status != "inconclusive" || !strings.Contains(d.Primary.Summary, "q/q") {
		t.Fatalf("primary %+v", d.Primary)
	}
}

// Suppressed findings are listed apart, and a suppressed root cause never
// makes a target healthy: the verdict names it, suppressed.
func TestSuppressedFindingsAreListedApart(t *testing.T) {
	q := rule(t, "q/q", "queueing", "critical", "", "")
	kv := rule(t, "kv/a", "kv-capacity", "warning", "queueing", "")
	info := rule(t, "i/i", "cpu-overhead", "info", "", "")
	suppress := func(r rules.Result) rules.Result { n := *r.Notes; n.Suppressed = "known"; r.Notes = &n; return r }
	for _, c := range []struct {
		name                    string
		results                 []rules.Result
		status, bottleneck, why string
	}{
		{"the root cause suppressed", []rules.Result{suppress(fired(q, 0.5))}, "suppressed", "queueing", "suppressed by configuration: known"},
		{"a cause suppressed, its effect not", []rules.Result{fired(q, 0.9), suppress(fired(kv, 0))}, "found", "queueing", ""},
		// The cause's share is its suppressed effect's: still found.
		{"the effect suppressed, its cause not", []rules.Result{suppress(fired(q, 0.9)), fired(kv, 0)}, "found", "kv-capacity", ""},
		{"a suppressed stage too small to be a verdict", []rules.Result{suppress(fired(q, 0.05))}, "healthy", "none", ""},
		{"a suppressed info finding", []rules.Result{suppress(fired(info, 0.5))}, "healthy", "none", ""},
	} {
		d := Advise(evidence.New(evidence.Target{}), c.results, nil)
		if len(d.Suppressed) != 1 || len(d.Findings)+len(d.Suppressed) != len(c.results) {
			t.Errorf("%s: findings %d suppressed %d", c.name, len(d.Findings), len(d.Suppressed))
		}
		if d.Primary.Status != c.status || d.Primary.Bottleneck != c.bottleneck || !strings.Contains(d.Primary.Summary, c.why) {
			t.Errorf("%s: primary %+v", c.name, d.Primary)
		}
	}
}

// The JSON contract: field names scripts rely on.
func TestJSONContract(t *testing.T) {
	q := rule(t, "q/q", "queueing", "critical", "", "  - {do: x, cost: config}\n")
	e := evidence.New(evidence.Target{Model: "m"})
	e.Values.Stage.TTFT.Mean = 1
	d := Diagnosis{Schema: Schema, Targets: []TargetReport{Advise(e, []rules.Result{fired(q, 0.5)}, nil)}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"schema":"llmdoctor.diagnosis/v1"`, `"targets":[{"target":{"model":"m"}`,
		`"primary":{"bottleneck":"queueing","rule":"q/q"`, `"findings":[{"rule":"q/q","severity":"critical","bottleneck":"queueing"`,
		`"evidence":{"stage.ttft.mean":1}`, `"next":[{"do":"x","cost":"config"`, `"gaps":[]`, `"latency_map":{"ttft_mean":1}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s\n%s", want, b)
		}
	}
}

func TestSameBottleneckSpeaksOnce(t *testing.T) {
	a := rule(t, "queue/a", "queueing", "critical", "", "  - {do: raise max_num_seqs, cost: config}\n")
	b := rule(t, "queue/b", "queueing", "warning", "", "  - {do: raise max_num_seqs a bit, cost: config}\n")
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(a, 0.5), fired(b, 0.5)}, nil)
	if len(d.Next) != 1 || d.Next[0].Do != "raise max_num_seqs" {
		t.Fatalf("next %+v", d.Next)
	}
}

// Rules that explain each other must not leave the diagnosis without a cause.
func TestExplainCycleKeepsACause(t *testing.T) {
	a := rule(t, "team/a", "queueing", "critical", "prefill", "")
	b := rule(t, "team/b", "prefill", "critical", "queueing", "")
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(a, 0.6), fired(b, 0.4)}, nil)
	if d.Primary.Status != "found" || d.Primary.Rule != "team/a" {
		t.Fatalf("primary %+v, findings %+v", d.Primary, d.Findings)
	}
}

// Effects of an explained cause pass up to the root.
func TestExplainChainsToTheRoot(t *testing.T) {
	kv := rule(t, "kv/x", "kv-capacity", "critical", "prefill-interference", "")
	st := rule(t, "interference/x", "prefill-interference", "critical", "queueing", "")
	q := rule(t, "queue/x", "queueing", "critical", "", "")
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(st, 0.5), fired(kv, 0), fired(q, 0.9)}, nil)
	if d.Primary.Rule != "kv/x" {
		t.Fatalf("primary %+v", d.Primary)
	}
	for _, f := range d.Findings {
		if f.Rule == "queue/x" && f.ExplainedBy != "kv/x" {
			t.Fatalf("queue explained by %q, want the root kv/x", f.ExplainedBy)
		}
	}
}

// A symptom whose stage holds a sliver of the latency is capped: it cannot be
// critical or the verdict, whatever its rule's severity.
func TestImpactCapsSeverity(t *testing.T) {
	batch := rule(t, "queue/batch", "queueing", "critical", "", "")
	pre := rule(t, "prefill/x", "prefill", "warning", "", "")
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(batch, 0.02), fired(pre, 0.98)}, nil)
	if d.Primary.Rule != "prefill/x" || d.Findings[0].Rule != "prefill/x" {
		t.Fatalf("primary %+v findings %+v", d.Primary, d.Findings)
	}
	f := d.Findings[1]
	if f.Severity != "warning" || !strings.Contains(f.Capped, "lowered from critical") || !strings.Contains(f.Capped, "2%") {
		t.Fatalf("capped finding %+v", f)
	}
	// Alone, a capped finding leaves the target healthy, and says why.
	d = Advise(evidence.New(evidence.Target{}), []rules.Result{fired(batch, 0.02)}, &rules.Config{MinShare: 0.01})
	if d.Primary.Rule != "queue/batch" {
		t.Fatalf("with min_share 1%%, primary %+v", d.Primary)
	}
	d = Advise(evidence.New(evidence.Target{}), []rules.Result{fired(batch, 0.02)}, nil)
	if d.Primary.Status != "healthy" || !strings.Contains(d.Primary.Summary, "significant share") {
		t.Fatalf("primary %+v", d.Primary)
	}
}

// Among findings of one standing the larger share wins; an unknown share
// ranks after known ones and caps nothing.
func TestImpactOrdersAndUnknownComesLast(t *testing.T) {
	a := rule(t, "a/a", "queueing", "critical", "", "")
	b := rule(t, "b/b", "prefill", "critical", "", "")
	c := rule(t, "c/c", "decode", "critical", "", "")
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(a, math.NaN()), fired(b, 0.3), fired(c, 0.7)}, nil)
	got := []string{d.Findings[0].Rule, d.Findings[1].Rule, d.Findings[2].Rule}
	if strings.Join(got, " ") != "c/c b/b a/a" || d.Findings[2].Impact != nil || d.Findings[2].Severity != "critical" {
		t.Fatalf("order %v, last %+v", got, d.Findings[2])
	}
}

// A deciding rule that lacked inputs but was bounded leaves the verdict
// healthy, with the bound and the gap named; unbounded, it is inconclusive.
func TestBoundedRulesMakeHealthyWithGaps(t *testing.T) {
	q := rule(t, "q/q", "queueing", "critical", "", "")
	res := rules.Result{Rule: q, Outcome: rules.Quiet, Severity: rules.Critical, Notes: &rules.Notes{Bound: "queue wait is at most 15ms",
		Missing: []rules.Missing{{Path: "stage.queue", Why: "missing", How: "upgrade"}}}}
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{res}, nil)
	if d.Primary.Status != "healthy" || len(d.Primary.Bounded) != 1 || d.Primary.Bounded[0].Why != res.Bound() ||
		!strings.Contains(d.Primary.Summary, "q/q") {
		t.Fatalf("primary %+v", d.Primary)
	}
	if len(d.Gaps) != 1 || d.Gaps[0].Bounded != res.Bound() || d.Checks.Bounded != 1 || d.Checks.Quiet != 1 {
		t.Fatalf("gaps %+v checks %+v", d.Gaps, d.Checks)
	}
}

// TTFT that leaves out queue wait: the map adds the parts and says so, and
// never shows a negative front.
func TestLatencyMapFromPartsWhenTTFTExcludesQueue(t *testing.T) {
	e := evidence.New(evidence.Target{})
	e.Values.Stage.TTFT = evidence.Dist{Count: 100, Mean: 0.3}
	e.Values.Stage.Queue = evidence.Dist{Count: 100, Mean: 1.2}
	e.Values.Stage.Prefill = evidence.Dist{Count: 100, Mean: 0.25}
	evidence.Check(e)
	d := Advise(e, nil, nil)
	m := d.LatencyMap
	if !m.TTFTExcludesQueue || m.TTFT == nil || math.Abs(*m.TTFT-1.5) > 1e-9 || m.Front == nil || math.Abs(*m.Front-0.05) > 1e-9 {
		t.Fatalf("map %+v", m)
	}
	if len(d.Inconsistencies) != 1 || d.Inconsistencies[0].Check != "ttft-excludes-queue" {
		t.Fatalf("inconsistencies %+v", d.Inconsistencies)
	}
}

// A cause lowered to info (by config) cannot be the verdict, so it cannot
// hide the critical finding it would explain.
func TestInfoCauseExplainsNothing(t *testing.T) {
	kv := rule(t, "kv/a", "kv-capacity", "critical", "queueing", "")
	q := rule(t, "queue/a", "queueing", "critical", "", "")
	info := fired(kv, 0.9)
	info.Severity = rules.Info
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{info, fired(q, 0.9)}, nil)
	if d.Primary.Rule != "queue/a" || d.Primary.Status != "found" {
		t.Fatalf("primary %+v", d.Primary)
	}
}

// Charts and member tables draw only consistent evidence: a curve or a
// member number of a withheld node is left out of the report.
func TestWithheldEvidenceIsNotDrawn(t *testing.T) {
	e := evidence.New(evidence.Target{Model: "m"})
	e.Curves["ttft_p99_steps"] = [][2]float64{{15, 1}, {30, 2}}
	e.Curves["waiting"] = [][2]float64{{0, 3}, {15, 4}}
	e.AddInconsistency(evidence.Inconsistency{Check: "ttft-excludes-queue", Fields: []string{"stage.ttft"}, Note: "x"})
	ok := evidence.New(evidence.Target{Model: "m", Instance: "a"})
	bad := evidence.New(evidence.Target{Model: "m", Instance: "b"})
	ok.Values.Stage.TTFT.P99, bad.Values.Stage.TTFT.P99 = 1, 50
	bad.AddInconsistency(evidence.Inconsistency{Check: "mean-outside-buckets", Fields: []string{"stage.ttft"}, Note: "y"})
	e.Members = []*evidence.Evidence{ok, bad}
	tr := Advise(e, nil, nil)
	if _, drawn := tr.Curves["ttft_p99_steps"]; drawn || len(tr.Curves["waiting"]) != 2 {
		t.Errorf("curves %v", tr.Curves)
	}
	if _, shown := tr.Members[1].Evidence["stage.ttft.p99"]; shown || tr.Members[0].Evidence["stage.ttft.p99"] != 1 {
		t.Errorf("members %+v", tr.Members)
	}
}

// Two findings whose steps turn one knob opposite ways: the verdict's step
// stays, the other is left out and said to be.
func TestClashingStepsKeepTheVerdicts(t *testing.T) {
	q := rule(t, "queue/a", "queueing", "critical", "", "  - do: raise {max_num_seqs}\n    cost: config\n    turns: {max_num_seqs: raise}\n")
	kv := rule(t, "kv/b", "kv-capacity", "warning", "", "  - do: lower {max_num_seqs} so the batch fits the cache\n    cost: config\n    turns: {max_num_seqs: lower}\n"+
		"  - {do: add GPUs, cost: hardware}\n")
	e := evidence.New(evidence.Target{})
	for _, results := range [][]rules.Result{{fired(q, 0.6), fired(kv, 0.3)}, {fired(kv, 0.3), fired(q, 0.6)}} {
		d := Advise(e, results, nil)
		if d.Primary.Rule != "queue/a" {
			t.Fatalf("primary %+v", d.Primary)
		}
		var did []string
		for _, s := range d.Next {
			did = append(did, s.Do)
		}
		if strings.Join(did, " | ") != "raise vLLM max-num-seqs / SGLang max-running-requests | add GPUs" {
			t.Errorf("next %q", did)
		}
		if len(d.NextLeftOut) != 1 || d.NextLeftOut[0].For[0] != "kv/b" || !strings.HasPrefix(d.NextLeftOut[0].Do, "lower") ||
			d.NextLeftOut[0].Why != "the verdict's step (queue/a) raises vLLM max-num-seqs / SGLang max-running-requests" {
			t.Errorf("left out %+v", d.NextLeftOut)
		}
	}
}

// A step that turns on what the evidence shows on is what to check
// instead; a step for MoE models is left out for a dense one.
func TestStepsFitTheEvidence(t *testing.T) {
	p := rule(t, "prefill/a", "prefill", "critical", "",
		"  - do: turn on prefix caching ({enable_prefix_caching})\n    cost: config\n    whatif: prefix_caching\n    turns: {enable_prefix_caching: enable}\n    if_already: check the hit rate\n"+
			"  - {do: 'for MoE models, expert parallelism', cost: architecture, only_if: cond.moe == 1}\n")
	e := evidence.New(evidence.Target{Model: "meta-llama/Llama-3.1-8B-Instruct"})
	e.Values.Cond.PrefixCaching, e.Values.Cond.MoE = 1, 0
	d := Advise(e, []rules.Result{fired(p, 0.8)}, nil)
	if len(d.Next) != 1 || strings.Contains(d.Next[0].Do, "turn on prefix caching") ||
		d.Next[0].Do != "prefix caching is already on (cond.prefix_caching = 1): check the hit rate" ||
		d.Next[0].Whatif != "" || d.Next[0].Turns != nil || d.Next[0].Already["enable_prefix_caching"] != "cond.prefix_caching = 1" {
		t.Fatalf("next %+v", d.Next)
	}
	// Unknown: both steps, as worded.
	d = Advise(evidence.New(evidence.Target{}), []rules.Result{fired(p, 0.8)}, nil)
	if len(d.Next) != 2 || !strings.HasPrefix(d.Next[0].Do, "turn on prefix caching") || d.Next[1].Do != "for MoE models, expert parallelism" {
		t.Fatalf("next %+v", d.Next)
	}
}

// One change from two findings, in other words, is one step for both.
func TestSameChangeFromTwoFindingsIsOneStep(t *testing.T) {
	dec := rule(t, "decode/a", "decode", "critical", "", "  - do: use {kv_cache_fp8} to halve the KV bytes per token\n    cost: config\n    turns: {kv_cache_fp8: enable}\n")
	kv := rule(t, "kv/a", "kv-capacity", "warning", "", "  - do: use {kv_cache_fp8} to double the tokens the cache holds\n    cost: config\n    whatif: fp8_kv\n    turns: {kv_cache_fp8: enable}\n")
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(kv, 0.3), fired(dec, 0.6)}, nil)
	if len(d.Next) != 1 || !strings.Contains(d.Next[0].Do, "halve the KV bytes") || strings.Join(d.Next[0].For, ",") != "decode/a,kv/a" ||
		d.Next[0].Whatif != "fp8_kv" || d.Next[0].Turns["kv_cache_fp8"] != "enable" || len(d.NextLeftOut) != 0 {
		t.Fatalf("next %+v", d.Next)
	}
	b, _ := json.Marshal(d.Next[0])
	if !strings.Contains(string(b), `"turns":{"kv_cache_fp8":"enable"}`) {
		t.Errorf("JSON %s", b)
	}
}

// With the built-in rules: a full-at-peak cache that preempts, and GPU
// memory bandwidth at its limit, give "lower max_num_seqs" (the KV verdict)
// and "raise max_num_seqs" (bandwidth); only the verdict's is a next step.
func TestBuiltinClashKeepsTheVerdictsStep(t *testing.T) {
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, err := rules.FixtureEvidence(map[string]any{
		"resource.kv_usage":           map[string]any{"max": 0.99, "mean": 0.8},
		"service.preemptions":         420,
		"service.finished":            6000,
		"resource.dram_active":        map[string]any{"mean": 0.74},
		"resource.tensor_active":      map[string]any{"mean": 0.05},
		"stage.itl":                   map[string]any{"count": 900, "p50": 0.068},
		"resource.gpus":               1,
		"resource.achieved_bandwidth": 1.28e12,
		"resource.peak_bandwidth":     1.728e12,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.Engine = &evidence.Engine{Name: "vllm", Title: "vLLM", Knobs: map[string]string{"max_num_seqs": "--max-num-seqs",
		"max_num_batched_tokens": "--max-num-batched-tokens", "kv_cache_fp8": "--kv-cache-dtype fp8"}}
	d := Advise(e, set.Evaluate(e, nil), nil)
	if d.Primary.Rule != "kv/preemption" {
		t.Fatalf("primary %+v", d.Primary)
	}
	raise, lower := 0, 0
	for _, s := range d.Next {
		raise += strings.Count(s.Do, "raising --max-num-seqs") + strings.Count(s.Do, "raise --max-num-seqs")
		lower += strings.Count(s.Do, "lower --max-num-seqs")
	}
	if raise != 0 || lower != 1 {
		t.Errorf("raise %d, lower %d: %+v", raise, lower, d.Next)
	}
	if len(d.NextLeftOut) != 1 || d.NextLeftOut[0].For[0] != "gpu/bandwidth-bound" ||
		d.NextLeftOut[0].Why != "the verdict's step (kv/preemption) lowers --max-num-seqs" {
		t.Errorf("left out %+v", d.NextLeftOut)
	}
	// The fp8 step both findings give is one step for both.
	for _, s := range d.Next {
		if s.Turns["kv_cache_fp8"] == "enable" && strings.Join(s.For, ",") != "kv/preemption,gpu/bandwidth-bound" {
			t.Errorf("fp8 step for %v", s.For)
		}
	}
}

// A cause that takes the share of a finding it explains on another stage
// names that stage: "93% of mean end-to-end (decode)", never "93% of mean
// TTFT (queue)" beside a map that gives the queue 16%.
func TestInheritedImpactNamesItsStage(t *testing.T) {
	kv := rule(t, "kv/a", "kv-capacity", "critical", "decode", "")
	dec, err := rules.Parse("decode/a.yaml", []byte("id: decode/a\ntitle: t\nlayer: stage\nbottleneck: decode\nseverity: critical\nstage: decode\nwhen: stage.ttft.mean > 0\nsays: m\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(kv, 0.16), fired(dec, 0.93)}, nil)
	f := d.Findings[0]
	if f.Rule != "kv/a" || f.Impact == nil || *f.Impact != 0.93 || f.Stage != "decode" {
		t.Fatalf("cause %+v", f)
	}
}

// Something standing against healthy (a target missed) makes a target with
// no finding naming a cause inconclusive, saying what; a verdict that names
// a bottleneck is kept.
func TestDeniedHealthyIsInconclusive(t *testing.T) {
	miss, err := rules.Parse("target/x.yaml", []byte("id: target/x\ntitle: t\nlayer: stage\nbottleneck: none\nseverity: info\ndenies_healthy: true\nwhen: stage.ttft.mean > 0\nsays: TTFT p99 is over its target.\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := Advise(evidence.New(evidence.Target{}), []rules.Result{fired(miss, math.NaN())}, nil)
	if d.Primary.Status != "inconclusive" || !strings.Contains(d.Primary.Summary, "no finding that names a cause can be the verdict: m") || len(d.Primary.Against) != 1 {
		t.Fatalf("primary %+v", d.Primary)
	}
	q := rule(t, "queue/a", "queueing", "critical", "", "")
	d = Advise(evidence.New(evidence.Target{}), []rules.Result{fired(q, 0.9), fired(miss, math.NaN())}, nil)
	if d.Primary.Status != "found" || d.Primary.Bottleneck != "queueing" || len(d.Primary.Against) != 0 {
		t.Fatalf("primary %+v", d.Primary)
	}
}
