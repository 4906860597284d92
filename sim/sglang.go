package sim

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// SGLang's default bucket sets (python/sglang/srt/observability/utils.py and
// metrics_collector.py in sgl-project/sglang, v0.5.18).
var (
	sgTTFTBuckets  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sgITLBuckets   = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0}
	sgE2EBuckets   = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}
	sgQueueBuckets = []float64{0.000, 0.001, 0.005, 0.010, 0.050, 0.100, 0.200, 0.500, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
	sgTokBuckets   = []float64{100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 12500, 15000, 17500, 20000, 22500, 25000, 27500, 30000, 35000, 40000, 60000, 80000, 100000, 200000, 300000, 400000, 600000, 800000, 1000000, 1100000}
)

// sgStageBuckets is exponential_buckets(0.001, 1.62, 30).
func sgStageBuckets() []float64 {
	out := make([]float64, 30)
	for k := range out {
		out[k] = 0.001 * math.Pow(1.62, float64(k))
	}
	return out
}

// sglangHists mirror the engine's observations into SGLang's families and
// bucket sets; SGLang has no decode, inference, TPOT, max_tokens or
// tokens-per-step histograms.
type sglangHists struct {
	ttft, itl, e2e, queue, prefill, promptLen, genLen, uncached *hist
	// A split deployment's prefill instance times each KV push (ms),
	// sizes it (MB) and its speed (GB/s).
	xferMs, xferMB, xferSpeed *hist
}

func newSGLangHists(m *metrics) *sglangHists {
	s := &sglangHists{
		ttft:      newHist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", sgTTFTBuckets),
		itl:       newHist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", sgITLBuckets),
		e2e:       newHist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", sgE2EBuckets),
		queue:     newHist("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", sgQueueBuckets),
		prefill:   newHist("sglang:per_stage_req_latency_seconds", "The latency of each stage of requests.", sgStageBuckets()),
		promptLen: newHist("sglang:prompt_tokens_histogram", "Histogram of prompt token length.", sgTokBuckets),
		genLen:    newHist("sglang:generation_tokens_histogram", "Histogram of generation token length.", sgTokBuckets),
		uncached:  newHist("sglang:uncached_prompt_tokens_histogram", "Histogram of uncached prompt token length.", sgTokBuckets),
	}
	m.ttft.mirror, m.itl.mirror, m.e2e.mirror, m.queue.mirror = s.ttft, s.itl, s.e2e, s.queue
	m.prefill.mirror, m.promptLen.mirror, m.genLen.mirror, m.computed.mirror = s.prefill, s.promptLen, s.genLen, s.uncached
	s.xferMs = newHist("sglang:kv_transfer_latency_ms", "The transfer latency of the KV cache in ms.", []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000})
	s.xferMB = newHist("sglang:kv_transfer_total_mb", "The total size of the KV cache transferred in MB.", []float64{1, 5, 10, 50, 100, 500, 1000, 5000, 10000})
	s.xferSpeed = newHist("sglang:kv_transfer_speed_gb_s", "The transfer speed of the KV cache in GB/s.", []float64{0.1, 0.5, 1, 5, 10, 25, 50, 100, 200, 400})
	return s
}

// engineType is SGLang's engine_type label: prefill or decode on the two
// sides of a split deployment, unified otherwise.
func (e *Engine) engineType() string {
	switch {
	case e.decode != nil:
		return "prefill"
	case e.prefill != nil:
		return "decode"
	}
	return "unified"
}

// sglangCollector exposes the engine's metrics with SGLang's names and
// labels: tokenizer-side series carry model_name, engine_type (and
// is_streaming where SGLang adds it), scheduler-side series the rank labels.
type sglangCollector struct{ e *Engine }

func (c sglangCollector) Describe(chan<- *prometheus.Desc) {}

