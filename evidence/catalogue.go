package evidence

import (
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Field is one catalogue entry: a path rules may read.
type Field struct {
	Path    string `json:"path"`
	Layer   string `json:"layer"`
	Unit    string `json:"unit"`
	Meaning string `json:"meaning"`
	How     string `json:"how"`
	// Dist is the path of the distribution this field belongs to ("" if none);
	// reading any of its fields but count needs enough samples.
	Dist string `json:"-"`
	// Series is the path of the gauge summary this field belongs to ("" if
	// none); reading it needs enough samples.
	Series string `json:"-"`
	index  []int
}

// node documents a scalar, a Dist or a Series. Units: s, tokens, count,
// bytes/s, ratio (a share, 0 to 1, printed as a percent) and multiple (one
// number over another, printed as 3.2×).
type node struct{ unit, meaning, how string }

var docs = map[string]node{
	"cond.prompt_tokens":          {"tokens", "prompt length per finished request", "the engine's prompt-length histogram; scrape its /metrics or query Prometheus"},
	"cond.computed_prompt_tokens": {"tokens", "prompt tokens actually computed (prompt minus prefix-cache hits) per request", "the engine's histogram of prompt tokens computed after prefix-cache hits"},
	"cond.output_tokens":          {"tokens", "generated tokens per finished request", "the engine's output-length histogram; scrape its /metrics or query Prometheus"},
	"cond.max_tokens":             {"tokens", "max_tokens requested per request (only when the client sets it)", "the engine's max_tokens histogram; clients must send max_tokens"},
	"cond.block_size":             {"tokens", "KV cache block size", "the engine's KV cache configuration metrics"},
	"cond.gpu_blocks":             {"blocks", "KV cache blocks on the GPU", "the engine's KV cache configuration metrics"},
	"cond.kv_capacity_tokens":     {"tokens", "tokens the KV cache holds (blocks × block size, all engines)", "the engine's KV cache configuration metrics"},
	"cond.gpu_memory_utilization": {"ratio", "share of GPU memory the engine may take (vLLM's gpu-memory-utilization)", "the engine's KV cache configuration metrics"},
	"cond.prefix_caching":         {"bool", "1 when automatic prefix caching is on, 0 when off", "the engine's KV cache configuration metrics"},
	"cond.kv_cache_fp8":           {"bool", "1 when the KV cache is stored in fp8, 0 when in the model's own type", "the engine's KV cache configuration metrics"},
	"cond.engines":                {"count", "data-parallel engines seen (engine label values)", "any V1 metric's engine label"},
	"cond.weight_bytes":           {"bytes", "size of the model's weights", "a preset for well-known served model names, or models: {NAME: {weight_bytes: N}} in llmdoctor.yaml"},
	"cond.moe":                    {"bool", "1 when the model is a mixture of experts, 0 when it is dense", "a preset for well-known served model names, or models: {NAME: {moe: true}} in llmdoctor.yaml"},
	"cond.prompt_len_cv":          {"ratio", "spread of prompt lengths (standard deviation ÷ mean); near 0 means every prompt has the same length", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV)"},
	"cond.prompt_len_distinct":    {"count", "distinct prompt lengths seen (counted up to 1000)", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV)"},
	"cond.prompt_ttft_slope":      {"s", "prefill cost per 1000 prompt tokens: the slope of TTFT against prompt length (robust fit)", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV) with varied prompt lengths"},
	"cond.prompt_ttft_intercept":  {"s", "TTFT of an empty prompt: fixed scheduling and network overhead (intercept of the fit)", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV) with varied prompt lengths"},
	"cond.prompt_ttft_r2":         {"ratio", "how well prompt length explains TTFT (R² of the fit)", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV) with varied prompt lengths"},
	"cond.output_max_ratio":       {"ratio", "median of output tokens ÷ max_tokens: well below 1 means answers end early (EOS)", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV) with max_tokens per request"},
	"cond.open_loop":              {"bool", "1 when requests arrive at a set rate (open loop), 0 when the next is sent as one returns (request_rate inf)", "a benchmark result JSON"},
	"cond.max_concurrency":        {"requests", "the benchmark's cap on requests in flight", "a benchmark result JSON with max_concurrency"},
	"cond.stage_metrics":          {"bool", "1 when the server exports per-request queue and prefill times, 0 when it does not", "scrape the engine's /metrics or query Prometheus"},
	"cond.tpot_tracked":           {"bool", "1 when time per output token is measured apart from TTFT (per-request TPOT or inter-token latency histogram, or client records)", "the engine's inter-token latency or per-request TPOT histogram, or request files (a benchmark result or per-request records)"},
	"cond.target_ttft_p99":        {"s", "the TTFT p99 a healthy verdict needs (default 2 s for interactive serving)", "slo: in llmdoctor.yaml or --slo ttft_p99=2s"},
	"cond.target_tpot":            {"s", "the median time per output token a healthy verdict needs (default 50 ms: 20 tokens/s)", "slo: in llmdoctor.yaml or --slo tpot_p50=50ms"},
	"cond.target_e2e_p99":         {"s", "the end-to-end p99 a healthy verdict needs (default: the TTFT target + p99 output tokens × the per-token target)", "slo: in llmdoctor.yaml or --slo e2e_p99=30s; by default needs the output-length histogram"},
	"cond.ttft_from_arrival":      {"bool", "1 while nothing contradicts that the server's TTFT starts at arrival and so holds the queue wait; 0 when queue + prefill exceed TTFT, or requests wait and end-to-end holds time outside TTFT and decode", "the engine's TTFT, queue, prefill, decode and end-to-end histograms"},
	"cond.window_seconds":         {"s", "length of the observed window", "two snapshots, or a live scrape over a duration"},
	"cond.speculative":            {"bool", "1 when speculative decoding runs, 0 when the engine shows it off", "the engine's speculative decoding metrics or log lines"},
	"cond.spec_tokens":            {"tokens", "tokens drafted per request per verify step (num_speculative_tokens)", "the engine's speculative decoding draft counters"},
	"cond.lora":                   {"bool", "1 when the engine serves LoRA adapters", "the engine's LoRA metrics, exported when LoRA is enabled"},
	"cond.max_loras":              {"count", "LoRA adapter slots of a running batch: the most distinct adapters it may hold", "the engine's LoRA metrics"},
	"cond.router":                 {"bool", "1 when a router's metrics were read: a router picks the replica for each request", "scrape the router's /metrics (llm-d's router, the Gateway API inference extension's endpoint picker) beside the engines', or query Prometheus"},
	"cond.prefill_side":           {"bool", "1 on the prefill instances of a deployment that runs prefill and decode apart: their TTFT is all prefill by design, and only part of what users wait", "the role of each instance, as for cond.disaggregated"},
	"cond.disaggregated":          {"bool", "1 when the target is one side (prefill or decode instances) of a deployment that runs prefill and decode apart", "the role of each instance: its labels, or its traffic (a decode instance pulls KV, a prefill instance gives one token per request)"},

	"stage.ttft":                     {"s", "time to first token, including queue wait and API-server time", "the engine's time-to-first-token histogram; scrape its /metrics or query Prometheus"},
	"stage.queue":                    {"s", "time from queued to first scheduled, per request", "the engine's per-request queue-time histogram"},
	"stage.prefill":                  {"s", "time from first scheduled to first token, per request", "the engine's per-request prefill-time histogram"},
	"stage.decode":                   {"s", "time from first to last token, per request", "the engine's per-request decode-time histogram"},
	"stage.inference":                {"s", "time from first scheduled to last token, per request", "the engine's per-request inference-time histogram"},
	"stage.itl":                      {"s", "gap between engine steps while decoding (inter-token latency)", "the engine's inter-token latency histogram"},
	"stage.tpot":                     {"s", "per-request time per output token after the first", "the engine's per-request time-per-output-token histogram"},
	"stage.itl_stalls":               {"count", "inter-token gaps longer than 500 ms in the window: each is one stream frozen for half a second or more", "the engine's inter-token latency histogram with a bucket bound at 0.5 s"},
	"stage.itl_stall_seconds":        {"s", "time streams spent frozen in inter-token gaps longer than 500 ms, summed over streams (estimated from the buckets, erring low)", "the engine's inter-token latency histogram with a bucket bound at 0.5 s"},
	"stage.ttft_p99_steps":           {"s", "TTFT p99 of each step of the window (steps with fewer than 10 first tokens are left out)", "several live scrapes or a Prometheus query; two snapshots have one step only"},
	"stage.ttft_p99_trend":           {"ratio", "change of TTFT p99 across the window by a least-squares line, relative to its mean: 1 means it rose by its own mean", "at least 4 steps with TTFT samples: live scrapes or a Prometheus query"},
	"stage.decode_floor":             {"s", "the physical floor of time per output token: weight bytes ÷ (peak HBM bandwidth × GPUs)", "needs cond.weight_bytes and DCGM (GPU model and count)"},
	"stage.ttft_p99_at_least":        {"s", "the least TTFT p99 can be: the lower bound of the histogram bucket it was interpolated in (the value itself where exact)", "the engine's TTFT histogram"},
	"stage.itl_p50_at_least":         {"s", "the least the median gap between tokens can be: the lower bound of the histogram bucket it was interpolated in (the value itself where exact)", "the engine's inter-token latency histogram"},
	"stage.transfer":                 {"s", "the decode instance's pull of a request's prompt KV from the prefill instance, per transfer", "the KV connector's transfer-time histogram (vLLM's NIXL metrics, ≥ 0.11.1) or its KV Transfer metrics log lines"},
	"stage.share.transfer":           {"ratio", "share of mean TTFT (on the decode instance) spent pulling the prompt's KV from the prefill instance", "needs stage.ttft and stage.transfer"},
	"stage.share_max.transfer":       {"ratio", "upper bound of the KV pull's share of mean TTFT (its share where known)", "needs stage.ttft and stage.transfer"},
	"stage.upstream_mean":            {"s", "the prefill side's time (its queue, prefill and KV push) inside the TTFT of a decode side that times from the client's request", "the prefill side's end-to-end histogram, beside the decode side's TTFT (SGLang split deployments)"},
	"stage.front_mean":               {"s", "mean TTFT not spent in queue or prefill: API server, tokenization, IPC", "needs stage.ttft, stage.queue and stage.prefill"},
	"stage.share.queue":              {"ratio", "share of mean TTFT spent waiting for the scheduler", "needs stage.ttft and stage.queue (the queue-time histogram)"},
	"stage.share.prefill":            {"ratio", "share of mean TTFT spent computing the prompt", "needs stage.ttft and stage.prefill (the prefill-time histogram)"},
	"stage.share.front":              {"ratio", "share of mean TTFT spent before the engine saw the request (API server, tokenizer)", "needs stage.ttft, stage.queue and stage.prefill"},
	"stage.share.decode":             {"ratio", "share of mean end-to-end latency spent generating tokens after the first", "needs stage.decode and service.e2e"},
	"stage.budget.e2e":               {"s", "mean end-to-end latency the budget splits", "the engine's end-to-end latency histogram"},
	"stage.budget.first_token":       {"s", "mean time users wait for the first token: queue + prefill + front (queue added when the server's TTFT leaves it out)", "the engine's TTFT histogram, and its queue and prefill histograms"},
	"stage.budget.decode":            {"s", "mean decode time in the budget, as the decode-time histogram measured it", "the engine's decode-time histogram"},
	"stage.budget.unexplained":       {"s", "mean end-to-end − first token − decode: time in no stage the server times (negative when the parts exceed the whole)", "the engine's end-to-end, TTFT and decode-time histograms"},
	"stage.budget.unexplained_share": {"ratio", "unexplained time ÷ mean end-to-end (negative when the parts exceed the whole)", "the engine's end-to-end, TTFT and decode-time histograms"},
	"stage.budget.queue_share":       {"ratio", "mean queue wait ÷ mean end-to-end", "the engine's queue-time and end-to-end histograms"},
	"stage.share_max.queue":          {"ratio", "upper bound of the queue's share of mean TTFT (its share where known; queue ÷ (queue + prefill) when TTFT is withheld)", "needs stage.queue and stage.prefill"},
	"stage.share_max.prefill":        {"ratio", "upper bound of prefill's share of mean TTFT (its share where known; prefill ÷ (queue + prefill) when TTFT is withheld)", "needs stage.queue and stage.prefill"},
	"stage.share_max.front":          {"ratio", "upper bound of the front end's share of mean TTFT (its share where known)", "needs stage.ttft, stage.queue and stage.prefill"},
	"stage.share_max.decode":         {"ratio", "upper bound of decode's share of mean end-to-end (its share where known; (end-to-end − TTFT) ÷ end-to-end without the decode histogram)", "needs service.e2e and stage.ttft"},
	"stage.share_max.itl_tail":       {"ratio", "upper bound of the ITL tail's share (its share where known)", "needs stage.itl"},
	"stage.share.itl_tail":           {"ratio", "share of the p99 gap between tokens above the median gap: (ITL p99 − p50) ÷ p99", "needs stage.itl (inter-token latency histogram)"},

	"service.e2e":                    {"s", "end-to-end request latency on the server", "the engine's end-to-end latency histogram; scrape its /metrics or query Prometheus"},
	"service.client_ttft":            {"s", "time to first token as the client measured it", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV)"},
	"service.client_tpot":            {"s", "per-request time per output token as the client measured it", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV)"},
	"service.client_itl":             {"s", "gaps between streamed chunks as the client saw them", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV) with per-request ITLs"},
	"service.client_e2e":             {"s", "end-to-end latency as the client measured it", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV)"},
	"service.client_requests":        {"requests", "requests in the request-level source", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV)"},
	"service.client_failed_share":    {"ratio", "share of the source's requests that failed", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV)"},
	"service.streaming_share":        {"ratio", "share of multi-token requests whose tokens came one by one (streamed): gaps recorded per token, or time between first and last token", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV)"},
	"service.warmup_ratio":           {"multiple", "mean TTFT of the first 20 requests ÷ median TTFT: far above 1 means the run had no warm-up", "a benchmark result (vllm bench serve --save-result --save-detailed) or per-request records (JSONL/CSV) in arrival order"},
	"service.network_share":          {"ratio", "share of client TTFT spent outside the server (network, client queueing)", "per-request records with server_ttft"},
	"service.e2e_p99_at_least":       {"s", "the least end-to-end p99 can be: the lower bound of the histogram bucket it was interpolated in (the value itself where exact)", "the engine's end-to-end latency histogram"},
	"service.finished":               {"requests", "requests finished in the window, any reason", "the engine's finished-requests counter"},
	"service.request_rate":           {"req/s", "finished requests per second", "the engine's finished-requests counter over a window (two snapshots or a live scrape)"},
	"service.errors":                 {"requests", "requests finished with reason error", "the engine's finished-requests counter by finish reason"},
	"service.aborts":                 {"requests", "requests aborted by the client", "the engine's aborted-requests count"},
	"service.failed":                 {"requests", "finished requests that errored or were aborted", "the engine's finished-requests counter by finish reason, or its aborted-requests counter"},
	"service.failed_share":           {"ratio", "share of finished requests that errored or were aborted", "the engine's finished-requests counter by finish reason"},
	"service.length_share":           {"ratio", "share of finished requests cut off at max_tokens or max_model_len", "the engine's finished-requests counter by finish reason (length)"},
	"service.prompt_tps":             {"tokens/s", "prompt tokens processed per second (cached included)", "the engine's prompt-tokens counter over a window"},
	"service.generation_tps":         {"tokens/s", "tokens generated per second", "the engine's generated-tokens counter over a window"},
	"service.preemptions":            {"count", "preemptions in the window (KV blocks ran out)", "the engine's preemption counter"},
	"service.running":                {"requests", "requests in the running batch", "the engine's running-requests gauge"},
	"service.waiting":                {"requests", "requests waiting to be scheduled (for capacity, when vLLM says why)", "the engine's waiting-requests gauge"},
	"service.swapped":                {"requests", "requests swapped out to CPU memory because the KV cache ran out (vLLM V0)", "vLLM V0's swapped-requests gauge, or its stats log line (Swapped)"},
	"service.stream_tps":             {"tokens/s", "tokens generated per second per running request: the decode speed one stream sees (generation throughput ÷ mean running), where no histogram times the tokens", "the engine's periodic stats log, or its generated-tokens counter and running gauge on a server without an inter-token latency histogram"},
	"service.progress":               {"bool", "1 when the engine computed or generated any token in the window (or since start, for one snapshot), 0 when it did neither", "the engine's prompt- and generated-tokens counters, or its periodic stats log"},
	"service.queue_top_share":        {"ratio", "share of all instances' queue wait (seconds summed over requests) that the instance with the most holds", "two or more instances of the same model, each with its queue-time histogram"},
	"service.transfer_waiting":       {"requests", "requests on a split deployment's decode instance whose KV is on its way from the prefill instance", "SGLang's num_decode_transfer_queue_reqs gauge, or #transfer-req in its decode log lines"},
	"service.router_decision":        {"s", "time the router takes to pick a replica for a request", "the router's scheduling-latency histogram (llm-d's llm_d_epp_scheduler_e2e_duration_seconds, the inference extension's inference_extension_scheduler_e2e_duration_seconds): scrape the router's /metrics beside the engines' or query Prometheus"},
	"service.router_queue_top_share": {"ratio", "the busiest endpoint's share of the queued requests, as the router sees its endpoints' queues (mean over the readings where any were queued)", "the router's per-endpoint queue gauge (llm_d_epp_per_endpoint_queue_size or inference_pool_per_pod_queue_size)"},
	"service.instances":              {"count", "instances (replicas) serving the target", "scrape several replicas, or query Prometheus (instance label)"},
	"service.ttft_p99_outlier_ratio": {"multiple", "the largest TTFT p99 of one instance divided by the median of the other instances'", "two or more instances of the same model"},
	"service.waiting_outlier_ratio":  {"multiple", "the largest mean waiting queue of one instance, plus one, over the median of the others', plus one", "two or more instances of the same model"},
	"service.iteration_tokens":       {"tokens", "tokens per engine step (batch size in tokens)", "the engine's tokens-per-step histogram"},
	"service.spec_accept_length":     {"tokens", "tokens a request keeps per speculative verify step: the accepted drafts plus the target model's own (1 means no draft was ever accepted)", "the engine's speculative decoding metrics or log lines"},
	"service.spec_acceptance":        {"ratio", "share of drafted tokens the target model accepted", "the engine's speculative decoding draft and accepted-token counters"},
	"service.lora_held":              {"requests", "requests waiting for a LoRA adapter slot: their adapter is not in the running batch and every slot holds another", "the engine's LoRA metrics and waiting requests"},

	"resource.kv_usage":           {"ratio", "fraction of KV cache blocks in use (averaged over engines and instances)", "the engine's KV cache usage gauge"},
	"resource.kv_peak":            {"ratio", "highest KV cache usage of any one engine or replica at any reading (resource.kv_usage averages them)", "the engine's KV cache usage gauge"},
	"resource.kv_per_request":     {"ratio", "share of its engine's KV cache one running request holds on average (mean KV usage ÷ mean running requests per engine): what one more request of that size needs", "the engine's KV cache usage and running-requests gauges"},
	"resource.cpu_kv_usage":       {"ratio", "fraction of CPU swap-space KV blocks in use (vLLM V0): above zero means requests were swapped out", "vLLM V0's CPU cache usage gauge, or its stats log line (CPU KV cache usage)"},
	"resource.prefix_hit_rate":    {"ratio", "prefix cache hits ÷ queries, in tokens", "the engine's prefix cache hit and query counters"},
	"resource.gpus":               {"count", "GPUs whose DCGM series belong to the target", "scrape dcgm-exporter alongside the server, or query it through Prometheus"},
	"resource.dram_active":        {"ratio", "share of cycles the GPU memory interface moved data (DRAM_ACTIVE); about 0.8 is the practical ceiling", "DCGM_FI_PROF_DRAM_ACTIVE (DRAM_UTIL_RATIO in exporter 4.9+): profiling metrics must be enabled"},
	"resource.gr_active":          {"ratio", "share of time a kernel context was active on the GPU (GR_ENGINE_ACTIVE)", "DCGM_FI_PROF_GR_ENGINE_ACTIVE (GR_ENGINE_UTIL_RATIO in exporter 4.9+)"},
	"resource.sm_active":          {"ratio", "share of cycles SMs had work (SM_ACTIVE)", "DCGM_FI_PROF_SM_ACTIVE, off by default in dcgm-exporter: add it to the counters CSV"},
	"resource.tensor_active":      {"ratio", "share of cycles the tensor pipes were busy (PIPE_TENSOR_ACTIVE)", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (TENSOR_UTIL_RATIO in exporter 4.9+)"},
	"resource.gpu_util":           {"ratio", "share of time any kernel ran (GPU_UTIL): says nothing about how busy the GPU is", "DCGM_FI_DEV_GPU_UTIL (a percentage; GPU_UTIL_RATIO in exporter 4.9+)"},
	"resource.fb_used":            {"ratio", "share of GPU framebuffer memory in use", "DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE, or FB_USED_RATIO"},
	"resource.gpu_profiling":      {"bool", "1 when DCGM exports profiling metrics (DRAM, SM, tensor activity), 0 when it exports only device metrics such as GPU_UTIL", "scrape dcgm-exporter; enable DCP profiling metrics"},
	"resource.peak_bandwidth":     {"bytes/s", "peak HBM bandwidth of the target's GPU model", "the modelName label of DCGM series, matched against llmdoctor's GPU table"},
	"resource.achieved_bandwidth": {"bytes/s", "memory bandwidth achieved per GPU: DRAM_ACTIVE × peak", "DCGM DRAM_ACTIVE and a known GPU model"},
	"resource.prefix_queries":     {"tokens", "prefix cache lookups in the window", "the engine's prefix cache query counter"},
}

var subMeaning = map[string]string{
	"count": "observations of", "mean": "mean", "p50": "median", "p90": "p90", "p95": "p95",
	"p99": "p99", "max": "maximum", "min": "minimum", "last": "last value of",
	"frac_positive": "fraction of samples above zero of", "samples": "samples taken of",
}

var (
	catOnce sync.Once
	catList []Field
	catMap  map[string]Field
)

func catalogue() ([]Field, map[string]Field) {
	catOnce.Do(func() {
		catMap = map[string]Field{}
		walkFields(reflect.TypeOf(Values{}), "", "", nil, func(f Field) {
			catList = append(catList, f)
			catMap[f.Path] = f
		})
		sort.Slice(catList, func(i, j int) bool { return catList[i].Path < catList[j].Path })
	})
	return catList, catMap
}

func walkFields(t reflect.Type, prefix, layer string, index []int, emit func(Field)) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name := sf.Tag.Get("expr")
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		idx := append(append([]int{}, index...), i)
		l := layer
		if l == "" {
			l = name
		}
		switch sf.Type {
		case reflect.TypeOf(Dist{}), reflect.TypeOf(Series{}):
			d := docs[path]
			isDist := sf.Type == reflect.TypeOf(Dist{})
			for j := 0; j < sf.Type.NumField(); j++ {
				sub := sf.Type.Field(j).Tag.Get("expr")
				f := Field{Path: path + "." + sub, Layer: l, Unit: d.unit, How: d.how,
					Meaning: subMeaning[sub] + " " + d.meaning, index: append(append([]int{}, idx...), j)}
				if sub == "count" || sub == "samples" || sub == "frac_positive" {
					f.Unit = map[string]string{"count": "count", "samples": "count", "frac_positive": "ratio"}[sub]
				}
				if isDist {
					f.Dist = path
				} else {
					f.Series = path
				}
				emit(f)
			}
		default:
			if sf.Type.Kind() == reflect.Struct {
				walkFields(sf.Type, path, l, idx, emit)
				continue
			}
			d := docs[path]
			emit(Field{Path: path, Layer: l, Unit: d.unit, Meaning: d.meaning, How: d.how, index: idx})
		}
	}
}

