package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
)

func withEffect() *advisor.Diagnosis {
	d := sample()
	d.Targets[0].Next = append(d.Targets[0].Next, advisor.Step{Do: "add a replica", Cost: "hardware"})
	d.Targets[0].Next[0].Whatif = "more_seqs"
	d.Targets[0].Next[0].Effect = &advisor.Effect{Change: "max_num_seqs 32 → 128", ReplayError: 0.08,
		Figures: []advisor.EffectFigure{{Name: "ttft_p50", Observed: 19, Predicted: 0.036}, {Name: "ttft_p99", Observed: 29.8, Predicted: 1.2},
			{Name: "itl_p50", Observed: 0.005, Predicted: 0.006}, {Name: "e2e_p99", Observed: 30, Predicted: 9.8}}}
	return d
}

// The predicted effect is one line under its step, in every format; a step
// without one has none.
func TestEffectBesideItsStep(t *testing.T) {
	want := "whatif max_num_seqs 32 → 128: TTFT p50 19.00s → ~36ms, TTFT p99 29.80s → ~1.20s, E2E p99 30.00s → ~9.80s (replay error 8%)"
	if got := EffectText(withEffect().Targets[0].Next[0].Effect); got != want {
		t.Errorf("EffectText:\n got %s\nwant %s", got, want)
	}
	same := &advisor.Effect{Change: "KV cache fp8", ReplayError: 0.2, Figures: []advisor.EffectFigure{
		{Name: "itl_p99", Observed: 0.052, Predicted: 0.052, Unchanged: true}, {Name: "e2e_p99", Observed: 30, Predicted: 20}}}
	if got, want := EffectText(same), "whatif KV cache fp8: ITL p99 unchanged (52ms), E2E p99 30.00s → ~20.00s (replay error 20%)"; got != want {
		t.Errorf("EffectText:\n got %s\nwant %s", got, want)
	}
	for _, name := range []string{"text", "html", "slack", "json"} {
		r, _ := Lookup(name)
		var b bytes.Buffer
		if err := r.Diagnosis(&b, withEffect(), Options{Color: "never", Width: 200, Details: true}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		switch name {
		case "json":
			var d advisor.Diagnosis
			if err := json.Unmarshal(b.Bytes(), &d); err != nil || d.Targets[0].Next[0].Effect == nil ||
				d.Targets[0].Next[0].Effect.Figures[1].Predicted != 1.2 || d.Targets[0].Next[1].Effect != nil {
				t.Errorf("json: %v %+v", err, d.Targets[0].Next)
			}
			continue
		case "slack", "html":
			out = strings.NewReplacer("&gt;", ">", "\\u003e", ">", "&amp;", "&").Replace(out)
		}
		if strings.Count(out, "whatif max_num_seqs 32 → 128: TTFT p50") != 1 {
			t.Errorf("%s: the effect is not there once:\n%s", name, out)
		}
		step, replica := strings.Index(out, "raise --max-num-seqs"), strings.Index(out, "add a replica")
		if e := strings.Index(out, "whatif max_num_seqs"); !(step < e && e < replica) {
			t.Errorf("%s: the effect is not between its step and the next", name)
		}
	}
}
