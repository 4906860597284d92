// Package expogen writes vLLM /metrics expositions exactly as vLLM's Python
// prometheus_client prints them (HELP/TYPE lines, *_created families, float
// formatting, label order), for the example snapshots and tests. It draws
// per-request observations from simple distributions; it is not a simulator.
package expogen

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"strings"
)

// Version is the exposition vintage.
type Version string

// Vintages with different metric names and labels.
const (
	V1   Version = "v1"    // vLLM ≥ 0.12: current names
	V010 Version = "v0.10" // V1 engine, old and new KV/prefix names side by side
	V0   Version = "v0"    // V0 engine: no engine label, no queue/prefill histograms
	// Servers that speak vLLM's metrics but not all of them (forks, gateways).
	V1NoQueue     Version = "v1-no-queue-metrics"   // no queue-time histogram, no preemption counter
	V1TTFTNoQueue Version = "v1-ttft-without-queue" // TTFT measured from scheduling, so it leaves queue wait out
)

// Req is one finished request.
type Req struct {
	Prompt, Output        int
	Front, Queue, Prefill float64
	// Steps are the inter-token gaps (len Output−1).
	Steps  []float64
	Reason string
	Cached int
}

// Gauges are the instantaneous values at one snapshot.
type Gauges struct{ Running, Waiting, KV float64 }

// Scenario describes a window.
type Scenario struct {
	Name, Model string
	Seed        int64
	// Warm requests finished before the first snapshot; Window after it.
	Warm, Window int
	Draw         func(r *rand.Rand) Req
	Start, End   Gauges
	Preemptions  [2]float64
	BlockSize    int
	GPUBlocks    int
	PrefixCache  bool
	Engines      int
}

var (
	ttftB   = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlB    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	reqLatB = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	tokB    = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}
	iterB   = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	// V0 ended these bucket sets earlier (before vLLM 0.8.3).
	ttftV0 = ttftB[:16]
	itlV0  = itlB[:13]
	latV0  = reqLatB[:15]
)

type hist struct {
	bounds []float64
	counts []float64
	sum    float64
	n      float64
}

func newHist(b []float64) *hist { return &hist{bounds: b, counts: make([]float64, len(b))} }

func (h *hist) observe(x float64) {
	h.sum += x
	h.n++
	for i, b := range h.bounds {
		if x <= b {
			h.counts[i]++
			return
		}
	}
}

type state struct {
	h                          map[string]*hist
	prompt, gen, qHits, qTotal float64
	reasons                    map[string]float64
}

func (s *state) add(v Version, r Req) {
	ttft := r.Front + r.Queue + r.Prefill
	e2e := ttft
	var decode float64
	for _, x := range r.Steps {
		decode += x
	}
	e2e += decode
	obs := func(name string, x float64) {
		if h, ok := s.h[name]; ok {
			h.observe(x)
		}
	}
	if v == V1TTFTNoQueue {
		ttft -= r.Queue
	}
	obs("vllm:time_to_first_token_seconds", ttft)
	obs("vllm:e2e_request_latency_seconds", e2e)
	obs("vllm:request_queue_time_seconds", r.Queue)
	obs("vllm:request_prefill_time_seconds", r.Prefill)
	obs("vllm:request_decode_time_seconds", decode)
	obs("vllm:request_inference_time_seconds", r.Prefill+decode)
	if r.Output > 1 {
		obs("vllm:request_time_per_output_token_seconds", decode/float64(r.Output-1))
	}
	for _, x := range r.Steps {
		obs("vllm:inter_token_latency_seconds", x)
		obs("vllm:time_per_output_token_seconds", x)
	}
	obs("vllm:request_prompt_tokens", float64(r.Prompt))
	obs("vllm:request_generation_tokens", float64(r.Output))
	obs("vllm:request_prefill_kv_computed_tokens", float64(r.Prompt-r.Cached))
	obs("vllm:request_params_max_tokens", float64(max(r.Output, 1024)))
	obs("vllm:iteration_tokens_total", float64(r.Prompt))
	s.prompt += float64(r.Prompt)
	s.gen += float64(r.Output)
	s.qTotal += float64(r.Prompt)
	s.qHits += float64(r.Cached)
	reason := r.Reason
	if reason == "" {
		reason = "stop"
	}
	s.reasons[reason]++
}

func newState(v Version) *state {
	s := &state{h: map[string]*hist{}, reasons: map[string]float64{}}
	for _, f := range families(v) {
		if f.kind == "histogram" {
			s.h[f.name] = newHist(f.buckets)
		}
	}
	return s
}

