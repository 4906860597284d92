package accuracy

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/rules"
)

var scenariosPage = filepath.Join("..", "..", "docs", "scenarios.md")

// vllmRun is the built-in scenarios diagnosed on vLLM's names, run once for
// the tests that read them.
var vllmRun struct {
	once sync.Once
	rs   []ScenarioResult
	err  error
}

func vllmScenarios(t *testing.T) []ScenarioResult {
	t.Helper()
	vllmRun.once.Do(func() {
		set, err := rules.Load()
		if err != nil {
			vllmRun.err = err
			return
		}
		vllmRun.rs, vllmRun.err = RunScenarios(set, &rules.Config{}, "vllm")
	})
	if vllmRun.err != nil {
		t.Fatal(vllmRun.err)
	}
	return vllmRun.rs
}

// Every scenario, diagnosed end to end, gets its expected verdict; the
// healthy one has no critical finding; from its logs alone it gets that
// verdict or one it cannot see; docs/scenarios.md is current (-update
// rewrites it).
func TestScenarioSuite(t *testing.T) {
	t.Parallel()
	set, cfg := builtinRules(t)
	rs := vllmScenarios(t)
	if len(rs) != 14 {
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
			if !slices.Contains(r.Scenario.Gaps, g.Rule) && !v0Only(g.Missing) {
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
			case p.Status == "" && p.Bottleneck == "":
				// Not served under this engine's names.
			case p.Status == "inconclusive", p.Bottleneck == want:
			case p.Status == "tentative" && p.Bottleneck == "none" && slices.Contains(unseen, want):
			// A log never says which adapter a request wants: it shows the
			// queue, and says it could not check the adapter slots.
			case want == "lora" && p.Bottleneck == "queueing" && slices.Contains(p.Unchecked, "lora/slots-full"):
			default:
				t.Errorf("%s: its log gives %s %s, its metrics %s", l.Scenario, p.Status, p.Bottleneck, want)
			}
		}
	}
	fresh(t, scenariosPage, ScenarioTable(rs)+LogTable(rs, logs))
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
// only where SGLang has no such metric, and say so in SGLang's terms. The
// quick tier serves three scenarios so, the heavy tier all.
func TestScenarioSuiteOnSGLangNames(t *testing.T) {
	t.Parallel()
	set, cfg := builtinRules(t)
	vl := map[string]ScenarioResult{}
	for _, r := range vllmScenarios(t) {
		vl[r.Scenario.Name] = r
	}
	var names []string
	if !testkit.Heavy() {
		names = []string{"queue-bound", "kv-capacity", "decode-bound"}
	}
	sg, err := RunScenarios(set, cfg, "sglang", names...)
	if err != nil {
		t.Fatal(err)
	}
	if len(sg) == 0 || len(names) > 0 && len(sg) != len(names) {
		t.Fatalf("%d scenarios served with SGLang's names, want %v", len(sg), names)
	}
	for _, r := range sg {
		name := r.Scenario.Name
		// A split deployment is its two sides, as on vLLM's names.
		if want := len(vl[name].Diagnosis.Targets); len(r.Diagnosis.Targets) != want {
			t.Fatalf("%s: %d targets on SGLang names, %d on vLLM's", name, len(r.Diagnosis.Targets), want)
		}
		tg := r.Diagnosis.Targets[0]
		if tg.Target.ServedBy != "sglang" {
			t.Errorf("%s: served by %q", name, tg.Target.ServedBy)
		}
		a, b := vl[name].Primary(), r.Primary()
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
			if !lacks && !slices.Contains(r.Scenario.Gaps, g.Rule) && !v0Only(g.Missing) {
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
