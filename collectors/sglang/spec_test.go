package sglang

import (
	"math"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// SGLang observes inter-token gaps once per token: with speculative
// decoding one frozen step of several tokens is that many gaps of its
// share. The stall count is estimated at the mean tokens a step (the 40
// frozen steps, not their 160 tokens), the frozen time kept as read.
func TestSpeculativeDecodingEstimatesStallCount(t *testing.T) {
	build := func(accept float64) (stalls, secs float64, withheld bool) {
		w := window.New()
		w.Start, w.End, w.Points = time.Unix(0, 0), time.Unix(300, 0), 2
		l := window.Labels{"model_name": "m", "engine_type": "unified"}
		// 40 steps frozen 2.8 s, 4 tokens each: 160 observations of 0.7 s.
		w.Histograms["sglang:inter_token_latency_seconds"] = []window.Histogram{{Labels: l,
			Buckets: []window.Bucket{{UpperBound: 0.04, Count: 10000}, {UpperBound: 0.6, Count: 10000}, {UpperBound: 0.8, Count: 10160}, {UpperBound: math.Inf(1), Count: 10160}},
			Sum:     10000*0.03 + 160*0.7, Count: 10160}}
		sl := window.Labels{"model_name": "m", "engine_type": "unified", "tp_rank": "0"}
		w.Gauges["sglang:spec_accept_length"] = []window.Gauge{{Labels: sl, Points: []float64{accept, accept}}}
		e := engine.Build(w, engine.Options{})[0]
		return e.Values.Stage.ITLStalls, e.Values.Stage.ITLStallSeconds, e.Inconsistent("stage.itl_stalls") != ""
	}
	if n, s, held := build(4); held || math.Abs(n-40) > 0.5 || math.Abs(s-112) > 1 {
		t.Errorf("spec decoding: stalls %v withheld %v, frozen %v s (want 40 estimated, 112 s)", n, held, s)
	}
	if n, _, held := build(0); held || n != 160 {
		t.Errorf("no spec decoding: stalls %v withheld %v (want 160 counted)", n, held)
	}
}
