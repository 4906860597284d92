package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM's bucket sets (vllm/v1/metrics/loggers.py in vllm-project/vllm).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	latBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	iterBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// tokenBuckets is vLLM's 1-2-5 series up to max_model_len.
func tokenBuckets(maxLen int) []float64 {
	var out []float64
	for m := 1; ; m *= 10 {
		for _, f := range []int{1, 2, 5} {
			if f*m > maxLen {
				return out
			}
			out = append(out, float64(f*m))
		}
	}
}

// hist is a plain histogram: the engine is single-threaded and observes
// millions of values, so no atomics.
type hist struct {
	name, help string
	bounds     []float64
	counts     []uint64
	sum        float64
	n          uint64
	// mirror, when set, observes the same values in another engine's
	// family and buckets.
	mirror *hist
}

func newHist(name, help string, bounds []float64) *hist {
	return &hist{name: name, help: help, bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *hist) observe(x float64) {
	if h.mirror != nil {
		h.mirror.observe(x)
	}
	h.own(x)
}

// metric exposes the histogram with cumulative buckets, labelled.
func (h *hist) metric(ln, lv []string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.bounds))
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		buckets[b] = cum
	}
	return prometheus.MustNewConstHistogram(prometheus.NewDesc(h.name, h.help, ln, nil), h.n, h.sum, buckets, lv...)
}

// own observes x in this family only, not its mirror.
func (h *hist) own(x float64) {
	h.sum += x
	h.n++
	if i := sort.SearchFloat64s(h.bounds, x); i < len(h.bounds) {
		h.counts[i]++
	}
}

type metrics struct {
	e                                           *Engine
	ttft, itl, tpot, e2e, queue, prefill        *hist
	decode, inference, promptLen, genLen        *hist
	computed, maxTokens, iteration              *hist
	promptTokens, genTokens, preemptions        float64
	prefixQueries, prefixHits                   float64
	success                                     map[string]float64
	running, waiting, kv                        float64
	finishedCount                               int
	gpuTime, wallTime, bytes, flops             float64
	lastGPUTime, lastWall, lastBytes, lastFlops float64
	dram, gr, tensor                            float64
	// Tokens of finished requests, as SGLang counts them.
	finishedPrompt, finishedGen, finishedCached float64
	// sg is SGLang's view when the engine exposes SGLang names.
	sg *sglangHists
	// Speculative decoding: verify passes of one request (drafts), tokens
	// drafted and accepted, accepted by draft position; SGLang's gauges
	// of the recent steps' accepted length and rate.
	specDrafts, specDraftTokens, specAccepted float64
	specPerPos                                []float64
	specLength, specRate                      float64
	specVerifiesFinished                      float64
	// LoRA: adapters of the running batch, requests passed over for want
	// of an adapter slot, and vLLM's info series: each state of running
	// and waiting adapters seen, with the time it was last set.
	loraRunning, deferred float64
	loraStates            map[[2]string]float64
	// Disaggregated decode instance: NIXL's pulls, timed and sized.
	nixlTime, nixlBytes *hist
	xferLog             []float64
	xferBytes           float64
	// The last 1000 requests' prefix lookups, for the log's hit rate.
	recent    [1000][2]float64
	recentIdx int
}

// recentHitRate is the prefix hit rate over the last 1000 scheduled
// requests, as vLLM's log reports it.
func (m *metrics) recentHitRate() float64 {
	var q, h float64
	for _, x := range m.recent {
		q += x[0]
		h += x[1]
	}
	if q == 0 {
		return 0
	}
	return h / q
}

func newMetrics(e *Engine) *metrics {
	tok := tokenBuckets(maxModelLen)
	m := &metrics{e: e, success: map[string]float64{},
		ttft:      newHist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:       newHist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		tpot:      newHist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlBuckets),
		e2e:       newHist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", latBuckets),
		queue:     newHist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", latBuckets),
		prefill:   newHist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", latBuckets),
		decode:    newHist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", latBuckets),
		inference: newHist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", latBuckets),
		promptLen: newHist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tok),
		genLen:    newHist("vllm:request_generation_tokens", "Number of generation tokens processed.", tok),
		computed:  newHist("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", tok),
		maxTokens: newHist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", tok),
		iteration: newHist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterBuckets),
	}
	if e.sc.Exposes == "sglang" {
		m.sg = newSGLangHists(m)
	}
	if e.sc.Engine.Disaggregated != nil {
		bytes := make([]float64, 0, 12)
		for i := 1; i <= 23; i += 2 {
			bytes = append(bytes, math.Exp2(float64(10+i)))
		}
		m.nixlTime = newHist("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.",
			[]float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0})
		m.nixlBytes = newHist("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV Cache transfers.", bytes)
	}
	return m
}

