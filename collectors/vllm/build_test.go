package vllm

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

func gauge(v float64, l window.Labels) window.Gauge {
	return window.Gauge{Labels: l, Points: []float64{v, v}}
}

func win() *window.Window {
	w := window.New()
	w.Start, w.End = time.Unix(0, 0), time.Unix(900, 0)
	w.Points = 2
	return w
}

// 0.9.2–0.10.x expose old and new names together: the new one wins.
func TestNewNameWinsWhenBothPresent(t *testing.T) {
	w := win()
	l := window.Labels{"model_name": "m", "engine": "0"}
	w.Gauges["vllm:gpu_cache_usage_perc"] = []window.Gauge{gauge(0.2, l)}
	w.Gauges["vllm:kv_cache_usage_perc"] = []window.Gauge{gauge(0.9, l)}
	e := engine.Build(w, engine.Options{})[0]
	if e.Values.Resource.KVUsage.Mean != 0.9 {
		t.Fatalf("kv usage %v, want the new name's 0.9", e.Values.Resource.KVUsage.Mean)
	}
	if s, _ := e.SourceOf("resource.kv_usage.mean"); s.Metric != "vllm:kv_cache_usage_perc" {
		t.Fatalf("provenance %q", s.Metric)
	}
}

// Old names alone are read (a V0 server).
func TestOldNamesAccepted(t *testing.T) {
	w := win()
	l := window.Labels{"model_name": "m"}
	w.Gauges["vllm:gpu_cache_usage_perc"] = []window.Gauge{gauge(0.4, l)}
	w.Gauges["vllm:gpu_prefix_cache_hit_rate"] = []window.Gauge{gauge(0.3, l)}
	w.Histograms["vllm:time_per_output_token_seconds"] = []window.Histogram{{Labels: l, Count: 40, Sum: 2,
		Buckets: []window.Bucket{{UpperBound: 0.05, Count: 30}, {UpperBound: 0.1, Count: 40}, {UpperBound: math.Inf(1), Count: 40}}}}
	e := engine.Build(w, engine.Options{})[0]
	v := e.Values
	if v.Resource.KVUsage.Mean != 0.4 || v.Resource.PrefixHitRate != 0.3 || v.Stage.ITL.Count != 40 || v.Stage.ITL.Mean != 0.05 {
		t.Fatalf("kv %v prefix %v itl %+v", v.Resource.KVUsage.Mean, v.Resource.PrefixHitRate, v.Stage.ITL)
	}
	if !math.IsNaN(v.Stage.Queue.Mean) || !math.IsNaN(v.Stage.TPOT.P50) {
		t.Fatal("metrics a V0 server lacks must stay missing")
	}
}

// cache_config_info has no model_name: it applies to the target on the same
// engine, and KV capacity adds up over engines.
func TestCacheConfigInfo(t *testing.T) {
	w := win()
	for _, eng := range []string{"0", "1"} {
		w.Gauges["vllm:num_requests_running"] = append(w.Gauges["vllm:num_requests_running"],
			gauge(10, window.Labels{"model_name": "m", "engine": eng}))
		w.Infos["vllm:cache_config_info"] = append(w.Infos["vllm:cache_config_info"], window.Info{Labels: window.Labels{
			"engine": eng, "block_size": "16", "num_gpu_blocks": "1000", "enable_prefix_caching": "True",
			"gpu_memory_utilization": "0.92", "cache_dtype": "fp8_e4m3"}})
	}
	e := engine.Build(w, engine.Options{})[0]
	c := e.Values.Cond
	if c.KVCapacityTokens != 32000 || c.GPUBlocks != 2000 || c.PrefixCaching != 1 || c.GPUMemoryUtilization != 0.92 || c.Engines != 2 ||
		c.KVCacheFP8 != 1 {
		t.Fatalf("cond %+v", c)
	}
	if len(e.Members) != 2 || e.Members[1].Values.Cond.KVCapacityTokens != 16000 {
		t.Fatalf("per-engine members: %d", len(e.Members))
	}
	if e.Values.Service.Running.Mean != 20 {
		t.Fatalf("running summed over engines: %v", e.Values.Service.Running.Mean)
	}
}

