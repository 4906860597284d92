package diagnosis

import (
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
)

// Withheld evidence that points at a cause keeps a target from healthy: a
// prefill histogram counting half the requests is withheld, so the prefill
// lead cannot run and nothing else fires, yet read as given it shows a slow
// prefill. The verdict is inconclusive, saying so, not healthy.
func TestWithheldEvidenceKeepsFromHealthy(t *testing.T) {
	r, err := rules.Parse("prefill/slow.yaml", []byte("id: prefill/slow\ntitle: t\nlayer: stage\nbottleneck: prefill\nstage: prefill\n"+
		"severity: warning\nwhen: stage.prefill.mean > 1\nsays: prefill is {{dur .stage.prefill.mean}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.NewSet([]*rules.Rule{r})
	if err != nil {
		t.Fatal(err)
	}
	e := evidence.New(evidence.Target{Model: "m"})
	d := func(count, mean float64) evidence.Dist { return evidence.Dist{Count: count, Mean: mean} }
	v := &e.Values
	v.Stage.TTFT, v.Stage.Queue, v.Stage.Decode, v.Service.E2E = d(1000, 3), d(1000, 0.1), d(1000, 5), d(1000, 8)
	v.Cond.PromptTokens = d(1000, 900)
	v.Stage.Prefill = d(480, 2.8) // half the window: withheld
	given := evidence.CheckKeepingGiven(e)
	rs := set.Evaluate(e, nil)
	tg := advisor.Advise(e, rs, nil)
	if tg.Primary.Status != "healthy" {
		t.Fatalf("as checked, before the given evidence is read: %+v", tg.Primary)
	}
	advisor.DenyHealthy(&tg, withheldPoints(set, given(), rs, nil)...)
	if tg.Primary.Status != "inconclusive" || !strings.Contains(tg.Primary.Summary, "withheld evidence points at prefill") {
		t.Fatalf("primary %+v", tg.Primary)
	}
	// The checked evidence is as it was: the prefill still withheld.
	if e.Inconsistent("stage.prefill") == "" {
		t.Error("reading the evidence as given changed the checked evidence")
	}
}