// since is when SGLang's decode instance starts a request's clock: when the
// client sent it, to both instances at once; vLLM's and every other engine's
// at the request's arrival.
func (m *metrics) since(r *request) float64 {
	if m.sg != nil && r.remote {
		return r.origin
	}
	return r.arrival
}

// pushed is a split deployment's prefill instance seeing the KV of its
// request r reach the decode instance at virtual time at: SGLang times the
// push and ends the request there.
func (m *metrics) pushed(r *request, at, secs, bytes float64) {
	if m.sg == nil || r == nil {
		return
	}
	m.e2e.observe(at - r.arrival)
	m.sg.xferMs.own(1000 * secs)
	m.sg.xferMB.own(bytes / 1e6)
	if secs > 0 {
		m.sg.xferSpeed.own(bytes / 1e9 / secs)
	}
}

// transferred counts one KV pull of the decode instance.
func (m *metrics) transferred(secs, bytes float64) {
	if m.nixlTime != nil {
		m.nixlTime.own(secs)
		m.nixlBytes.own(bytes)
		m.xferLog = append(m.xferLog, secs)
		m.xferBytes += bytes
	}
}

func (m *metrics) hists() []*hist {
	return []*hist{m.ttft, m.itl, m.tpot, m.e2e, m.queue, m.prefill, m.decode, m.inference,
		m.promptLen, m.genLen, m.computed, m.maxTokens, m.iteration}
}

func (m *metrics) scheduled(r *request, now float64) {
	m.prefixQueries += float64(r.prompt)
	m.prefixHits += float64(r.cached)
	m.recent[m.recentIdx%len(m.recent)] = [2]float64{float64(r.prompt), float64(r.cached)}
	m.recentIdx++
}

func (m *metrics) promptDone(r *request) { m.promptTokens += float64(r.prompt) }

func (m *metrics) token(r *request, now float64) {
	m.genTokens++
	if r.firstToken < 0 {
		m.ttft.observe(now - m.since(r))
	} else {
		m.itl.observe(now - r.lastTk)
	}
}

// tokens counts the k tokens a speculative step gave a request after a
// gap: vLLM observes the step's gap once, SGLang splits it over the tokens.
func (m *metrics) tokens(gap float64, k int) {
	m.genTokens += float64(k)
	m.itl.own(gap)
	if m.sg != nil {
		for range k {
			m.sg.itl.observe(gap / float64(k))
		}
	}
}

// speculated counts one verify pass of one request that accepted
// accepted drafts.
func (m *metrics) speculated(accepted int) {
	sp := m.e.sc.Engine.Speculative
	if m.specPerPos == nil {
		m.specPerPos = make([]float64, sp.Tokens)
	}
	m.specDrafts++
	m.specDraftTokens += float64(sp.Tokens)
	m.specAccepted += float64(accepted)
	for i := range accepted {
		m.specPerPos[i]++
	}
	// SGLang reports the last decode log interval's (40 steps) mean.
	const recent = 1.0 / 400
	if m.specLength == 0 {
		m.specLength, m.specRate = 1+float64(accepted), float64(accepted)/float64(sp.Tokens)
	}
	m.specLength += recent * (1 + float64(accepted) - m.specLength)
	m.specRate += recent * (float64(accepted)/float64(sp.Tokens) - m.specRate)
}

func (m *metrics) finished(r *request, now float64, reason string) {
	m.finishedCount++
	m.success[reason]++
	if m.sg == nil || m.e.decode == nil {
		// SGLang's prefill instance ends a request when its KV has gone.
		m.e2e.observe(now - m.since(r))
	}
	if m.sg != nil && r.remote {
		// SGLang times a decode instance's queue from the KV's arrival.
		m.queue.observe(r.scheduled - r.landed)
	} else {
		m.queue.observe(r.scheduled - r.enqueued)
	}
	m.prefill.observe(r.firstToken - r.scheduled)
	decode := r.lastTk - r.firstToken
	m.decode.observe(decode)
	m.inference.observe(r.lastTk - r.scheduled)
	if r.generated > 1 {
		m.tpot.observe(decode / float64(r.generated-1))
	} else {
		m.tpot.observe(0)
	}
	m.promptLen.observe(float64(r.prompt))
	m.genLen.observe(float64(r.generated))
	m.computed.observe(float64(r.prompt - r.cached))
	m.finishedPrompt += float64(r.prompt)
	m.finishedGen += float64(r.generated)
	m.specVerifiesFinished += float64(r.verifies)
	m.finishedCached += float64(r.cached)
	if r.maxTokens > 0 {
		m.maxTokens.observe(float64(r.maxTokens))
	} else {
		m.maxTokens.observe(2048)
	}
}

// aborted counts a request dropped before it finished (its client went
// away): finished with reason "abort", in no latency histogram, as its
// times are partial.
func (m *metrics) aborted() {
	m.finishedCount++
	m.success["abort"]++
}