// Two models served from two instances: each target's KV capacity is its
// own server's, not the sum of both (cache_config_info has no model_name).
func TestCacheConfigInfoOfTwoModels(t *testing.T) {
	for _, summed := range []bool{false, true} {
		w := win()
		members := w
		if summed {
			// As Prometheus gives it: the target's series summed to
			// model_name, the replicas' apart.
			members = win()
			w.Members = members
		}
		for i, m := range []string{"a", "b"} {
			inst := fmt.Sprintf("10.0.0.%d:8000", i+1)
			l := window.Labels{"model_name": m, "engine": "0", "instance": inst}
			members.Gauges["vllm:num_requests_running"] = append(members.Gauges["vllm:num_requests_running"], gauge(1, l))
			if summed {
				w.Gauges["vllm:num_requests_running"] = append(w.Gauges["vllm:num_requests_running"], gauge(1, window.Labels{"model_name": m}))
			}
			w.Infos["vllm:cache_config_info"] = append(w.Infos["vllm:cache_config_info"], window.Info{Labels: window.Labels{
				"engine": "0", "instance": inst, "block_size": "16", "num_gpu_blocks": fmt.Sprint(1000 * (i + 1))}})
		}
		evs := engine.Build(w, engine.Options{})
		if len(evs) != 2 {
			t.Fatalf("summed %v: %d targets", summed, len(evs))
		}
		for i, e := range evs {
			if got, want := e.Values.Cond.GPUBlocks, float64(1000*(i+1)); got != want {
				t.Errorf("summed %v: %s has %v GPU blocks, want its own server's %v", summed, e.Target.Model, got, want)
			}
		}
	}
}

func TestTargetsPerModel(t *testing.T) {
	w := win()
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{
		gauge(1, window.Labels{"model_name": "a"}), gauge(2, window.Labels{"model_name": "b"})}
	ev := engine.Build(w, engine.Options{})
	if len(ev) != 2 || ev[0].Target.Model != "a" || ev[1].Values.Service.Running.Mean != 2 {
		t.Fatalf("targets %d", len(ev))
	}
}

func TestEveryCatalogueNameIsUnique(t *testing.T) {
	seen := map[string]string{}
	for _, m := range Catalogue {
		if m.Obtain == "" || m.Meaning == "" {
			t.Errorf("%s lacks meaning or how to obtain it", m.Key)
		}
		for _, n := range m.Names {
			if prev, ok := seen[n]; ok {
				t.Errorf("%s listed under %s and %s", n, prev, m.Key)
			}
			seen[n] = m.Key
		}
	}
	if m, ok := engine.Known("vllm:iteration_tokens_total"); !ok || m.Kind != engine.Histogram {
		t.Error("vllm:iteration_tokens_total is a histogram despite its suffix")
	}
}

// Deferred requests (LoRA budget, KV transfer) do not mean the batch is full.
func TestWaitingByReasonPrefersCapacity(t *testing.T) {
	w := win()
	w.Gauges["vllm:num_requests_waiting"] = []window.Gauge{gauge(50, window.Labels{"model_name": "m"})}
	w.Gauges["vllm:num_requests_waiting_by_reason"] = []window.Gauge{
		gauge(5, window.Labels{"model_name": "m", "reason": "capacity"}),
		gauge(45, window.Labels{"model_name": "m", "reason": "deferred"})}
	e := engine.Build(w, engine.Options{})[0]
	if e.Values.Service.Waiting.Mean != 5 {
		t.Fatalf("waiting %v, want the capacity share 5", e.Values.Service.Waiting.Mean)
	}
}

func TestSeriesWithoutModelNameAreLeftOutWithANote(t *testing.T) {
	w := win()
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{
		gauge(1, window.Labels{"model_name": "a"}), gauge(9, window.Labels{"server": "router"})}
	ev := engine.Build(w, engine.Options{})
	if len(ev) != 1 || ev[0].Target.Model != "a" || len(w.Notes) != 1 {
		t.Fatalf("targets %d notes %v", len(ev), w.Notes)
	}
}

// KV usage is a share: twenty replicas at 6% are at 6%, not 120%.
func TestRatioGaugesAverageCountsAdd(t *testing.T) {
	w := win()
	for i := 0; i < 20; i++ {
		l := window.Labels{"model_name": "m", "instance": fmt.Sprintf("i%d", i)}
		w.Gauges["vllm:kv_cache_usage_perc"] = append(w.Gauges["vllm:kv_cache_usage_perc"], gauge(0.06, l))
		w.Gauges["vllm:num_requests_running"] = append(w.Gauges["vllm:num_requests_running"], gauge(30, l))
	}
	e := engine.Build(w, engine.Options{})[0]
	if kv := e.Values.Resource.KVUsage.Mean; math.Abs(kv-0.06) > 1e-12 {
		t.Fatalf("fleet KV usage %v, want 0.06", kv)
	}
	if r := e.Values.Service.Running.Mean; r != 600 {
		t.Fatalf("fleet running %v, want 600", r)
	}
}

