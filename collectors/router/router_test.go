package router

import (
	"math"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// The router's evidence: that one picks the replicas, how long it takes
// (from its histogram), and the busiest endpoint's share of the queue at
// the readings where any waited, under the newer and the older names.
func TestAttach(t *testing.T) {
	for _, names := range [][2]string{{PerEndpointQueue[0], Decision[0]}, {PerEndpointQueue[1], Decision[1]}} {
		w := window.New()
		w.Gauges[names[0]] = []window.Gauge{
			{Labels: window.Labels{"model_server_pod": "a-rank-0"}, Points: []float64{0, 6, 3, math.NaN()}},
			{Labels: window.Labels{"model_server_pod": "b-rank-0"}, Points: []float64{0, 2, 1, 0}},
		}
		w.Histograms[names[1]] = []window.Histogram{{Count: 100, Sum: 0.2,
			Buckets: []window.Bucket{{UpperBound: 0.001, Count: 40}, {UpperBound: 0.002, Count: 80}, {UpperBound: 0.005, Count: 100}, {UpperBound: math.Inf(1), Count: 100}}}}
		a, b := evidence.New(evidence.Target{Model: "m1"}), evidence.New(evidence.Target{Model: "m2"})
		notes := Attach(w, []*evidence.Evidence{a, b})
		for _, e := range []*evidence.Evidence{a, b} {
			v := e.Values
			if v.Cond.Router != 1 || math.Abs(v.Service.RouterDecision.Mean-0.002) > 1e-12 || v.Service.RouterDecision.Count != 100 {
				t.Errorf("%s: router %v, decision %+v", names[0], v.Cond.Router, v.Service.RouterDecision)
			}
			// Readings 2 and 3 had a queue: 6 of 8, 3 of 4.
			if want := (0.75 + 0.75) / 2; math.Abs(v.Service.RouterQueueTopShare-want) > 1e-12 {
				t.Errorf("%s: top share %v, want %v", names[0], v.Service.RouterQueueTopShare, want)
			}
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "each of the 2 targets") {
			t.Errorf("notes %q", notes)
		}
	}
	// Without a router's series, nothing is said.
	e := evidence.New(evidence.Target{Model: "m"})
	if n := Attach(window.New(), []*evidence.Evidence{e}); n != nil || evidence.Present(e.Values.Cond.Router) {
		t.Errorf("no router: notes %q, router %v", n, e.Values.Cond.Router)
	}
}
