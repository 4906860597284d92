package vllm

import (
	"math"
	"testing"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// vLLM's LoRA info series (no model_name) gives the adapter slots; the
// requests it passed over for want of one wait as deferred. A V1 window of
// metrics without the info series serves no adapters.
func TestLoRA(t *testing.T) {
	w := win()
	l := window.Labels{"model_name": "m", "engine": "0"}
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{gauge(20, l)}
	w.Infos["vllm:lora_requests_info"] = []window.Info{
		{Labels: window.Labels{"max_lora": "2", "running_lora_adapters": "a,b", "waiting_lora_adapters": "c"}},
		{Labels: window.Labels{"max_lora": "2", "running_lora_adapters": "a", "waiting_lora_adapters": ""}},
	}
	w.Gauges["vllm:num_requests_waiting_by_reason"] = []window.Gauge{
		{Labels: window.Labels{"model_name": "m", "engine": "0", "reason": "deferred"}, Points: []float64{3, 5}},
		{Labels: window.Labels{"model_name": "m", "engine": "0", "reason": "capacity"}, Points: []float64{0, 0}},
	}
	e := engine.Build(w, engine.Options{})[0]
	v := e.Values
	if v.Cond.LoRA != 1 || v.Cond.MaxLoRAs != 2 || v.Service.LoRAHeld.Mean != 4 || v.Service.Waiting.Mean != 0 {
		t.Fatalf("lora %v, slots %v, held %+v, waiting %+v: want 1, 2, 4 held and none waiting for capacity",
			v.Cond.LoRA, v.Cond.MaxLoRAs, v.Service.LoRAHeld, v.Service.Waiting)
	}

	w = win()
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{gauge(20, l)}
	w.Histograms["vllm:time_to_first_token_seconds"] = []window.Histogram{{Labels: l, Count: 10, Sum: 1,
		Buckets: []window.Bucket{{UpperBound: 0.1, Count: 10}, {UpperBound: math.Inf(1), Count: 10}}}}
	if e := engine.Build(w, engine.Options{})[0]; e.Values.Cond.LoRA != 0 {
		t.Errorf("V1 metrics without LoRA series: lora %v, want 0", e.Values.Cond.LoRA)
	}
}