func (c sglangCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.e.m
	s := m.sg
	model := c.e.model.Served
	et := c.e.engineType()
	tok := []string{"engine_type", "model_name"}
	tokV := []string{et, model}
	stream := []string{"engine_type", "is_streaming", "model_name"}
	streamV := []string{et, "true", model}
	sched := []string{"engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"}
	schedV := []string{et, model, "0", "0", "0"}
	hist := func(h *hist, ln, lv []string) { ch <- h.metric(ln, lv) }
	if et != "prefill" {
		// A prefill instance never times a first token.
		hist(s.ttft, stream, streamV)
	}
	hist(s.e2e, stream, streamV)
	hist(s.itl, tok, tokV)
	hist(s.promptLen, tok, tokV)
	hist(s.genLen, tok, tokV)
	hist(s.uncached, tok, tokV)
	hist(s.queue, sched, schedV)
	hist(s.prefill, append([]string{"stage"}, sched...), append([]string{"prefill_forward"}, schedV...))
	counter := func(name, help string, ln, lv []string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, ln, nil), prometheus.CounterValue, v, lv...)
	}
	var finished, aborted float64
	for reason, v := range m.success {
		if reason == "abort" {
			aborted += v
		} else {
			finished += v
		}
	}
	// SGLang counts tokens of finished requests only.
	counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", stream, streamV, m.finishedPrompt)
	counter("sglang:generation_tokens_total", "Number of generation tokens processed.", stream, streamV, m.finishedGen)
	counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", append([]string{"cache_source"}, tok...),
		append([]string{"device"}, tokV...), m.finishedCached)
	counter("sglang:num_requests_total", "Number of requests processed.", stream, streamV, finished)
	counter("sglang:num_aborted_requests_total", "Number of requests aborted.", tok, tokV, aborted)
	counter("sglang:num_retracted_requests_total", "Total number of retracted requests.", sched, schedV, m.preemptions)
	gauge := func(name, help string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, sched, nil), prometheus.GaugeValue, v, schedV...)
	}
	gauge("sglang:num_running_reqs", "The number of running requests.", m.running)
	// A request whose KV is on its way waits in the transfer queue, not in
	// the waiting queue.
	gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", m.waiting-float64(len(c.e.loading)))
	switch et {
	case "decode":
		gauge("sglang:num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue.", 0)
		gauge("sglang:num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue.", float64(len(c.e.loading)))
	case "prefill":
		gauge("sglang:num_prefill_bootstrap_queue_reqs", "The number of requests in the prefill bootstrap queue.", 0)
		gauge("sglang:num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue.", float64(len(c.e.decode.loading)))
		hist(s.xferMs, sched, schedV)
		hist(s.xferMB, sched, schedV)
		hist(s.xferSpeed, sched, schedV)
	}
	// SGLang rounds token usage to two decimals.
	gauge("sglang:token_usage", "The token usage.", math.Round(m.kv*100)/100)
	ec := c.e.sc.Engine
	gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", float64(c.e.totalBlocks*ec.BlockSize))
	gauge("sglang:page_size", "KV cache page size.", float64(ec.BlockSize))
	gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", 0)
	// SGLang exports its speculation gauges always, 0 without it.
	gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.", m.specLength)
	gauge("sglang:spec_accept_rate", "The average acceptance rate of speculative decoding.", m.specRate)
	if ec.MaxLoRAs > 0 {
		gauge("sglang:lora_pool_slots_used", "Number of LoRA adapter slots in use.", m.loraRunning)
		gauge("sglang:lora_pool_slots_total", "Number of LoRA adapter slots.", float64(ec.MaxLoRAs))
		gauge("sglang:lora_pool_utilization", "LoRA adapter slots in use, 1.0 means the pool is full.", m.loraRunning/float64(ec.MaxLoRAs))
	}
	if ec.Speculative != nil {
		counter("sglang:spec_verify_calls_total", "Total number of speculative verify calls of finished requests.", tok, tokV, m.specVerifiesFinished)
	}
}
