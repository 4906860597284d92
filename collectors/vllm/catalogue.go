// Package vllm knows vLLM's metric names across versions and turns a window of
// them into evidence.
package vllm

// Kind is how a metric is exposed.
type Kind int

// Metric kinds.
const (
	Counter Kind = iota
	Gauge
	Histogram
	Info
)

func (k Kind) String() string {
	return [...]string{"counter", "gauge", "histogram", "info"}[k]
}

// Metric is one concept with every name vLLM has exposed it under.
type Metric struct {
	Key string
	// Names are exposed family names, newest first: when a server exposes
	// several (0.9.2–0.10.x expose old and new), the first present wins.
	Names   []string
	Kind    Kind
	Unit    string
	Meaning string
	// Obtain tells a user how to get the metric when it is missing.
	Obtain string
}

// Ratio reports gauges that are shares (KV usage, hit rates): averaged
// across engines and instances, where counts are summed.
func (m Metric) Ratio() bool { return m.Key == KVUsage || m.Key == PrefixHitGauge }

// Catalogue keys.
const (
	TTFT            = "ttft"
	QueueTime       = "queue_time"
	PrefillTime     = "prefill_time"
	DecodeTime      = "decode_time"
	InferenceTime   = "inference_time"
	StepLatency     = "step_latency"
	RequestTPOT     = "request_tpot"
	E2E             = "e2e"
	PromptLen       = "prompt_len"
	GenerationLen   = "generation_len"
	ComputedPrompt  = "computed_prompt_len"
	MaxTokens       = "max_tokens"
	IterationTokens = "iteration_tokens"
	PromptTokens    = "prompt_tokens"
	GenTokens       = "generation_tokens"
	Preemptions     = "preemptions"
	RequestSuccess  = "request_success"
	PrefixQueries   = "prefix_queries"
	PrefixHits      = "prefix_hits"
	PrefixHitGauge  = "prefix_hit_rate_gauge"
	Running         = "running"
	Waiting         = "waiting"
	WaitingByReason = "waiting_by_reason"
	KVUsage         = "kv_usage"
	CacheConfig     = "cache_config"
)

// Catalogue lists every vLLM metric llmdoctor reads.
var Catalogue = []Metric{
	{TTFT, []string{"vllm:time_to_first_token_seconds"}, Histogram, "s",
		"time to first token per request, from arrival at the API server (includes queue wait)",
		"exported by every vLLM version; check that /metrics is scraped"},
	{QueueTime, []string{"vllm:request_queue_time_seconds", "vllm:time_in_queue_requests"}, Histogram, "s",
		"time from queued to first scheduled per request",
		"vLLM V1 engine (0.7.2+) exports vllm:request_queue_time_seconds; V0 servers do not: upgrade"},
	{PrefillTime, []string{"vllm:request_prefill_time_seconds"}, Histogram, "s",
		"time from first scheduled to first token per request",
		"vLLM V1 engine (0.7.2+); V0 servers do not export it: upgrade"},
	{DecodeTime, []string{"vllm:request_decode_time_seconds"}, Histogram, "s",
		"time from first to last token per request", "vLLM V1 engine (0.7.2+)"},
	{InferenceTime, []string{"vllm:request_inference_time_seconds"}, Histogram, "s",
		"time from first scheduled to last token per request", "vLLM V1 engine (0.7.2+)"},
	{StepLatency, []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}, Histogram, "s",
		"gap between engine steps for each decoding request (inter-token latency)",
		"vllm:inter_token_latency_seconds from 0.11; vllm:time_per_output_token_seconds before 0.15"},
	{RequestTPOT, []string{"vllm:request_time_per_output_token_seconds"}, Histogram, "s",
		"per-request mean time per output token after the first", "vLLM 0.11+"},
	{E2E, []string{"vllm:e2e_request_latency_seconds"}, Histogram, "s",
		"end-to-end latency per request on the server", "exported by every vLLM version"},
	{PromptLen, []string{"vllm:request_prompt_tokens"}, Histogram, "tokens",
		"prompt tokens per finished request", "exported by every vLLM version"},
	{GenerationLen, []string{"vllm:request_generation_tokens"}, Histogram, "tokens",
		"generated tokens per finished request", "exported by every vLLM version"},
	{ComputedPrompt, []string{"vllm:request_prefill_kv_computed_tokens"}, Histogram, "tokens",
		"prompt tokens computed (not served from prefix cache) per request", "vLLM 0.13+"},
	{MaxTokens, []string{"vllm:request_params_max_tokens"}, Histogram, "tokens",
		"max_tokens requested per request", "clients must set max_tokens"},
	{IterationTokens, []string{"vllm:iteration_tokens_total"}, Histogram, "tokens",
		"tokens per engine step (a histogram despite the _total suffix)", "exported by every vLLM version"},
	{PromptTokens, []string{"vllm:prompt_tokens_total"}, Counter, "tokens",
		"prompt tokens processed, cached included", "exported by every vLLM version"},
	{GenTokens, []string{"vllm:generation_tokens_total"}, Counter, "tokens",
		"tokens generated", "exported by every vLLM version"},
	{Preemptions, []string{"vllm:num_preemptions_total"}, Counter, "count",
		"requests preempted because KV blocks ran out", "exported by every vLLM version"},
	{RequestSuccess, []string{"vllm:request_success_total"}, Counter, "requests",
		"finished requests by finished_reason (stop, length, abort, error, repetition)", "exported by every vLLM version"},
	{PrefixQueries, []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}, Counter, "tokens",
		"prefix cache lookups (tokens; blocks before 0.9.0)", "vLLM 0.9.2+ (gpu_prefix_cache_* names until 0.11)"},
	{PrefixHits, []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}, Counter, "tokens",
		"prefix cache hits (tokens; blocks before 0.9.0)", "vLLM 0.9.2+ (gpu_prefix_cache_* names until 0.11)"},
	{PrefixHitGauge, []string{"vllm:gpu_prefix_cache_hit_rate"}, Gauge, "ratio",
		"V0 prefix cache hit rate gauge", "V0 engine only"},
	{Running, []string{"vllm:num_requests_running"}, Gauge, "requests",
		"requests in the running batch", "exported by every vLLM version"},
	{Waiting, []string{"vllm:num_requests_waiting"}, Gauge, "requests",
		"requests waiting to be scheduled", "exported by every vLLM version"},
	{WaitingByReason, []string{"vllm:num_requests_waiting_by_reason"}, Gauge, "requests",
		"waiting requests by reason: capacity (waiting for room in the batch) or deferred (LoRA budget, KV transfer)",
		"vLLM from 2026-04 (after 0.16)"},
	{KVUsage, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, Gauge, "ratio",
		"fraction of KV cache blocks in use (0..1)", "vllm:kv_cache_usage_perc from 0.9.2; vllm:gpu_cache_usage_perc before 0.12"},
	{CacheConfig, []string{"vllm:cache_config_info"}, Info, "",
		"cache configuration in labels: block_size, num_gpu_blocks, enable_prefix_caching, gpu_memory_utilization",
		"exported by vLLM 0.7.3+ at engine start"},
}

var byKey = func() map[string]Metric {
	m := map[string]Metric{}
	for _, x := range Catalogue {
		m[x.Key] = x
	}
	return m
}()

// ByKey returns the catalogue entry for a key.
func ByKey(k string) Metric { return byKey[k] }

// Known reports the catalogue entry an exposed family name belongs to.
func Known(name string) (Metric, bool) {
	for _, m := range Catalogue {
		for _, n := range m.Names {
			if n == name {
				return m, true
			}
		}
	}
	return Metric{}, false
}
