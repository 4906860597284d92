package sim

import (
	"fmt"
	"math"
	"testing"
)

func specScenario(t *testing.T, rate float64, spec string) *Scenario {
	t.Helper()
	sc, err := ParseScenario("spec", []byte(fmt.Sprintf(`name: spec
model: llama-70b
gpu: L4
tp: 8
seed: 4
warmup: 2m
duration: 5m
engine: {max_num_seqs: 64, max_num_batched_tokens: 4096, chunked_prefill: true%s}
workload:
  rate: %g
  prompt: {dist: lognormal, mean: 500, sigma: 0.5, max: 4000}
  output: {dist: lognormal, mean: 90, sigma: 0.4, max: 400}
`, spec, rate)))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Speculative decoding as the engines count it: each verify pass keeps the
// accepted run of drafts and one token more, so the tokens kept per pass
// average 1 + a + a² + … + a^k; vLLM's counters and SGLang's gauges say
// so. The ground truth prices each step without it: at a light load, where
// a step reads weights, speculation pays; with forty requests verifying
// five drafts each (the built-in scenario) it costs more than it saves.
func TestSpeculativeDecoding(t *testing.T) {
	const k, a = 5, 0.5
	want := 0.0
	for i := 0; i <= k; i++ {
		want += math.Pow(a, float64(i))
	}
	sc := specScenario(t, 0.2, ", speculative: {tokens: 5, acceptance: 0.5, draft_cost: 0.02}")
	e, err := New(sc, false)
	if err != nil {
		t.Fatal(err)
	}
	e.AdvanceTo(600)
	m := e.m
	if got := 1 + m.specAccepted/m.specDrafts; math.Abs(got-want) > 0.05*want || m.specDraftTokens != k*m.specDrafts {
		t.Errorf("tokens kept per pass %.3f (want %.3f), %v drafted in %v passes", got, want, m.specDraftTokens, m.specDrafts)
	}
	if math.Abs(m.specLength-want) > 0.15*want || math.Abs(m.specRate-(want-1)/k) > 0.15 {
		t.Errorf("SGLang's gauges: length %.3f, rate %.3f; want about %.3f and %.3f", m.specLength, m.specRate, want, (want-1)/k)
	}
	light, err := WindowTruth(specScenario(t, 0.2, ", speculative: {tokens: 5, acceptance: 0.5, draft_cost: 0.02}"), 10)
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := Load("speculation-not-paying")
	if err != nil {
		t.Fatal(err)
	}
	heavy, err := WindowTruth(builtin, 30)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := WindowTruth(specScenario(t, 2, ""), 10)
	if err != nil {
		t.Fatal(err)
	}
	if !(light.SpecGain > 1.2) || !(heavy.SpecGain < 0.9) || plain.SpecGain != 0 {
		t.Errorf("gains: light load %.2f (want over 1.2), forty requests at 20%% %.2f (want under 0.9), none %v (want 0)",
			light.SpecGain, heavy.SpecGain, plain.SpecGain)
	}
	if l := heavy.Label(); l.Cause != "speculation" {
		t.Errorf("speculation at a loss with slow tokens: ground truth %s (%s)", l.Cause, l.Why)
	}
}
