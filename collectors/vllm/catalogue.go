// Package vllm registers vLLM's catalogue: its metric names across versions,
// how a vLLM user obtains each evidence field, and its flag for each knob.
package vllm

import (
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// Catalogue keys are the engine's canonical keys.
const (
	TTFT            = engine.TTFT
	QueueTime       = engine.QueueTime
	PrefillTime     = engine.PrefillTime
	DecodeTime      = engine.DecodeTime
	InferenceTime   = engine.InferenceTime
	StepLatency     = engine.StepLatency
	RequestTPOT     = engine.RequestTPOT
	E2E             = engine.E2E
	PromptLen       = engine.PromptLen
	GenerationLen   = engine.GenerationLen
	ComputedPrompt  = engine.ComputedPrompt
	MaxTokens       = engine.MaxTokens
	IterationTokens = engine.IterationTokens
	PromptTokens    = engine.PromptTokens
	GenTokens       = engine.GenTokens
	Preemptions     = engine.Preemptions
	RequestSuccess  = engine.RequestSuccess
	PrefixQueries   = engine.PrefixQueries
	PrefixHits      = engine.PrefixHits
	PrefixHitGauge  = engine.PrefixHitGauge
	Running         = engine.Running
	Waiting         = engine.Waiting
	WaitingByReason = engine.WaitingByReason
	KVUsage         = engine.KVUsage
	CacheConfig     = engine.CacheConfig
)

// Catalogue lists every vLLM metric llmdoctor reads.
var Catalogue = []engine.Metric{
	{Key: TTFT, Names: []string{"vllm:time_to_first_token_seconds"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "time to first token per request, from arrival at the API server (includes queue wait)",
		Obtain:  "exported by every vLLM version; check that /metrics is scraped"},
	{Key: QueueTime, Names: []string{"vllm:request_queue_time_seconds", "vllm:time_in_queue_requests"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "time from queued to first scheduled per request",
		Obtain:  "vLLM V1 engine (0.7.2+) exports vllm:request_queue_time_seconds; V0 servers do not: upgrade"},
	{Key: PrefillTime, Names: []string{"vllm:request_prefill_time_seconds"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "time from first scheduled to first token per request",
		Obtain:  "vLLM V1 engine (0.7.2+); V0 servers do not export it: upgrade"},
	{Key: DecodeTime, Names: []string{"vllm:request_decode_time_seconds"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "time from first to last token per request", Obtain: "vLLM V1 engine (0.7.2+)"},
	{Key: InferenceTime, Names: []string{"vllm:request_inference_time_seconds"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "time from first scheduled to last token per request", Obtain: "vLLM V1 engine (0.7.2+)"},
	{Key: StepLatency, Names: []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "gap between engine steps for each decoding request (inter-token latency)",
		Obtain:  "vllm:inter_token_latency_seconds from 0.11; vllm:time_per_output_token_seconds before 0.15"},
	{Key: RequestTPOT, Names: []string{"vllm:request_time_per_output_token_seconds"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "per-request mean time per output token after the first", Obtain: "vLLM 0.11+"},
	{Key: E2E, Names: []string{"vllm:e2e_request_latency_seconds"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "end-to-end latency per request on the server", Obtain: "exported by every vLLM version"},
	{Key: PromptLen, Names: []string{"vllm:request_prompt_tokens"}, Kind: engine.Histogram, Unit: "tokens",
		Meaning: "prompt tokens per finished request", Obtain: "exported by every vLLM version"},
	{Key: GenerationLen, Names: []string{"vllm:request_generation_tokens"}, Kind: engine.Histogram, Unit: "tokens",
		Meaning: "generated tokens per finished request", Obtain: "exported by every vLLM version"},
	{Key: ComputedPrompt, Names: []string{"vllm:request_prefill_kv_computed_tokens"}, Kind: engine.Histogram, Unit: "tokens",
		Meaning: "prompt tokens computed (not served from prefix cache) per request", Obtain: "vLLM 0.13+"},
	{Key: MaxTokens, Names: []string{"vllm:request_params_max_tokens"}, Kind: engine.Histogram, Unit: "tokens",
		Meaning: "max_tokens requested per request", Obtain: "clients must set max_tokens"},
	{Key: IterationTokens, Names: []string{"vllm:iteration_tokens_total"}, Kind: engine.Histogram, Unit: "tokens",
		Meaning: "tokens per engine step (a histogram despite the _total suffix)", Obtain: "exported by every vLLM version"},
	{Key: PromptTokens, Names: []string{"vllm:prompt_tokens_total"}, Kind: engine.Counter, Unit: "tokens",
		Meaning: "prompt tokens processed, cached included", Obtain: "exported by every vLLM version"},
	{Key: GenTokens, Names: []string{"vllm:generation_tokens_total"}, Kind: engine.Counter, Unit: "tokens",
		Meaning: "tokens generated", Obtain: "exported by every vLLM version"},
	{Key: Preemptions, Names: []string{"vllm:num_preemptions_total"}, Kind: engine.Counter, Unit: "count",
		Meaning: "requests preempted because KV blocks ran out", Obtain: "exported by every vLLM version"},
	{Key: RequestSuccess, Names: []string{"vllm:request_success_total"}, Kind: engine.Counter, Unit: "requests", Keep: []string{"finished_reason"},
		Meaning: "finished requests by finished_reason (stop, length, abort, error, repetition)", Obtain: "exported by every vLLM version"},
	{Key: PrefixQueries, Names: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}, Kind: engine.Counter, Unit: "tokens",
		Meaning: "prefix cache lookups (tokens; blocks before 0.9.0)", Obtain: "vLLM 0.9.2+ (gpu_prefix_cache_* names until 0.11)"},
	{Key: PrefixHits, Names: []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}, Kind: engine.Counter, Unit: "tokens",
		Meaning: "prefix cache hits (tokens; blocks before 0.9.0)", Obtain: "vLLM 0.9.2+ (gpu_prefix_cache_* names until 0.11)"},
	{Key: PrefixHitGauge, Names: []string{"vllm:gpu_prefix_cache_hit_rate"}, Kind: engine.Gauge, Unit: "ratio",
		// V0's way of saying prefix caching is off: no number.
		Sentinels: []float64{-1},
		Meaning:   "V0 prefix cache hit rate gauge", Obtain: "V0 engine only"},
	{Key: Running, Names: []string{"vllm:num_requests_running"}, Kind: engine.Gauge, Unit: "requests",
		Meaning: "requests in the running batch", Obtain: "exported by every vLLM version"},
	{Key: Waiting, Names: []string{"vllm:num_requests_waiting"}, Kind: engine.Gauge, Unit: "requests",
		Meaning: "requests waiting to be scheduled", Obtain: "exported by every vLLM version"},
	{Key: WaitingByReason, Names: []string{"vllm:num_requests_waiting_by_reason"}, Kind: engine.Gauge, Unit: "requests", Keep: []string{"reason"},
		Meaning: "waiting requests by reason: capacity (waiting for room in the batch) or deferred (LoRA budget, KV transfer)",
		Obtain:  "vLLM from 2026-04 (after 0.16)"},
	{Key: KVUsage, Names: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, Kind: engine.Gauge, Unit: "ratio",
		Meaning: "fraction of KV cache blocks in use (0..1)", Obtain: "vllm:kv_cache_usage_perc from 0.9.2; vllm:gpu_cache_usage_perc before 0.12"},
	{Key: engine.Swapped, Names: []string{"vllm:num_requests_swapped"}, Kind: engine.Gauge, Unit: "requests",
		Meaning: "requests swapped out to CPU memory because KV blocks ran out (V0 engine)", Obtain: "V0 engine only (removed with it); its stats log line says Swapped"},
	{Key: engine.CPUKVUsage, Names: []string{"vllm:cpu_cache_usage_perc"}, Kind: engine.Gauge, Unit: "ratio",
		Meaning: "fraction of CPU swap-space KV blocks in use (V0 engine)", Obtain: "V0 engine only; its stats log line says CPU KV cache usage"},
	{Key: engine.SpecDrafts, Names: []string{"vllm:spec_decode_num_drafts_total"}, Kind: engine.Counter, Unit: "count",
		Meaning: "speculative verify passes, one per request per step (registered only with speculative decoding on)",
		Obtain:  "vLLM V1 with --speculative-config (0.9+; V0's spec metrics have no draft count)"},
	{Key: engine.SpecDraftTokens, Names: []string{"vllm:spec_decode_num_draft_tokens_total"}, Kind: engine.Counter, Unit: "tokens",
		Meaning: "tokens drafted for verification", Obtain: "vLLM with --speculative-config"},
	{Key: engine.SpecAccepted, Names: []string{"vllm:spec_decode_num_accepted_tokens_total"}, Kind: engine.Counter, Unit: "tokens",
		Meaning: "drafted tokens the target model accepted", Obtain: "vLLM with --speculative-config"},
	{Key: engine.LoRAInfo, Names: []string{"vllm:lora_requests_info"}, Kind: engine.Info, Unit: "",
		Meaning: "LoRA adapters in labels: max_lora (the adapter slots), running_lora_adapters and waiting_lora_adapters; one series per state seen, valued with the time it was last set",
		Obtain:  "vLLM with --enable-lora (0.6.4+; V1 from 0.8)"},
	{Key: engine.KVTransferTime, Names: []string{"vllm:nixl_xfer_time_seconds"}, Kind: engine.Histogram, Unit: "s",
		Meaning: "duration of each NIXL KV transfer, observed on the instance that pulls it (the decode instance of a prefill/decode split)",
		Obtain:  "vLLM 0.11.1+ with --kv-transfer-config using the NixlConnector; its log's KV Transfer metrics lines before"},
	{Key: engine.KVTransferBytes, Names: []string{"vllm:nixl_bytes_transferred"}, Kind: engine.Histogram, Unit: "bytes",
		Meaning: "bytes of each NIXL KV transfer", Obtain: "vLLM 0.11.1+ with the NixlConnector"},
	{Key: CacheConfig, Names: []string{"vllm:cache_config_info"}, Kind: engine.Info, Unit: "",
		Meaning: "cache configuration in labels: block_size, num_gpu_blocks, enable_prefix_caching, gpu_memory_utilization",
		Obtain:  "exported by vLLM 0.7.3+ at engine start"},
}

// Engine is vLLM's registration.
var Engine = &engine.Engine{
	Name:        "vllm",
	Title:       "vLLM",
	Catalogue:   Catalogue,
	Members:     []string{"instance", "engine"},
	ReasonLabel: "finished_reason",
	NoSwap:      v1,
	// V1 creates its spec_decode counters only with a speculative config.
	SpecRegistered: v1,
	LoRARegistered: v1,
	// A request whose KV is pulled waits in the scheduler's queue
	// (WAITING_FOR_REMOTE_KVS) and is first scheduled after it lands.
	QueueHoldsTransfer: true,
	How:                how,
	Knobs:              knobs,
}

func init() { engine.Register(Engine) }

// v1 reports whether a window is of vLLM's V1 engine, which has no swap
// space: its series carry the engine label (0.8.3+), or it exposes a name
// V0 never had. A window without either may be V0's, whose swapped count
// is then unknown when it is missing.
func v1(w *window.Window) bool {
	for _, n := range []string{"vllm:kv_cache_usage_perc", "vllm:request_prefill_time_seconds", "vllm:inter_token_latency_seconds"} {
		if len(w.Gauges[n]) > 0 || len(w.Histograms[n]) > 0 {
			return true
		}
	}
	for _, g := range w.Gauges["vllm:num_requests_running"] {
		if _, ok := g.Labels["engine"]; ok {
			return true
		}
	}
	return false
}

// knobs are vLLM's flags for the knobs next steps name. A value is a flag,
// or flags with the value a step needs; never parenthesised, as steps often
// put a knob inside their own parentheses.
var knobs = map[string]string{
	"max_num_seqs":           "--max-num-seqs",
	"max_num_batched_tokens": "--max-num-batched-tokens",
	"kv_cache_fp8":           "--kv-cache-dtype fp8",
	"gpu_memory_utilization": "--gpu-memory-utilization",
	"max_model_len":          "--max-model-len",
	"long_prefill_limits":    "--max-num-partial-prefills, --max-long-partial-prefills and --long-prefill-token-threshold",
	"enable_prefix_caching":  "--enable-prefix-caching",
	"mixed_chunked_prefill":  "--enable-chunked-prefill",
	"api_server_count":       "--api-server-count",
	"speculative_decoding":   "--speculative-config",
	"max_loras":              "--max-loras",
	"num_speculative_tokens": "num_speculative_tokens in --speculative-config",
}

// how says how a vLLM user obtains each evidence field the engine fills.
var how = map[string]string{
	"service.e2e":                 "exported by vLLM V1 (0.8+) as vllm:e2e_request_latency_seconds; scrape /metrics or query Prometheus",
	"cond.block_size":             "label block_size of vllm:cache_config_info",
	"cond.computed_prompt_tokens": "vllm:request_prefill_kv_computed_tokens (vLLM ≥ 0.13)",
	"cond.gpu_blocks":             "label num_gpu_blocks of vllm:cache_config_info",
	"cond.gpu_memory_utilization": "label gpu_memory_utilization of vllm:cache_config_info",
	"cond.kv_capacity_tokens":     "labels num_gpu_blocks and block_size of vllm:cache_config_info",
	"cond.max_tokens":             "vllm:request_params_max_tokens; clients must send max_tokens",
	"cond.output_tokens":          "exported by vLLM V1 (0.8+) as vllm:request_generation_tokens; scrape /metrics or query Prometheus",
	"cond.prefix_caching":         "label enable_prefix_caching of vllm:cache_config_info",
	"cond.kv_cache_fp8":           "label cache_dtype of vllm:cache_config_info",
	"cond.prompt_tokens":          "exported by vLLM V1 (0.8+) as vllm:request_prompt_tokens; scrape /metrics or query Prometheus",
	"cond.stage_metrics":          "scrape vLLM's /metrics or query Prometheus",
	"cond.tpot_tracked":           "vllm:inter_token_latency_seconds (vllm:time_per_output_token_seconds before 0.11) or vllm:request_time_per_output_token_seconds (0.11+)",
	"resource.kv_usage":           "vllm:kv_cache_usage_perc (≥ 0.9.2) or vllm:gpu_cache_usage_perc (older)",
	"resource.cpu_kv_usage":       "vllm:cpu_cache_usage_perc, or CPU KV cache usage in the stats log: the V0 engine only; V1 engines have no swap space and preempt instead (service.preemptions)",
	"service.swapped":             "vllm:num_requests_swapped, or Swapped in the stats log: the V0 engine only; V1 engines have no swap space and preempt instead (service.preemptions)",
	"resource.prefix_hit_rate":    "vllm:prefix_cache_hits_total and vllm:prefix_cache_queries_total (or the gpu_prefix_cache_* names before 0.12)",
	"resource.prefix_queries":     "vllm:prefix_cache_queries_total",
	"service.aborts":              "vllm:request_success_total{finished_reason=\"abort\"}",
	"service.errors":              "vllm:request_success_total{finished_reason=\"error\"} (vLLM ≥ 0.13)",
	"service.failed":              "vllm:request_success_total{finished_reason=~\"error|abort\"}",
	"service.failed_share":        "vllm:request_success_total by finished_reason",
	"service.finished":            "vllm:request_success_total",
	"service.generation_tps":      "vllm:generation_tokens_total over a window",
	"service.iteration_tokens":    "vllm:iteration_tokens_total (a histogram)",
	"service.length_share":        "vllm:request_success_total{finished_reason=\"length\"}",
	"service.preemptions":         "vllm:num_preemptions_total",
	"service.prompt_tps":          "vllm:prompt_tokens_total over a window",
	"service.request_rate":        "vllm:request_success_total over a window (two snapshots or a live scrape)",
	"service.running":             "vllm:num_requests_running",
	"service.waiting":             "vllm:num_requests_waiting_by_reason{reason=\"capacity\"} when exported, else vllm:num_requests_waiting",
	"stage.decode":                "vllm:request_decode_time_seconds (V1 engine, vLLM ≥ 0.7.2)",
	"stage.inference":             "vllm:request_inference_time_seconds (V1 engine, vLLM ≥ 0.7.2)",
	"stage.itl":                   "vllm:inter_token_latency_seconds (vLLM ≥ 0.11) or vllm:time_per_output_token_seconds (older)",
	"stage.itl_stall_seconds":     "vllm:inter_token_latency_seconds buckets; vllm:time_per_output_token_seconds before 0.11",
	"stage.itl_stalls":            "vllm:inter_token_latency_seconds buckets (0.5 is a bucket bound); vllm:time_per_output_token_seconds before 0.11",
	"stage.prefill":               "vllm:request_prefill_time_seconds (V1 engine, vLLM ≥ 0.7.2)",
	"stage.queue":                 "vllm:request_queue_time_seconds (V1 engine, vLLM ≥ 0.7.2); V0 servers lack it: upgrade, or run with the V1 engine",
	"stage.tpot":                  "vllm:request_time_per_output_token_seconds (vLLM ≥ 0.11)",
	"cond.speculative":            "vllm:spec_decode_num_drafts_total, registered only with --speculative-config (V1 engine)",
	"cond.lora":                   "vllm:lora_requests_info, exported only with --enable-lora",
	"service.transfer_waiting":    "vLLM counts requests waiting for their KV among vllm:num_requests_waiting_by_reason{reason=\"deferred\"} (with LoRA and other holds), not apart",
	"stage.transfer":              "vllm:nixl_xfer_time_seconds (vLLM 0.11.1+ with the NixlConnector), on the decode instance that pulls the KV",
	"cond.disaggregated":          "scrape the prefill and decode instances together: vllm:nixl_xfer_time_seconds marks a decode instance, one generated token per request a prefill instance (vLLM exports no role)",
	"cond.prefill_side":           "scrape the prefill and decode instances together: a prefill instance generates one token per request and pulls no KV (vLLM exports no role)",
	"cond.max_loras":              "label max_lora of vllm:lora_requests_info (--max-loras)",
	"service.lora_held":           "vllm:num_requests_waiting_by_reason{reason=\"deferred\"} (vLLM from 2026-04; it counts requests held by the LoRA budget or a KV transfer)",
	"cond.spec_tokens":            "vllm:spec_decode_num_draft_tokens_total ÷ vllm:spec_decode_num_drafts_total",
	"service.spec_accept_length":  "1 + vllm:spec_decode_num_accepted_tokens_total ÷ vllm:spec_decode_num_drafts_total, or Mean acceptance length in the SpecDecoding metrics log line",
	"service.spec_acceptance":     "vllm:spec_decode_num_accepted_tokens_total ÷ vllm:spec_decode_num_draft_tokens_total",
	"stage.ttft":                  "exported by vLLM V1 (0.8+) as vllm:time_to_first_token_seconds; scrape /metrics or query Prometheus",
}

// Name is the newest exposed name of a key, for readers that build a window
// from something other than /metrics (server logs).
func Name(key string) string {
	m, _ := Engine.ByKey(key)
	return m.Names[0]
}