// A mean (_sum ÷ _count) outside the buckets that hold the observations
// cannot be: the histogram is withheld, not summarised.
func TestMeanOutsideItsBucketsIsWithheld(t *testing.T) {
	l := window.Labels{"model_name": "m", "engine": "0"}
	bk := []window.Bucket{{UpperBound: 0.1, Count: 0}, {UpperBound: 0.5, Count: 30}, {UpperBound: 1, Count: 40}, {UpperBound: math.Inf(1), Count: 40}}
	for _, c := range []struct {
		sum  float64
		bad  bool
		name string
	}{{0.8, true, "below the lowest bucket with a count"}, {50, true, "above the highest"}, {12, false, "inside"}} {
		t.Run(c.name, func(t *testing.T) {
			w := win()
			w.Histograms["vllm:time_to_first_token_seconds"] = []window.Histogram{{Labels: l, Count: 40, Sum: c.sum, Buckets: bk}}
			e := engine.Build(w, engine.Options{})[0]
			if got := e.Inconsistent("stage.ttft.mean") != ""; got != c.bad {
				t.Fatalf("withheld %v, want %v (%+v)", got, c.bad, e.Inconsistencies)
			}
		})
	}
}

// A window in which an engine was reconfigured (Prometheus keeps both
// cache_config_info series): KV capacity is withheld, not the sum of both.
func TestReconfiguredEngineWithholdsCapacity(t *testing.T) {
	w := win()
	for _, blocks := range []string{"27000", "9000"} {
		w.Infos["vllm:cache_config_info"] = append(w.Infos["vllm:cache_config_info"], window.Info{Labels: window.Labels{
			"engine": "0", "num_gpu_blocks": blocks, "block_size": "16"}})
	}
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{gauge(3, window.Labels{"model_name": "m", "engine": "0"})}
	e := engine.Build(w, engine.Options{})[0]
	if !math.IsNaN(e.Values.Cond.KVCapacityTokens) || e.Inconsistent("cond.kv_capacity_tokens") == "" {
		t.Fatalf("capacity %v, inconsistencies %+v", e.Values.Cond.KVCapacityTokens, e.Inconsistencies)
	}
}

// A step whose p99 (or p50) rank lies past the highest finite bucket has
// only that bound as a lower limit: it is left out of the per-step curve,
// the trend and the chart, never drawn as the bound.
func TestStepQuantilePastTopBucketIsLeftOut(t *testing.T) {
	l := window.Labels{"model_name": "m"}
	step := func(under10, total float64) []window.Bucket {
		return []window.Bucket{{UpperBound: 1, Count: under10 / 2}, {UpperBound: 10, Count: under10}, {UpperBound: math.Inf(1), Count: total}}
	}
	// Six steps; in steps 3 and 4 most first tokens took over 10 s.
	steps := [][]window.Bucket{nil, step(100, 100), step(100, 100), step(20, 100), step(30, 100), step(100, 100), step(100, 100)}
	w := win()
	w.Points = len(steps)
	w.Histograms["vllm:time_to_first_token_seconds"] = []window.Histogram{{Labels: l, Count: 600, Sum: 3000,
		Buckets: step(450, 600), Steps: steps}}
	e := engine.Build(w, engine.Options{})[0]
	p99, p50 := e.Curves["ttft_p99_steps"], e.Curves["ttft_p50_steps"]
	for _, pt := range p99 {
		if pt[1] >= 10 {
			t.Errorf("p99 curve has %v: the bound, drawn as a value", pt)
		}
	}
	// Steps 1, 2, 5 and 6 (every token under 10 s) are drawn, at the end of
	// each 150 s step.
	if len(p99) != 4 || p99[0][0] != 150 || p99[2][0] != 750 {
		t.Errorf("p99 curve %v, want steps 1, 2, 5 and 6", p99)
	}
	for _, pt := range p50 {
		if x := pt[0]; x == 3*150 || x == 4*150 {
			t.Errorf("p50 at %v s drawn though most of that step is past 10 s: %v", x, p50)
		}
	}
	if got := e.Values.Stage.TTFTP99Steps.Max; got >= 10 {
		t.Errorf("ttft_p99_steps.max %v: the top bound taken as a p99", got)
	}
}

// When most of a histogram lies past its highest finite bound, its upper
// quantiles are only lower limits: withheld, with a note, not read as
// values; the mean and the quantiles below the bound stay.
func TestQuantilePastTopBucketIsWithheld(t *testing.T) {
	l := window.Labels{"model_name": "m"}
	bk := []window.Bucket{{UpperBound: 1, Count: 60}, {UpperBound: 10, Count: 95}, {UpperBound: math.Inf(1), Count: 100}}
	w := win()
	w.Histograms["vllm:time_to_first_token_seconds"] = []window.Histogram{{Labels: l, Count: 100, Sum: 400, Buckets: bk}}
	e := engine.Build(w, engine.Options{})[0]
	for path, withheld := range map[string]bool{"stage.ttft.p99": true, "stage.ttft.p95": false, "stage.ttft.p90": false, "stage.ttft.mean": false, "stage.ttft.p50": false} {
		if got := e.Inconsistent(path) != ""; got != withheld {
			t.Errorf("%s withheld %v, want %v (%+v)", path, got, withheld, e.Inconsistencies)
		}
	}
}