func (m *metrics) preempted() { m.preemptions++ }

func (m *metrics) gpuBusy(gpu, dt, bytes, flops float64, tokens int) {
	m.gpuTime += gpu
	m.wallTime += dt
	m.bytes += bytes
	m.flops += flops
	m.iteration.observe(float64(tokens))
}

func (m *metrics) gpuIdle(dt float64) { m.wallTime += dt }

func (m *metrics) setGauges(e *Engine) {
	m.running = float64(len(e.running))
	// Requests pulling their KV wait in vLLM's queue too, as deferred.
	m.waiting = float64(len(e.waiting) + len(e.loading))
	m.kv = e.KVUsage()
	if e.sc.Engine.MaxLoRAs > 0 {
		m.setLoRA(e)
	}
}

// setLoRA reads the adapters of the batch and of the queue as the engines
// report them.
func (m *metrics) setLoRA(e *Engine) {
	slots := e.adapters()
	waiting := map[int]bool{}
	for _, r := range e.waiting {
		if r.adapter >= 0 {
			waiting[r.adapter] = true
		}
	}
	// Deferred are the requests the scheduler passed over; those it never
	// reached (the batch full first) wait for capacity.
	m.deferred = float64(e.passed)
	m.loraRunning = float64(len(slots))
	names := func(set map[int]bool) string {
		var out []string
		for _, a := range slices.Sorted(maps.Keys(set)) {
			out = append(out, "adapter-"+strconv.Itoa(a))
		}
		return strings.Join(out, ",")
	}
	if m.loraStates == nil {
		m.loraStates = map[[2]string]float64{}
	}
	m.loraStates[[2]string{names(slots), names(waiting)}] = e.now
	if len(m.loraStates) > 64 {
		// vLLM keeps every state it has seen; the simulator the latest 64.
		var oldest [2]string
		at := math.Inf(1)
		for k, t := range m.loraStates {
			if t < at {
				oldest, at = k, t
			}
		}
		delete(m.loraStates, oldest)
	}
}

// sampleGPU averages GPU activity since the previous sample, as DCGM's
// profiling counters do over their sampling period.
func (m *metrics) sampleGPU() {
	dt := m.wallTime - m.lastWall
	if dt < 1 {
		return // keep the previous sample: too little time to average over
	}
	e := m.e
	tp := float64(e.sc.TP)
	m.gr = (m.gpuTime - m.lastGPUTime) / dt
	m.dram = (m.bytes - m.lastBytes) / (dt * e.gpu.Bandwidth * tp)
	m.tensor = (m.flops - m.lastFlops) / (dt * e.gpu.FLOPS * tp)
	m.lastWall, m.lastGPUTime, m.lastBytes, m.lastFlops = m.wallTime, m.gpuTime, m.bytes, m.flops
}

// vllmCollector exposes the engine's metrics with vLLM's names and labels.
type vllmCollector struct{ e *Engine }

func (c vllmCollector) Describe(chan<- *prometheus.Desc) {}