// Fields lists every path rules may read, sorted.
func Fields() []Field { l, _ := catalogue(); return l }

// Lookup finds a catalogue entry by path.
func Lookup(path string) (Field, bool) {
	_, m := catalogue()
	f, ok := m[path]
	return f, ok
}

// Get returns the value of f in v.
func (v *Values) Get(f Field) float64 {
	return reflect.ValueOf(v).Elem().FieldByIndex(f.index).Float()
}

// Set stores x at f in v.
func (v *Values) Set(f Field, x float64) {
	reflect.ValueOf(v).Elem().FieldByIndex(f.index).SetFloat(x)
}

// HowOf is how to obtain the node a path belongs to (a field, or a
// distribution or gauge as a gap names it); false when the catalogue does
// not document it.
func HowOf(path string) (string, bool) {
	d, ok := docs[Node(path)]
	return d.how, ok
}

// Node returns the documented node (a Dist, a Series or a scalar) a path
// belongs to: "stage.ttft" for "stage.ttft.p99".
func Node(path string) string {
	if _, ok := docs[path]; ok {
		return path
	}
	if p := parent(path); p != "" {
		if _, ok := docs[p]; ok {
			return p
		}
	}
	return path
}

// Tree returns the values as nested maps keyed by expr names, for templates
// and JSON. Missing values are left out.
func (v *Values) Tree() map[string]any { return v.TreeOf(Fields()) }

// TreeOf is Tree restricted to the given fields.
func (v *Values) TreeOf(fields []Field) map[string]any {
	root := map[string]any{}
	for _, f := range fields {
		x := v.Get(f)
		if !Present(x) {
			continue
		}
		m := root
		parts := strings.Split(f.Path, ".")
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = x
	}
	return root
}

// unboundedRatios are the ratio fields that can leave 0..1: a trend, a
// spread, a fit and a signed remainder.
var unboundedRatios = map[string]bool{
	"stage.ttft_p99_trend":           true,
	"cond.prompt_len_cv":             true,
	"cond.prompt_ttft_r2":            true,
	"stage.budget.unexplained_share": true,
}

// Share says whether path is a share: a ratio within 0 and 1 whatever the
// data (a KV cache's usage, a stage's share of TTFT), so that a threshold
// compared with it must be one too.
func Share(path string) bool {
	f, ok := Lookup(path)
	if !ok || f.Unit != "ratio" {
		return false
	}
	for _, p := range []string{f.Path, f.Dist, f.Series} {
		if unboundedRatios[p] {
			return false
		}
	}
	return true
}
