package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
)

// A step left out for clashing with one kept is said once, after the
// steps, in every format a person reads, on the first screen too.
func TestLeftOutStepIsSaid(t *testing.T) {
	d := sample()
	d.Targets[0].NextLeftOut = []advisor.LeftOut{{Do: "lower --max-num-seqs so the batch fits the cache", Cost: "config", For: []string{"kv/preemption"},
		Turns: map[string]string{"max_num_seqs": "lower"}, Why: "the verdict's step (queue/x) raises --max-num-seqs"}}
	want := "left out: lower --max-num-seqs so the batch fits the cache (for kv/preemption): the verdict's step (queue/x) raises --max-num-seqs"
	for _, c := range []struct {
		name    string
		details bool
	}{{"text", false}, {"text", true}, {"html", true}, {"slack", true}} {
		r, _ := Lookup(c.name)
		var b bytes.Buffer
		if err := r.Diagnosis(&b, d, Options{Color: "never", Width: 400, Details: c.details}); err != nil {
			t.Fatal(err)
		}
		out := strings.NewReplacer("&#39;", "'", "&gt;", ">", "\\u003e", ">", "&amp;", "&").Replace(b.String())
		if strings.Count(out, want) != 1 {
			t.Errorf("%s (details %v): the left-out step is not said once:\n%s", c.name, c.details, out)
		}
		if step, left := strings.Index(out, "raise --max-num-seqs"), strings.Index(out, want); c.name != "slack" && step > left {
			t.Errorf("%s: the left-out line comes before the steps", c.name)
		}
	}
}