func (c vllmCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.e.m
	model := c.e.model.Served
	lv := []string{model, "0"}
	ln := []string{"model_name", "engine"}
	for _, h := range m.hists() {
		ch <- h.metric(ln, lv)
	}
	counter := func(name, help string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, ln, nil), prometheus.CounterValue, v, lv...)
	}
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", m.promptTokens)
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", m.genTokens)
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", m.preemptions)
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", m.prefixQueries)
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", m.prefixHits)
	succ := prometheus.NewDesc("vllm:request_success_total", "Count of successfully processed requests.",
		[]string{"model_name", "engine", "finished_reason"}, nil)
	for reason, v := range m.success {
		ch <- prometheus.MustNewConstMetric(succ, prometheus.CounterValue, v, model, "0", reason)
	}
	gauge := func(name, help string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, ln, nil), prometheus.GaugeValue, v, lv...)
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", m.running)
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", m.waiting)
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", m.kv)
	if c.e.sc.Engine.Disaggregated != nil && c.e.prefill != nil {
		ch <- m.nixlTime.metric(ln, lv)
		ch <- m.nixlBytes.metric(ln, lv)
		counter("vllm:nixl_num_failed_transfers_total", "Number of failed NIXL KV Cache transfers.", 0)
		reason := prometheus.NewDesc("vllm:num_requests_waiting_by_reason", "Number of requests waiting, by reason.",
			[]string{"model_name", "engine", "reason"}, nil)
		deferred := float64(len(c.e.loading))
		ch <- prometheus.MustNewConstMetric(reason, prometheus.GaugeValue, m.waiting-deferred, model, "0", "capacity")
		ch <- prometheus.MustNewConstMetric(reason, prometheus.GaugeValue, deferred, model, "0", "deferred")
	}
	if n := c.e.sc.Engine.MaxLoRAs; n > 0 && c.e.sc.Engine.Disaggregated == nil {
		// vLLM's LoRA state: labels only, its value the time it was last
		// set; and waiting requests by reason (deferred: no adapter slot).
		info := prometheus.NewDesc("vllm:lora_requests_info", "Running stats on lora requests.",
			[]string{"max_lora", "running_lora_adapters", "waiting_lora_adapters"}, nil)
		for k, at := range m.loraStates {
			ch <- prometheus.MustNewConstMetric(info, prometheus.GaugeValue,
				float64(Epoch.Unix())+at, strconv.Itoa(n), k[0], k[1])
		}
		reason := prometheus.NewDesc("vllm:num_requests_waiting_by_reason", "Number of requests waiting, by reason.",
			[]string{"model_name", "engine", "reason"}, nil)
		ch <- prometheus.MustNewConstMetric(reason, prometheus.GaugeValue, m.waiting-m.deferred, model, "0", "capacity")
		ch <- prometheus.MustNewConstMetric(reason, prometheus.GaugeValue, m.deferred, model, "0", "deferred")
	}
	if c.e.sc.Engine.Speculative != nil {
		// vLLM registers these only with a speculative config.
		counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", m.specDrafts)
		counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", m.specDraftTokens)
		counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", m.specAccepted)
		pos := prometheus.NewDesc("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.",
			[]string{"model_name", "engine", "position"}, nil)
		for i, v := range m.specPerPos {
			ch <- prometheus.MustNewConstMetric(pos, prometheus.CounterValue, v, model, "0", strconv.Itoa(i))
		}
	}
	ec := c.e.sc.Engine
	info := map[string]string{
		"engine": "0", "block_size": strconv.Itoa(ec.BlockSize), "num_gpu_blocks": strconv.Itoa(c.e.totalBlocks),
		"enable_prefix_caching": pyBool(ec.PrefixCaching), "gpu_memory_utilization": strconv.FormatFloat(ec.GPUMemoryUtilization, 'f', -1, 64),
		"cache_dtype": "auto", "num_cpu_blocks": "None", "sliding_window": "None",
	}
	names := make([]string, 0, len(info))
	for k := range info {
		names = append(names, k)
	}
	sort.Strings(names)
	vals := make([]string, len(names))
	for i, k := range names {
		vals[i] = info[k]
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("vllm:cache_config_info",
		"Information of the LLMEngine CacheConfig", names, nil), prometheus.GaugeValue, 1, vals...)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// dcgmCollector exposes GPU metrics with dcgm-exporter's names and labels,
// derived from the same step model: DRAM_ACTIVE is bytes moved over peak
// bandwidth, PIPE_TENSOR_ACTIVE FLOPs over peak, GR_ENGINE_ACTIVE the share
// of time a kernel ran.
type dcgmCollector struct{ e *Engine }

func (c dcgmCollector) Describe(chan<- *prometheus.Desc) {}

func (c dcgmCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	m := e.m
	m.sampleGPU()
	labels := []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}
	fbUsed := e.gpu.MemBytes * e.sc.Engine.GPUMemoryUtilization / (1 << 20)
	fbFree := e.gpu.MemBytes/(1<<20) - fbUsed
	sm := m.gr * min(1, 0.25+1.5*m.tensor)
	for i := 0; i < e.sc.TP; i++ {
		lv := []string{strconv.Itoa(i), fmt.Sprintf("GPU-%08x-sim0-%04d", e.sc.Seed, i), fmt.Sprintf("00000000:%02X:00.0", 0x10+i),
			"nvidia" + strconv.Itoa(i), e.gpu.ModelName, "llmdoctor-sim"}
		g := func(name, help string, v float64) {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, labels, nil), prometheus.GaugeValue, v, lv...)
		}
		g("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", 100*m.gr)
		g("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", fbUsed)
		g("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", fbFree)
		g("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", 90+0.6*e.gpu.MemBytes/1e9*m.gr+200*m.tensor)
		g("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", m.gr)
		g("DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", sm)
		g("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", m.tensor)
		g("DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", m.dram)
	}
}

// Registries returns registries for the serving engine's metrics (vLLM's
// names, or SGLang's when the scenario exposes them) and the DCGM metrics.
func (e *Engine) Registries() (engine, dcgm *prometheus.Registry) {
	engine, dcgm = prometheus.NewRegistry(), prometheus.NewRegistry()
	if e.sc.Exposes == "sglang" {
		engine.MustRegister(sglangCollector{e})
	} else {
		engine.MustRegister(vllmCollector{e})
	}
	dcgm.MustRegister(dcgmCollector{e})
	return engine, dcgm
}
