// Package sglang registers SGLang's catalogue: its metric names across
// releases (sglang: from the server, sglang_ through its model gateway), how
// an SGLang user obtains each evidence field, and its flag for each knob.
// Names and semantics follow python/sglang/srt/observability/metrics_collector.py
// (python/sglang/srt/metrics/collector.py before v0.5.10) in sgl-project/sglang.
package sglang

import (
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// names gives a family under both prefixes: the engine writes sglang:, the
// model gateway rewrites every colon to an underscore.
func names(bases ...string) []string {
	var out []string
	for _, p := range []string{"sglang:", "sglang_"} {
		for _, b := range bases {
			out = append(out, p+b)
		}
	}
	return out
}

// total is the priority="" series: with priority scheduling, queue gauges
// carry the total there plus one series per priority, which would double
// count. An absent label reads as "" too.
var total = []string{"priority", ""}

// Catalogue lists every SGLang metric llmdoctor reads.
var Catalogue = []engine.Metric{
	{Key: engine.TTFT, Names: names("time_to_first_token_seconds"), Kind: engine.Histogram, Unit: "s",
		Meaning: "time to first token per request on the tokenizer's clock (includes tokenization, queue and prefill); streaming requests only where is_streaming is exported",
		Obtain:  "start the server with --enable-metrics; is_streaming (v0.5.17+) keeps non-streaming requests, whose first chunk comes after 50 tokens, out of TTFT",
		// Non-streaming requests reach the tokenizer in 50-token chunks: their
		// "first token" is the fiftieth, or the last.
		Exclude: []string{"is_streaming", "false"}},
	{Key: engine.QueueTime, Names: names("queue_time_seconds", "queue_time_s"), Kind: engine.Histogram, Unit: "s",
		Meaning: "time from entering the scheduler's waiting queue to the first forward batch, per request",
		Obtain:  "SGLang v0.5.3+ (queue_time_s in v0.5.2) with --enable-metrics"},
	{Key: engine.PrefillTime, Names: names("per_stage_req_latency_seconds"), Kind: engine.Histogram, Unit: "s",
		Match:   []string{"stage", "prefill_forward"},
		Meaning: "time from the first forward to the end of prefill (all chunks), per request",
		Obtain:  "SGLang v0.5.4.post2+ with --enable-metrics (per_stage_req_latency_seconds{stage=\"prefill_forward\"})"},
	{Key: engine.StepLatency, Names: names("inter_token_latency_seconds"), Kind: engine.Histogram, Unit: "s", PerToken: true,
		Meaning: "gap per output token (a chunk's gap divided over its tokens, counted once per token)",
		Obtain:  "SGLang v0.4.3.post3+ with --enable-metrics"},
	{Key: engine.E2E, Names: names("e2e_request_latency_seconds"), Kind: engine.Histogram, Unit: "s",
		Meaning: "request creation to finish on the tokenizer's clock", Obtain: "start the server with --enable-metrics"},
	{Key: engine.PromptLen, Names: names("prompt_tokens_histogram"), Kind: engine.Histogram, Unit: "tokens",
		Meaning: "prompt tokens per finished request",
		Obtain:  "always on with --enable-metrics from v0.5.11; before, add --collect-tokens-histogram"},
	{Key: engine.GenerationLen, Names: names("generation_tokens_histogram"), Kind: engine.Histogram, Unit: "tokens",
		Meaning: "output tokens per finished request",
		Obtain:  "always on with --enable-metrics from v0.5.11; before, add --collect-tokens-histogram"},
	{Key: engine.ComputedPrompt, Names: names("uncached_prompt_tokens_histogram"), Kind: engine.Histogram, Unit: "tokens",
		Meaning: "prompt tokens not served from the prefix cache, per finished request", Obtain: "SGLang v0.5.12+"},
	{Key: engine.PromptTokens, Names: names("prompt_tokens_total"), Kind: engine.Counter, Unit: "tokens",
		Meaning: "prompt tokens of finished requests, cached included", Obtain: "start the server with --enable-metrics"},
	{Key: engine.GenTokens, Names: names("generation_tokens_total"), Kind: engine.Counter, Unit: "tokens",
		Meaning: "output tokens of finished requests", Obtain: "start the server with --enable-metrics"},
	{Key: engine.Preemptions, Names: names("num_retracted_requests_total"), Kind: engine.Counter, Unit: "count",
		Meaning: "requests retracted (preempted) because the KV pool ran out during decode", Obtain: "SGLang v0.5.7+"},
	{Key: engine.RequestSuccess, Names: names("num_requests_total"), Kind: engine.Counter, Unit: "requests",
		Meaning: "requests whose final output the tokenizer processed (no finish reason)", Obtain: "SGLang v0.4.1.post6+"},
	{Key: engine.RequestAborts, Names: names("num_aborted_requests_total"), Kind: engine.Counter, Unit: "requests",
		Meaning: "requests aborted (client disconnect or abort API)", Obtain: "SGLang v0.4.7+"},
	{Key: engine.PrefixQueries, Names: names("prompt_tokens_total"), Kind: engine.Counter, Unit: "tokens",
		Meaning: "prompt tokens of finished requests: the prefix cache's lookups", Obtain: "start the server with --enable-metrics"},
	{Key: engine.PrefixHits, Names: names("cached_tokens_total"), Kind: engine.Counter, Unit: "tokens",
		Meaning: "prompt tokens of finished requests served from the prefix cache (device, host or storage)", Obtain: "SGLang v0.4.3.post4+"},
	{Key: engine.Running, Names: names("num_running_reqs"), Kind: engine.Gauge, Unit: "requests", Match: total,
		Meaning: "requests in the running batch, per scheduler", Obtain: "start the server with --enable-metrics"},
	{Key: engine.Waiting, Names: names("num_queue_reqs"), Kind: engine.Gauge, Unit: "requests", Match: total,
		Meaning: "requests in the scheduler's waiting queue", Obtain: "start the server with --enable-metrics"},
	{Key: engine.KVUsage, Names: names("token_usage"), Kind: engine.Gauge, Unit: "ratio", Match: total,
		Meaning: "share of the KV pool in use, reusable prefix cache counted free (the fullest pool on hybrid models)",
		Obtain:  "start the server with --enable-metrics"},
	{Key: engine.KVCapacity, Names: names("max_total_num_tokens"), Kind: engine.Gauge, Unit: "tokens",
		Meaning: "tokens the KV pool holds, per scheduler", Obtain: "SGLang v0.5.6+"},
	{Key: engine.SpecAcceptLength, Names: names("spec_accept_length"), Kind: engine.Gauge, Unit: "tokens", Match: total,
		Meaning: "accepted draft tokens plus one per verify step over the last decode window (0 without speculative decoding)",
		Obtain:  "SGLang v0.4.1.post7+ with --enable-metrics"},
	{Key: engine.SpecAcceptRate, Names: names("spec_accept_rate"), Kind: engine.Gauge, Unit: "ratio", Match: total,
		Meaning: "accepted drafts ÷ drafted tokens over the last decode window; before v0.5.11 the accepted count included the target model's own token, so it reads high",
		Obtain:  "SGLang v0.5.3.post2+ with --enable-metrics"},
	{Key: engine.LoRASlots, Names: names("lora_pool_slots_total"), Kind: engine.Gauge, Unit: "adapters", Match: total,
		Meaning: "LoRA adapter slots of a running batch (--max-loras-per-batch)", Obtain: "SGLang v0.5.7+ with LoRA enabled"},
	{Key: engine.LoRASlotsUsed, Names: names("lora_pool_slots_used"), Kind: engine.Gauge, Unit: "adapters", Match: total,
		Meaning: "distinct LoRA adapters of the running batch", Obtain: "SGLang v0.5.7+ with LoRA enabled"},
	{Key: engine.PageSize, Names: names("page_size"), Kind: engine.Gauge, Unit: "tokens",
		Meaning: "KV cache page size", Obtain: "SGLang v0.5.11+"},
	{Key: engine.KVTransferTime, Names: names("kv_transfer_latency_ms"), Kind: engine.Histogram, Unit: "ms", Scale: 0.001,
		Meaning: "time to push one request's KV cache to the decode instance, from its last chunk sent to the transfer's success, observed on the prefill instance of a split deployment",
		Obtain:  "SGLang v0.5.10+ with --disaggregation-mode prefill (gauges that always read 0 before)"},
	{Key: engine.KVTransferBytes, Names: names("kv_transfer_total_mb"), Kind: engine.Histogram, Unit: "MB", Scale: 1e6,
		Meaning: "size of one request's KV cache pushed to the decode instance", Obtain: "SGLang v0.5.10+ with --disaggregation-mode prefill"},
	{Key: engine.TransferQueue, Names: names("num_decode_transfer_queue_reqs"), Kind: engine.Gauge, Unit: "requests",
		Meaning: "requests on a split deployment's decode instance whose KV is on its way from the prefill instance (not in num_queue_reqs)",
		Obtain:  "SGLang with --disaggregation-mode decode; its log's #transfer-req field"},
}

// Engine is SGLang's registration.
var Engine = &engine.Engine{
	Name:      "sglang",
	Title:     "SGLang",
	Catalogue: Catalogue,
	// SGLang retracts requests under KV pressure; it never swaps them out.
	NoSwap: func(*window.Window) bool { return true },
	// The LoRA pool gauges (v0.5.7+) exist only with LoRA enabled; an
	// older server with LoRA reads as without.
	LoRARegistered: func(*window.Window) bool { return true },
	Members:        []string{"instance", "dp_rank"},
	// With --enable-metrics-for-all-schedulers every tensor-parallel rank
	// reports its scheduler's numbers: copies, not parts. Pipeline stages
	// and expert-parallel ranks serve the same requests and token pool
	// (tokens per layer) too. Data-parallel ranks (dp_rank, also the
	// attention-DP rank) are separate schedulers and add up.
	Copies: []string{"tp_rank", "pp_rank", "moe_ep_rank"},
	// Split deployments: engine_type says the side; the router sends a
	// request to both sides at once, so the decode side's TTFT runs from
	// the client's request; its queue time starts when the KV has arrived.
	RoleLabel:             "engine_type",
	DecodeTTFTFromArrival: true,
	How:                   how,
	Knobs:                 knobs,
}

func init() { engine.Register(Engine) }

// knobs are SGLang's flags for the knobs next steps name (server_args.py in
// sgl-project/sglang); "" where SGLang has no such setting. A value is a
// flag, or flags with the value a step needs; never parenthesised, as steps
// often put a knob inside their own parentheses.
var knobs = map[string]string{
	"max_num_seqs": "--max-running-requests",
	// The chunk size bounds a prefill batch's tokens; --max-prefill-tokens
	// seldom binds, its real bound being the larger of it and the context
	// length.
	"max_num_batched_tokens": "--chunked-prefill-size",
	// SGLang has no plain fp8: fp8_e4m3 or fp8_e5m2.
	"kv_cache_fp8":           "--kv-cache-dtype fp8_e4m3",
	"gpu_memory_utilization": "--mem-fraction-static",
	"max_model_len":          "--context-length",
	// SGLang chunks one prompt at a time (one chunked request per prefill
	// batch), so what a long prompt holds a step for is the chunk size.
	"long_prefill_limits":   "a smaller --chunked-prefill-size, as SGLang prefills one long prompt at a time",
	"enable_prefix_caching": "no --disable-radix-cache",
	// Chunked prefill is on by default; decodes join prefill batches only
	// with --enable-mixed-chunk, which vLLM's chunked prefill always does.
	"mixed_chunked_prefill": "--enable-mixed-chunk",
	"api_server_count":      "--tokenizer-worker-num",
	"speculative_decoding":  "--speculative-algorithm",
	"max_loras":             "--max-loras-per-batch",
	// --speculative-num-steps drafts, --speculative-num-draft-tokens the
	// tokens verified (a tree with --speculative-eagle-topk above 1).
	"num_speculative_tokens": "--speculative-num-steps and --speculative-num-draft-tokens",
}

const enable = "start SGLang with --enable-metrics and scrape /metrics on its HTTP port (default 30000)"

// how says how an SGLang user obtains each field, and what SGLang offers
// where it has no such metric.
var how = map[string]string{
	"cond.prompt_tokens":          "sglang:prompt_tokens_histogram: always on with --enable-metrics from v0.5.11; before, add --collect-tokens-histogram",
	"cond.output_tokens":          "sglang:generation_tokens_histogram: always on with --enable-metrics from v0.5.11; before, add --collect-tokens-histogram",
	"cond.computed_prompt_tokens": "sglang:uncached_prompt_tokens_histogram (SGLang v0.5.12+)",
	"cond.max_tokens":             "SGLang exports no max_tokens histogram: give request files (a benchmark result or per-request records) with max_tokens per request",
	"cond.block_size":             "sglang:page_size (SGLang v0.5.11+)",
	"cond.gpu_blocks":             "SGLang counts its KV pool in tokens (sglang:max_total_num_tokens), not blocks",
	"cond.kv_capacity_tokens":     "sglang:max_total_num_tokens (SGLang v0.5.6+)",
	"cond.gpu_memory_utilization": "SGLang does not export --mem-fraction-static as a metric",
	"cond.prefix_caching":         "SGLang does not export whether the radix cache is on (it is unless --disable-radix-cache)",
	"cond.kv_cache_fp8":           "SGLang does not export its KV cache type (--kv-cache-dtype)",
	"cond.stage_metrics":          enable + "; queue time needs v0.5.3+, prefill time v0.5.4.post2+",
	"cond.tpot_tracked":           "sglang:inter_token_latency_seconds (SGLang v0.4.3.post3+; the older time_per_output_token_seconds included TTFT and is not read)",
	"stage.ttft":                  "sglang:time_to_first_token_seconds: " + enable + "; from v0.5.17 only streaming requests (is_streaming=\"true\") count, as a non-streaming request's first chunk comes after 50 tokens: send streaming requests",
	"stage.queue":                 "sglang:queue_time_seconds (SGLang v0.5.3+; queue_time_s in v0.5.2): upgrade an older server",
	"stage.prefill":               "sglang:per_stage_req_latency_seconds{stage=\"prefill_forward\"} (SGLang v0.5.4.post2+): upgrade an older server",
	"stage.decode":                "SGLang exports no decode-time histogram; its mean is derived as mean end-to-end − mean TTFT when both count the same requests",
	"stage.inference":             "SGLang exports no inference-time histogram",
	"stage.itl":                   "sglang:inter_token_latency_seconds (SGLang v0.4.3.post3+)",
	"stage.tpot":                  "SGLang has no per-request TPOT histogram: give request files (a benchmark result or per-request records)",
	"stage.itl_stalls":            "sglang:inter_token_latency_seconds buckets: gaps above 0.6 s, its first bucket bound past 0.5 s; counted once per token, so estimated under speculative decoding from the mean tokens a step",
	"stage.itl_stall_seconds":     "sglang:inter_token_latency_seconds buckets: gaps above 0.6 s, its first bucket bound past 0.5 s",
	"service.e2e":                 "sglang:e2e_request_latency_seconds: " + enable,
	"service.finished":            "sglang:num_requests_total (SGLang v0.4.1.post6+)",
	"service.request_rate":        "sglang:num_requests_total over a window",
	"service.errors":              "SGLang has no engine-error counter; sglang:http_responses_total by status code (v0.5.6.post2+) shows failed HTTP requests",
	"service.aborts":              "sglang:num_aborted_requests_total (SGLang v0.4.7+)",
	"service.failed":              "sglang:num_aborted_requests_total (SGLang v0.4.7+); SGLang has no engine-error counter",
	"service.failed_share":        "sglang:num_aborted_requests_total and sglang:num_requests_total",
	"service.length_share":        "SGLang's request counter has no finish reason: give request files (a benchmark result or per-request records) to see answers cut at max_tokens",
	"service.prompt_tps":          "sglang:prompt_tokens_total over a window",
	"service.generation_tps":      "sglang:generation_tokens_total over a window",
	"service.preemptions":         "sglang:num_retracted_requests_total (SGLang v0.5.7+)",
	"service.swapped":             "SGLang does not swap requests to CPU memory: it retracts them (service.preemptions)",
	"resource.cpu_kv_usage":       "SGLang does not swap requests to CPU memory: it retracts them (service.preemptions)",
	"service.running":             "sglang:num_running_reqs: " + enable,
	"service.waiting":             "sglang:num_queue_reqs: " + enable,
	"service.iteration_tokens":    "SGLang exports no tokens-per-step histogram (its realtime_tokens_total counts tokens by mode)",
	"resource.kv_usage":           "sglang:token_usage: " + enable,
	"resource.prefix_hit_rate":    "sglang:cached_tokens_total ÷ sglang:prompt_tokens_total (SGLang v0.4.3.post4+); the cache_hit_rate gauge covers the last prefill batch only and is not read",
	"resource.prefix_queries":     "sglang:prompt_tokens_total",
	"cond.speculative":            "sglang:spec_accept_length (SGLang v0.4.1.post7+): 0 without speculative decoding",
	"cond.lora":                   "sglang:lora_pool_slots_total (SGLang v0.5.7+), exported only with LoRA enabled",
	"service.transfer_waiting":    "sglang:num_decode_transfer_queue_reqs on a decode instance (--disaggregation-mode decode), or #transfer-req in its Decode batch log lines",
	"stage.transfer":              "sglang:kv_transfer_latency_ms (v0.5.10+; gauges that read 0 before), timed on the prefill instance: scrape both sides",
	"cond.disaggregated":          "the engine_type label (prefill, decode or unified) of SGLang's series: scrape both sides",
	"cond.prefill_side":           "the engine_type label (prefill, decode or unified) of SGLang's series",
	"cond.max_loras":              "sglang:lora_pool_slots_total (--max-loras-per-batch)",
	"service.lora_held":           "sglang:num_queue_reqs at the readings where sglang:lora_pool_slots_used is at sglang:lora_pool_slots_total: SGLang does not say which adapter a queued request wants",
	"cond.spec_tokens":            "SGLang exports the draft tokens per step only from v0.5.13 (sglang:spec_num_draft_tokens), which llmdoctor does not read yet",
	"service.spec_accept_length":  "sglang:spec_accept_length (SGLang v0.4.1.post7+), or accept len in the Decode batch log line",
	"service.spec_acceptance":     "sglang:spec_accept_rate (SGLang v0.5.3.post2+; before v0.5.11 it counts the target model's own token as accepted and reads high), or accept rate in the Decode batch log line",
}
