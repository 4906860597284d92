package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/sim"
)

// Every scenario, diagnosed end to end over HTTP, gets its expected verdict;
// the healthy one has no critical finding; docs/scenarios.md is current.
func TestScenarioSuite(t *testing.T) {
	t.Parallel()
	set, cfg, err := loadRules("-", nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := RunScenarios(set, cfg, "vllm")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 10 {
		t.Fatalf("%d scenarios", len(rs))
	}
	for _, r := range rs {
		p := r.Primary()
		if !r.OK() {
			t.Errorf("%s: verdict %s (%s), want %s %v", r.Scenario.Name, p.Bottleneck, p.Rule, r.Scenario.Expect, r.Scenario.Also)
		}
		tg := r.Diagnosis.Targets[0]
		if r.Scenario.Expect == "none" {
			if p.Status != "healthy" {
				t.Errorf("healthy scenario: status %s", p.Status)
			}
			for _, f := range tg.Findings {
				if f.Severity == "critical" {
					t.Errorf("healthy scenario has critical %s", f.Rule)
				}
			}
		}
		for _, g := range tg.Gaps {
			if !contains(r.Scenario.Gaps, g.Rule) && !v0Only(g.Missing) {
				t.Errorf("%s: the simulator exports everything, yet %s lacked %v", r.Scenario.Name, g.Rule, g.Missing)
			}
		}
	}
	logs, err := RunScenarioLogs(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// From its log alone, a scenario gets its metrics' verdict (or a
	// tentative one of it), or none it cannot see: inconclusive, or a
	// tentative healthy where what decides lies outside what a log holds
	// (time before the engine, the TTFT split, stalls, GPU counters).
	unseen := []string{"cpu-overhead", "memory-bandwidth", "prefill-interference", "prefill"}
	for i, l := range logs {
		want := rs[i].Primary().Bottleneck
		for _, p := range []advisor.Primary{l.VLLM, l.SGLang} {
			switch {
			case l.VLLMErr != "" || l.SGErr != "":
				t.Errorf("%s: its log was refused: %s%s", l.Scenario, l.VLLMErr, l.SGErr)
			case p.Status == "inconclusive", p.Bottleneck == want:
			case p.Status == "tentative" && p.Bottleneck == "none" && contains(unseen, want):
			default:
				t.Errorf("%s: its log gives %s %s, its metrics %s", l.Scenario, p.Status, p.Bottleneck, want)
			}
		}
	}
	want := ScenarioTable(rs) + LogTable(rs, logs)
	got, _ := os.ReadFile(filepath.Join("..", "..", "docs", "scenarios.md"))
	if string(got) != want {
		t.Error("docs/scenarios.md is stale: run go run ./cmd/llmdoctor demo --table docs/scenarios.md")
	}
}

// v0Only reports whether every field a gap names is one only vLLM's V0
// engine exported (its swap space): the simulator is a V1-style engine.
func v0Only(missing []string) bool {
	for _, m := range missing {
		if m != "service.swapped" && !strings.HasPrefix(m, "service.swapped.") &&
			m != "resource.cpu_kv_usage" && !strings.HasPrefix(m, "resource.cpu_kv_usage.") {
			return false
		}
	}
	return len(missing) > 0
}

// sglangLacks are the evidence fields SGLang exports no metric for; a rule
// that needs one may be a gap on SGLang names where it ran on vLLM's.
var sglangLacks = []string{"stage.tpot", "cond.max_tokens", "service.length_share", "service.errors",
	"cond.prefix_caching", "cond.gpu_memory_utilization", "cond.gpu_blocks", "service.iteration_tokens", "stage.inference",
	// Without a decode-time histogram the budget adds up by construction.
	"stage.budget.unexplained", "stage.budget.unexplained_share"}

// The scenario suite served with SGLang's names gives the verdicts it gives
// with vLLM's: the rules are engine-neutral and the seam maps both. Gaps are
// only where SGLang has no such metric, and say so in SGLang's terms.
func TestScenarioSuiteOnSGLangNames(t *testing.T) {
	t.Parallel()
	set, cfg, err := loadRules("-", nil)
	if err != nil {
		t.Fatal(err)
	}
	vl, err := RunScenarios(set, cfg, "vllm")
	if err != nil {
		t.Fatal(err)
	}
	sg, err := RunScenarios(set, cfg, "sglang")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range sg {
		name := r.Scenario.Name
		if len(r.Diagnosis.Targets) != 1 {
			t.Fatalf("%s: %d targets on SGLang names", name, len(r.Diagnosis.Targets))
		}
		tg := r.Diagnosis.Targets[0]
		if tg.Target.ServedBy != "sglang" {
			t.Errorf("%s: served by %q", name, tg.Target.ServedBy)
		}
		a, b := vl[i].Primary(), r.Primary()
		if a.Bottleneck != b.Bottleneck || a.Status != b.Status || a.Rule != b.Rule {
			t.Errorf("%s: SGLang names give %s/%s (%s), vLLM names %s/%s (%s)", name, b.Bottleneck, b.Status, b.Rule, a.Bottleneck, a.Status, a.Rule)
		}
		for _, g := range tg.Gaps {
			lacks := false
			for _, m := range g.Missing {
				for _, x := range sglangLacks {
					lacks = lacks || m == x || strings.HasPrefix(m, x+".")
				}
			}
			if !lacks && !contains(r.Scenario.Gaps, g.Rule) && !v0Only(g.Missing) {
				t.Errorf("%s: %s lacked %v on SGLang names, which SGLang exports", name, g.Rule, g.Missing)
			}
			if strings.Contains(g.How, "vLLM") || strings.Contains(g.How, "vllm:") {
				t.Errorf("%s: the gap of %s tells an SGLang user %q", name, g.Rule, g.How)
			}
		}
		for _, f := range tg.Findings {
			for _, st := range f.Next {
				if strings.Contains(st.Do, "--max-num-seqs") || strings.Contains(st.Do, "--gpu-memory-utilization") {
					t.Errorf("%s: %s names a vLLM flag to an SGLang user: %q", name, f.Rule, st.Do)
				}
			}
		}
	}
}

// The demo end to end: simulator warm-up, 31 scrapes over HTTP, diagnosis.
func BenchmarkDemo(b *testing.B) {
	set, cfg, err := loadRules("-", nil)
	if err != nil {
		b.Fatal(err)
	}
	sc, _ := sim.Load("queue-bound")
	for i := 0; i < b.N; i++ {
		if _, err := runDemo(context.Background(), sc, set, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
