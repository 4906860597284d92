package vllm

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// Building evidence for one model served by 1000 instances stays linear.
func BenchmarkBuild1000Instances(b *testing.B) {
	w := window.New()
	w.Start, w.End = time.Unix(0, 0), time.Unix(900, 0)
	for i := 0; i < 1000; i++ {
		l := window.Labels{"model_name": "m", "engine": "0", "instance": fmt.Sprintf("i%d", i)}
		for _, n := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"} {
			w.Gauges[n] = append(w.Gauges[n], window.Gauge{Labels: l, Points: make([]float64, 16)})
		}
		for _, n := range []string{"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
			"vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds", "vllm:inter_token_latency_seconds",
			"vllm:request_prompt_tokens", "vllm:request_generation_tokens"} {
			bk := []window.Bucket{{UpperBound: 0.1, Count: 1}, {UpperBound: 1, Count: 5}, {UpperBound: 10, Count: 9}, {UpperBound: math.Inf(1), Count: 10}}
			w.Histograms[n] = append(w.Histograms[n], window.Histogram{Labels: l, Buckets: bk, Sum: 10, Count: 10})
		}
		w.Counters["vllm:request_success_total"] = append(w.Counters["vllm:request_success_total"], window.Counter{Labels: window.Labels{"model_name": "m", "engine": "0", "instance": fmt.Sprintf("i%d", i), "finished_reason": "stop"}, Increase: 10})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := engine.Build(w, engine.Options{})
		if len(ev[0].Members) != 1000 {
			b.Fatal(len(ev[0].Members))
		}
	}
}
