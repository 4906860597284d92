package vllm

import (
	"math"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// vLLM's spec decode counters give the share of drafts accepted, the
// tokens kept per verify pass and the drafts per pass; its inter-token
// histogram, observed once per step, is read per token by dividing its
// gaps by the tokens kept.
func TestSpeculativeDecodingCounters(t *testing.T) {
	w := win()
	l := window.Labels{"model_name": "m", "engine": "0"}
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{gauge(20, l)}
	counter := func(name string, x float64) {
		w.Counters[name] = []window.Counter{{Labels: l, Increase: x}}
	}
	// 1000 verify passes of 4 drafts, 1500 accepted: 2.5 tokens a pass.
	counter("vllm:spec_decode_num_drafts_total", 1000)
	counter("vllm:spec_decode_num_draft_tokens_total", 4000)
	counter("vllm:spec_decode_num_accepted_tokens_total", 1500)
	// 1000 step gaps, all between 50 and 100 ms.
	w.Histograms["vllm:inter_token_latency_seconds"] = []window.Histogram{{Labels: l, Count: 1000, Sum: 75,
		Buckets: []window.Bucket{{UpperBound: 0.05, Count: 0}, {UpperBound: 0.1, Count: 1000}, {UpperBound: math.Inf(1), Count: 1000}}}}
	e := engine.Build(w, engine.Options{})[0]
	v := e.Values
	if v.Cond.Speculative != 1 || v.Cond.SpecTokens != 4 || v.Service.SpecAcceptLength != 2.5 || v.Service.SpecAcceptance != 0.375 {
		t.Fatalf("speculative %v, tokens %v, accept length %v, acceptance %v; want 1, 4, 2.5, 0.375",
			v.Cond.Speculative, v.Cond.SpecTokens, v.Service.SpecAcceptLength, v.Service.SpecAcceptance)
	}
	if math.Abs(v.Stage.ITL.Mean-0.03) > 1e-9 || v.Stage.ITL.P50 > 0.04 || v.Stage.ITL.P50 < 0.02 {
		t.Errorf("ITL mean %v p50 %v: want the 75 ms step gap per token, 30 ms", v.Stage.ITL.Mean, v.Stage.ITL.P50)
	}
	if r := e.Resolution["stage.itl.p50"]; r[0] != 0.02 || r[1] != 0.04 {
		t.Errorf("p50's bucket %v: want the step bucket 50–100 ms per token, 20–40 ms", r)
	}
	if s, _ := e.SourceOf("stage.itl"); !strings.Contains(s.Note, "divided by the 2.50 tokens") {
		t.Errorf("the ITL's source does not say it was divided: %+v", s)
	}
}

// A V1 server registers its spec decode counters only with speculative
// decoding on: without them it is off. A window that cannot be told V1
// leaves it unknown.
func TestSpeculativeDecodingOff(t *testing.T) {
	w := win()
	l := window.Labels{"model_name": "m", "engine": "0"}
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{gauge(20, l)}
	e := engine.Build(w, engine.Options{})[0]
	if e.Values.Cond.Speculative != 0 {
		t.Errorf("V1 without spec decode counters: speculative %v, want 0", e.Values.Cond.Speculative)
	}
	w = win()
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{gauge(20, window.Labels{"model_name": "m"})}
	e = engine.Build(w, engine.Options{})[0]
	if !math.IsNaN(e.Values.Cond.Speculative) {
		t.Errorf("a window that may be V0's: speculative %v, want unknown", e.Values.Cond.Speculative)
	}
}
