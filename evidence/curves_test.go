package evidence

import (
	"math"
	"testing"
)

func TestCurvesDocumentedPaths(t *testing.T) {
	for k, c := range Curves {
		if c.X == "" || c.Y == "" || len(c.Paths) == 0 {
			t.Errorf("curve %s is not documented", k)
		}
		for _, p := range c.Paths {
			if _, ok := Lookup(p); !ok {
				if _, ok := docs[p]; !ok {
					t.Errorf("curve %s draws %s, which is no evidence node", k, p)
				}
			}
		}
	}
}

func TestTrustedCurvesDropWithheld(t *testing.T) {
	e := New(Target{Model: "m"})
	e.Curves["ttft_p99_steps"] = [][2]float64{{15, 1}, {30, 2}}
	e.Curves["waiting"] = [][2]float64{{0, 1}, {15, 2}}
	e.Curves["running"] = nil
	e.Curves["kv_usage"] = [][2]float64{{0, math.NaN()}, {math.Inf(1), 1}}
	if got := e.TrustedCurves(); len(got) != 2 {
		t.Fatalf("consistent evidence: %v", got)
	}
	e.AddInconsistency(Inconsistency{Check: "ttft-excludes-queue", Fields: []string{"stage.ttft"}, Note: "x"})
	got := e.TrustedCurves()
	if _, ok := got["ttft_p99_steps"]; ok || len(got) != 1 {
		t.Errorf("a curve of withheld TTFT is drawn: %v", got)
	}
}
