package rules

import (
	"sort"
	"strings"
	"testing"
)

func citedPaths(m map[string]float64) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// A result cites every value its message quotes: a fired one what the
// condition and says read, a quiet one what the condition and ok read
// (absent values are left out, never cited as NaN).
func TestResultCitesItsMessage(t *testing.T) {
	r, err := Parse("t.yaml", []byte(`id: test/cites
title: t
layer: cond
bottleneck: measurement
severity: warning
when: cond.prompt_len_cv < 0.05
says: "{{num .cond.prompt_len_distinct}} lengths"
ok: "slope {{dur .cond.prompt_ttft_slope}}, R² {{num .cond.prompt_ttft_r2}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet([]*Rule{r})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cv      float64
		outcome Outcome
		want    string
	}{
		{0.01, Fired, "cond.prompt_len_cv cond.prompt_len_distinct"},
		{0.5, Quiet, "cond.prompt_len_cv cond.prompt_len_distinct cond.prompt_ttft_slope"},
	} {
		e, err := FixtureEvidence(map[string]any{"cond.prompt_len_cv": c.cv, "cond.prompt_len_distinct": 3,
			"cond.prompt_ttft_slope": 0.06})
		if err != nil {
			t.Fatal(err)
		}
		res := set.Evaluate(e, nil)[0]
		if res.Outcome != c.outcome || citedPaths(res.Evidence) != c.want {
			t.Errorf("cv %v: %s citing %q, want %s citing %q", c.cv, res.Outcome, citedPaths(res.Evidence), c.outcome, c.want)
		}
	}
	// A passing message renders from evidence and params alone.
	if _, err := Parse("t.yaml", []byte(`id: test/ok-text
title: t
layer: cond
bottleneck: measurement
severity: warning
when: cond.prompt_len_cv < 0.05
says: "x"
ok: "{{index .text \"service.ttft_p99_outlier\"}}"
`)); err == nil || !strings.Contains(err.Error(), "ok:") {
		t.Errorf("an ok message reading .text loaded: %v", err)
	}
}