type family struct {
	name, kind, help string
	buckets          []float64
}

func families(v Version) []family {
	h := func(n, help string, b []float64) family { return family{n, "histogram", help, b} }
	fs := []family{
		{"vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", nil},
		{"vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", nil},
	}
	switch v {
	case V0:
		fs = append(fs,
			family{"vllm:num_requests_swapped", "gauge", "Number of requests swapped to CPU.", nil},
			family{"vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.", nil},
			family{"vllm:cpu_cache_usage_perc", "gauge", "CPU KV-cache usage. 1 means 100 percent usage.", nil},
			family{"vllm:gpu_prefix_cache_hit_rate", "gauge", "GPU prefix cache block hit rate.", nil},
			h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftV0),
			h("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", itlV0),
			h("vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", latV0))
	case V010:
		fs = append(fs,
			family{"vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.", nil},
			family{"vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", nil},
			family{"vllm:gpu_prefix_cache_queries_total", "counter", "GPU prefix cache queries, in terms of number of queried tokens.DEPRECATED: Use vllm:prefix_cache_queries instead.", nil},
			family{"vllm:gpu_prefix_cache_hits_total", "counter", "GPU prefix cache hits, in terms of number of cached tokens.DEPRECATED: Use vllm:prefix_cache_hits instead.", nil},
			family{"vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", nil},
			family{"vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", nil},
			h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftB),
			h("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", itlB),
			h("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", reqLatB))
	default:
		fs = append(fs,
			family{"vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", nil},
			family{"vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", nil},
			family{"vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", nil},
			h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftB),
			h("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlB),
			h("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlB),
			h("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", reqLatB),
			h("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", tokB))
	}
	fs = append(fs,
		family{"vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", nil},
		family{"vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", nil},
		family{"vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", nil},
		family{"vllm:request_success_total", "counter", "Count of successfully processed requests.", nil},
		h("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokB),
		h("vllm:request_generation_tokens", "Number of generation tokens processed.", tokB),
		h("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterB),
		h("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", tokB))
	if v != V0 {
		fs = append(fs,
			h("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", reqLatB),
			h("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", reqLatB),
			h("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", reqLatB),
			h("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", reqLatB))
	}
	if v == V1NoQueue {
		kept := fs[:0]
		for _, f := range fs {
			if f.name != "vllm:request_queue_time_seconds" && f.name != "vllm:num_preemptions_total" {
				kept = append(kept, f)
			}
		}
		fs = kept
	}
	return fs
}

// Snapshots returns the exposition at the start and at the end of the window.
func Snapshots(sc Scenario, v Version) (start, end string) {
	r := rand.New(rand.NewSource(sc.Seed))
	engines := max(sc.Engines, 1)
	states := make([]*state, engines)
	for i := range states {
		states[i] = newState(v)
	}
	created := 1.7537953269356403e+09
	for i := 0; i < sc.Warm; i++ {
		states[i%engines].add(v, sc.Draw(r))
	}
	start = render(sc, v, states, sc.Start, sc.Preemptions[0], created)
	for i := 0; i < sc.Window; i++ {
		states[(sc.Warm+i)%engines].add(v, sc.Draw(r))
	}
	end = render(sc, v, states, sc.End, sc.Preemptions[1], created)
	return start, end
}

func render(sc Scenario, v Version, states []*state, g Gauges, preempt float64, created float64) string {
	var b strings.Builder
	// A few families every Python process exposes; llmdoctor must skip them.
	b.WriteString("# HELP python_gc_objects_collected_total Objects collected during gc\n# TYPE python_gc_objects_collected_total counter\n")
	b.WriteString("python_gc_objects_collected_total{generation=\"0\"} 12012.0\n")
	b.WriteString("# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\n")
	b.WriteString("process_start_time_seconds " + goFloat(created-12.5) + "\n")
	engines := len(states)
	labels := func(e int, extra ...string) string {
		parts := []string{fmt.Sprintf("model_name=%q", sc.Model)}
		if v != V0 {
			parts = append(parts, fmt.Sprintf("engine=\"%d\"", e))
		}
		parts = append(parts, extra...)
		return "{" + strings.Join(parts, ",") + "}"
	}
	perEngine := func(x float64) float64 { return x / float64(engines) }
	for _, f := range families(v) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.kind)
		for e, s := range states {
			switch f.kind {
			case "gauge":
				var x float64
				switch f.name {
				case "vllm:num_requests_running":
					x = math.Round(perEngine(g.Running))
				case "vllm:num_requests_waiting":
					x = math.Round(perEngine(g.Waiting))
				case "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc":
					x = g.KV
				case "vllm:gpu_prefix_cache_hit_rate":
					x = ratio(s.qHits, s.qTotal)
				}
				fmt.Fprintf(&b, "%s%s %s\n", f.name, labels(e), goFloat(x))
			case "counter":
				switch f.name {
				case "vllm:request_success_total":
					reasons := make([]string, 0, len(s.reasons))
					for k := range s.reasons {
						reasons = append(reasons, k)
					}
					sort.Strings(reasons)
					for _, k := range reasons {
						fmt.Fprintf(&b, "%s%s %s\n", f.name, labels(e, fmt.Sprintf("finished_reason=%q", k)), goFloat(s.reasons[k]))
					}
				default:
					x := map[string]float64{
						"vllm:num_preemptions_total":          math.Round(perEngine(preempt)),
						"vllm:prompt_tokens_total":            s.prompt,
						"vllm:generation_tokens_total":        s.gen,
						"vllm:prefix_cache_queries_total":     s.qTotal,
						"vllm:prefix_cache_hits_total":        s.qHits,
						"vllm:gpu_prefix_cache_queries_total": s.qTotal,
						"vllm:gpu_prefix_cache_hits_total":    s.qHits,
					}[f.name]
					fmt.Fprintf(&b, "%s%s %s\n", f.name, labels(e), goFloat(x))
				}
			case "histogram":
				h := s.h[f.name]
				var cum float64
				for i, bound := range h.bounds {
					cum += h.counts[i]
					fmt.Fprintf(&b, "%s_bucket%s %s\n", f.name, labels(e, fmt.Sprintf("le=%q", goFloat(bound))), goFloat(cum))
				}
				fmt.Fprintf(&b, "%s_bucket%s %s\n", f.name, labels(e, `le="+Inf"`), goFloat(h.n))
				fmt.Fprintf(&b, "%s_count%s %s\n", f.name, labels(e), goFloat(h.n))
				fmt.Fprintf(&b, "%s_sum%s %s\n", f.name, labels(e), goFloat(h.sum))
			}
		}
		if v != V0 && f.kind != "gauge" {
			base := strings.TrimSuffix(f.name, "_total")
			if f.kind == "histogram" {
				base = f.name
			}
			fmt.Fprintf(&b, "# HELP %s_created %s\n# TYPE %s_created gauge\n", base, f.help, base)
			for e := range states {
				fmt.Fprintf(&b, "%s_created%s %s\n", base, labels(e), goFloat(created+float64(e)*0.25))
			}
		}
	}
	{
		fmt.Fprintf(&b, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n")
		for e := range states {
			eng := ""
			if v != V0 {
				eng = fmt.Sprintf("engine=\"%d\",", e)
			}
			fmt.Fprintf(&b, "vllm:cache_config_info{block_size=\"%d\",cache_dtype=\"auto\",calculate_kv_scales=\"False\",cpu_offload_gb=\"0\",enable_prefix_caching=\"%s\",%sgpu_memory_utilization=\"0.9\",is_attention_free=\"False\",num_cpu_blocks=\"None\",num_gpu_blocks=\"%d\",num_gpu_blocks_override=\"None\",prefix_caching_hash_algo=\"builtin\",sliding_window=\"None\",swap_space=\"4\",swap_space_bytes=\"4294967296\"} 1.0\n",
				sc.BlockSize, pyBool(sc.PrefixCache), eng, sc.GPUBlocks)
		}
	}
	return b.String()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// goFloat formats like prometheus_client's floatToGoString: Python repr, with
// an exponent once there are more than six digits before the point.
func goFloat(d float64) string {
	switch {
	case math.IsInf(d, 1):
		return "+Inf"
	case math.IsInf(d, -1):
		return "-Inf"
	case math.IsNaN(d):
		return "NaN"
	}
	s := pyRepr(d)
	dot := strings.IndexByte(s, '.')
	if d > 0 && dot > 6 {
		mant := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return fmt.Sprintf("%se+0%d", mant, dot-1)
	}
	return s
}

// pyRepr mimics Python's float repr: shortest round-trip digits, exponent
// form below 1e-4 and from 1e16.
func pyRepr(d float64) string {
	if d == 0 {
		return "0.0"
	}
	a := math.Abs(d)
	if a < 1e-4 || a >= 1e16 {
		s := strconv.FormatFloat(d, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		digits := strings.TrimLeft(exp[1:], "0")
		if len(digits) < 2 {
			digits = fmt.Sprintf("%02s", digits)
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(d, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
