// Package evidence is the model every rule reads: four layers of numbers about
// one target (a served model, or one instance of it), with where each came from.
//
// Values are float64 in base units (seconds, tokens, bytes, ratios 0..1). A value
// that no source provided is NaN; rules never see NaN because the engine checks
// presence first and reports the rule as insufficient.
package evidence

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
)

// Dist is a distribution over the window.
type Dist struct {
	Count float64 `expr:"count" json:"count"`
	Mean  float64 `expr:"mean" json:"mean"`
	P50   float64 `expr:"p50" json:"p50"`
	P90   float64 `expr:"p90" json:"p90"`
	P95   float64 `expr:"p95" json:"p95"`
	P99   float64 `expr:"p99" json:"p99"`
	Max   float64 `expr:"max" json:"max"`
}

// Series summarises a gauge sampled across the window.
type Series struct {
	Mean         float64 `expr:"mean" json:"mean"`
	Max          float64 `expr:"max" json:"max"`
	Min          float64 `expr:"min" json:"min"`
	Last         float64 `expr:"last" json:"last"`
	FracPositive float64 `expr:"frac_positive" json:"frac_positive"`
	Samples      float64 `expr:"samples" json:"samples"`
}

// Cond is the request-condition layer: what was asked of the server and how it
// was configured. Two diagnoses are comparable only when these agree.
type Cond struct {
	PromptTokens         Dist    `expr:"prompt_tokens"`
	ComputedPromptTokens Dist    `expr:"computed_prompt_tokens"`
	OutputTokens         Dist    `expr:"output_tokens"`
	MaxTokens            Dist    `expr:"max_tokens"`
	BlockSize            float64 `expr:"block_size"`
	GPUBlocks            float64 `expr:"gpu_blocks"`
	KVCapacityTokens     float64 `expr:"kv_capacity_tokens"`
	GPUMemoryUtilization float64 `expr:"gpu_memory_utilization"`
	PrefixCaching        float64 `expr:"prefix_caching"`
	// KVCacheFP8 is 1 when the KV cache is stored in fp8, 0 when not.
	KVCacheFP8 float64 `expr:"kv_cache_fp8"`
	Engines    float64 `expr:"engines"`
	// WeightBytes is the model's weight size, from a preset by served name
	// or from the config.
	WeightBytes float64 `expr:"weight_bytes"`
	// MoE is 1 for a mixture-of-experts model, 0 for a dense one, from a
	// preset by served name or from the config.
	MoE           float64 `expr:"moe"`
	WindowSeconds float64 `expr:"window_seconds"`
	// The targets a healthy verdict is judged against: defaults for
	// interactive serving, or the configuration's (--slo).
	TargetTTFTP99 float64 `expr:"target_ttft_p99"`
	TargetTPOT    float64 `expr:"target_tpot"`
	TargetE2EP99  float64 `expr:"target_e2e_p99"`
	// TTFTFromArrival is 1 while nothing contradicts that the server's TTFT
	// starts at arrival and so holds the queue wait, 0 when the evidence
	// shows it starts later.
	TTFTFromArrival float64 `expr:"ttft_from_arrival"`
	// StageMetrics is 1 when the server exports request queue and prefill
	// times, 0 when it exports metrics without them.
	StageMetrics float64 `expr:"stage_metrics"`
	// TPOTTracked is 1 when time per output token is measured apart from
	// TTFT (a per-request TPOT or inter-token latency histogram, or client
	// records).
	TPOTTracked float64 `expr:"tpot_tracked"`
	// From request-level sources (benchmarks, client or gateway logs).
	PromptLenCV         float64 `expr:"prompt_len_cv"`
	PromptLenDistinct   float64 `expr:"prompt_len_distinct"`
	PromptTTFTSlope     float64 `expr:"prompt_ttft_slope"`
	PromptTTFTIntercept float64 `expr:"prompt_ttft_intercept"`
	PromptTTFTR2        float64 `expr:"prompt_ttft_r2"`
	OutputMaxRatio      float64 `expr:"output_max_ratio"`
	OpenLoop            float64 `expr:"open_loop"`
	MaxConcurrency      float64 `expr:"max_concurrency"`
	// Speculative is 1 when speculative decoding runs, 0 when the engine
	// shows it off; SpecTokens the tokens drafted per request per step.
	Speculative float64 `expr:"speculative"`
	SpecTokens  float64 `expr:"spec_tokens"`
	// LoRA is 1 when the engine serves LoRA adapters; MaxLoRAs the adapter
	// slots of a running batch.
	LoRA     float64 `expr:"lora"`
	MaxLoRAs float64 `expr:"max_loras"`
	// Disaggregated is 1 when the target is one side of a deployment that
	// runs prefill and decode on separate instances.
	Disaggregated float64 `expr:"disaggregated"`
	// PrefillSide is 1 on the prefill instances of such a deployment: their
	// TTFT is prefill by design, and only a part of what users wait.
	PrefillSide float64 `expr:"prefill_side"`
	// Router is 1 when a router's metrics say one picks the replicas.
	Router float64 `expr:"router"`
}

// Stage is the per-stage latency layer.
type Stage struct {
	TTFT      Dist `expr:"ttft"`
	Queue     Dist `expr:"queue"`
	Prefill   Dist `expr:"prefill"`
	Decode    Dist `expr:"decode"`
	Inference Dist `expr:"inference"`
	ITL       Dist `expr:"itl"`
	TPOT      Dist `expr:"tpot"`
	// Transfer is the decode instance's pull of a request's prompt KV
	// from the prefill instance, per transfer.
	Transfer  Dist    `expr:"transfer"`
	FrontMean float64 `expr:"front_mean"`
	// UpstreamMean is the prefill side's time inside a decode side's TTFT
	// that starts at the client's request (SGLang's split deployments).
	UpstreamMean float64 `expr:"upstream_mean"`
	// DecodeFloor is the fastest possible time per output token: weight
	// bytes over the target's total peak memory bandwidth.
	DecodeFloor float64 `expr:"decode_floor"`
	// TTFTP99Steps is TTFT p99 step by step through the window, and
	// TTFTP99Trend its fitted change from start to end relative to its mean.
	TTFTP99Steps Series  `expr:"ttft_p99_steps"`
	TTFTP99Trend float64 `expr:"ttft_p99_trend"`
	// The least TTFT p99 and the median gap between tokens can be: the
	// lower bound of the histogram bucket each was interpolated in, or the
	// value itself where it is exact. A target is missed only when this is.
	TTFTP99AtLeast float64 `expr:"ttft_p99_at_least"`
	ITLP50AtLeast  float64 `expr:"itl_p50_at_least"`
	// ITLStalls counts inter-token gaps over 500 ms: one per stalled stream.
	ITLStalls float64 `expr:"itl_stalls"`
	// ITLStallSeconds is the time streams spent frozen in those gaps.
	ITLStallSeconds float64 `expr:"itl_stall_seconds"`
	// Share is how much of the latency users see each stage holds.
	Share Shares `expr:"share"`
	// Budget is mean end-to-end as the sum of the stages the server times.
	Budget Budget `expr:"budget"`
	// ShareMax bounds each share from above where the share itself is
	// unknown (TTFT withheld: a stage is at most its part of queue +
	// prefill); equal to Share where that is known.
	ShareMax Shares `expr:"share_max"`
}

// Shares are the parts of user-visible latency, as ratios 0..1: queue,
// prefill and front of mean TTFT, decode of mean end-to-end, and the ITL
// tail. Check derives them from consistent parts only.
type Shares struct {
	Queue   float64 `expr:"queue"`
	Prefill float64 `expr:"prefill"`
	Front   float64 `expr:"front"`
	Decode  float64 `expr:"decode"`
	ITLTail float64 `expr:"itl_tail"`
	// Transfer is the KV pull's share of mean TTFT (split prefill and decode).
	Transfer float64 `expr:"transfer"`
}

// Budget splits mean end-to-end latency into what users wait for the first
// token and decode, plus what no stage the server times accounts for. Check
// fills it where end-to-end and its parts are measured apart.
type Budget struct {
	E2E        float64 `expr:"e2e"`
	FirstToken float64 `expr:"first_token"`
	Decode     float64 `expr:"decode"`
	// Unexplained is end-to-end − first token − decode: negative when the
	// parts exceed the whole.
	Unexplained      float64 `expr:"unexplained"`
	UnexplainedShare float64 `expr:"unexplained_share"`
	// QueueShare is mean queue wait over mean end-to-end.
	QueueShare float64 `expr:"queue_share"`
}

// Service is what users of the service see.
type Service struct {
	E2E         Dist    `expr:"e2e"`
	Finished    float64 `expr:"finished"`
	RequestRate float64 `expr:"request_rate"`
	Errors      float64 `expr:"errors"`
	Aborts      float64 `expr:"aborts"`
	FailedShare float64 `expr:"failed_share"`
	// Failed counts the finished requests that errored or were aborted
	// (aborts alone where the engine has no finish reasons).
	Failed        float64 `expr:"failed"`
	LengthShare   float64 `expr:"length_share"`
	PromptTPS     float64 `expr:"prompt_tps"`
	GenerationTPS float64 `expr:"generation_tps"`
	Preemptions   float64 `expr:"preemptions"`
	// What the client saw, from request-level sources.
	ClientTTFT        Dist    `expr:"client_ttft"`
	ClientTPOT        Dist    `expr:"client_tpot"`
	ClientITL         Dist    `expr:"client_itl"`
	ClientE2E         Dist    `expr:"client_e2e"`
	ClientRequests    float64 `expr:"client_requests"`
	ClientFailedShare float64 `expr:"client_failed_share"`
	StreamingShare    float64 `expr:"streaming_share"`
	WarmupRatio       float64 `expr:"warmup_ratio"`
	NetworkShare      float64 `expr:"network_share"`
	// Fleet evidence, when a target has several instances.
	Instances           float64 `expr:"instances"`
	TTFTP99OutlierRatio float64 `expr:"ttft_p99_outlier_ratio"`
	WaitingOutlierRatio float64 `expr:"waiting_outlier_ratio"`
	// QueueTopShare is the share of all instances' queue wait (seconds
	// summed over requests) that the instance with the most holds.
	QueueTopShare float64 `expr:"queue_top_share"`
	// RouterDecision times a router's pick of a replica per request;
	// RouterQueueTopShare is the busiest endpoint's share of the queued
	// requests as the router sees them.
	RouterDecision      Dist    `expr:"router_decision"`
	RouterQueueTopShare float64 `expr:"router_queue_top_share"`
	// TransferWaiting are a split deployment's decode-side requests whose
	// KV is on its way (SGLang's transfer queue).
	TransferWaiting Series `expr:"transfer_waiting"`
	Running         Series `expr:"running"`
	Waiting         Series `expr:"waiting"`
	// Swapped are requests whose KV blocks were moved to CPU memory (V0).
	Swapped Series `expr:"swapped"`
	// E2EP99AtLeast is the least end-to-end p99 can be (as Stage's).
	E2EP99AtLeast float64 `expr:"e2e_p99_at_least"`
	// StreamTPS is tokens generated per second per running request: the
	// decode speed one stream sees.
	StreamTPS float64 `expr:"stream_tps"`
	// Progress is 1 when the engine computed or generated any token, 0
	// when it did neither.
	Progress        float64 `expr:"progress"`
	IterationTokens Dist    `expr:"iteration_tokens"`
	// Under speculative decoding: tokens a request keeps per verify step
	// (the accepted drafts and the target model's own), and the share of
	// drafted tokens accepted.
	SpecAcceptLength float64 `expr:"spec_accept_length"`
	SpecAcceptance   float64 `expr:"spec_acceptance"`
	// LoRAHeld are requests waiting for a LoRA adapter slot.
	LoRAHeld Series `expr:"lora_held"`
}

// Resource is the hardware and cache layer.
type Resource struct {
	KVUsage    Series `expr:"kv_usage"`
	CPUKVUsage Series `expr:"cpu_kv_usage"`
	// KVPeak is the highest KV usage of any one engine or replica at any
	// reading: the mean over them hides one full cache.
	KVPeak float64 `expr:"kv_peak"`
	// KVPerRequest is the share of its engine's KV cache one running
	// request holds on average: what one more request of that size needs.
	KVPerRequest  float64 `expr:"kv_per_request"`
	PrefixHitRate float64 `expr:"prefix_hit_rate"`
	PrefixQueries float64 `expr:"prefix_queries"`
	// GPU evidence from DCGM, averaged over the target's GPUs.
	GPUs         float64 `expr:"gpus"`
	DRAMActive   Series  `expr:"dram_active"`
	GRActive     Series  `expr:"gr_active"`
	SMActive     Series  `expr:"sm_active"`
	TensorActive Series  `expr:"tensor_active"`
	GPUUtil      Series  `expr:"gpu_util"`
	FBUsed       Series  `expr:"fb_used"`
	// GPUProfiling is 1 when DCGM exports profiling (DCP) metrics, 0 when
	// only device metrics such as GPU_UTIL are there.
	GPUProfiling      float64 `expr:"gpu_profiling"`
	PeakBandwidth     float64 `expr:"peak_bandwidth"`
	AchievedBandwidth float64 `expr:"achieved_bandwidth"`
}

// Values holds the four layers.
type Values struct {
	Cond     Cond     `expr:"cond"`
	Stage    Stage    `expr:"stage"`
	Service  Service  `expr:"service"`
	Resource Resource `expr:"resource"`
}

// Source says where a value came from.
type Source struct {
	// Metric is the exposed family name read, or
	// "derived" with Note saying how.
	Metric string `json:"metric"`
	// From is the transport: a URL, a file, or a query.
	From string `json:"from,omitempty"`
	Note string `json:"note,omitempty"`
}

// Target names what a piece of evidence is about.
type Target struct {
	Model    string `json:"model,omitempty"`
	Instance string `json:"instance,omitempty"`
	Engine   string `json:"engine,omitempty"`
	// ServedBy names the serving engine (vllm, sglang) when known.
	ServedBy string `json:"served_by,omitempty"`
	// Labels are the label values that select the target (--group-by).
	Labels map[string]string `json:"labels,omitempty"`
}

// Evidence is everything known about one target over the window.
type Evidence struct {
	Target Target
	Values Values
	// Sources maps a field path or path prefix (stage.ttft) to its origin.
	Sources map[string]Source
	// Members are per-engine or per-instance breakdowns of the same target.
	Members []*Evidence
	// Text holds names messages may cite (TextFields documents the keys).
	Text map[string]string
	// Curves are small point series for charts, keyed as Curves documents.
	Curves map[string][][2]float64
	// Resolution holds, by path (stage.ttft.p99), the bounds of the
	// histogram bucket a quantile was interpolated in: the true quantile
	// lies somewhere between them.
	Resolution map[string][2]float64
	// Inconsistencies are contradictions found in the evidence; the nodes
	// they name are withheld from rules.
	Inconsistencies []Inconsistency
	// Engine is the serving engine's vocabulary (nil: not known).
	Engine *Engine
	// Notes say how the checks read evidence that was used, not withheld
	// (a queue histogram counting only the requests that waited).
	Notes []string
	// trusting: checks record no contradiction, so every value is read as
	// given (what withheld evidence would say).
	trusting bool
}

// Clone copies the evidence deeply enough that checking or changing the
// copy leaves the original as it was.
func (e *Evidence) Clone() *Evidence {
	c := *e
	c.Sources = maps.Clone(e.Sources)
	c.Text = maps.Clone(e.Text)
	c.Curves = maps.Clone(e.Curves)
	c.Resolution = maps.Clone(e.Resolution)
	c.Inconsistencies = slices.Clone(e.Inconsistencies)
	c.Notes = slices.Clone(e.Notes)
	c.Members = make([]*Evidence, len(e.Members))
	for i, m := range e.Members {
		c.Members[i] = m.Clone()
	}
	if c.Text == nil {
		c.Text = map[string]string{}
	}
	return &c
}

// CheckKeepingGiven runs Check and returns what the evidence would say if
// every number in it were right: called, it derives what Check derives on
// the numbers as given, with nothing withheld. Only the values are kept
// until then (a copy, no allocation per field), as few diagnoses need it.
func CheckKeepingGiven(e *Evidence) (given func() *Evidence) {
	pre := keepGiven(e)
	Check(e)
	return func() *Evidence {
		c := e.Clone()
		pre.restore(c)
		Check(c)
		return c
	}
}

// given is evidence's values and contradictions before Check, members too.
type given struct {
	v       Values
	in      []Inconsistency
	members []given
}

func keepGiven(e *Evidence) given {
	g := given{v: e.Values, in: slices.Clone(e.Inconsistencies)}
	for _, m := range e.Members {
		g.members = append(g.members, keepGiven(m))
	}
	return g
}

// restore puts the values back and marks the evidence trusting: its checks
// record no contradiction.
func (g given) restore(e *Evidence) {
	e.Values, e.Inconsistencies, e.trusting = g.v, slices.Clone(g.in), true
	for i, m := range e.Members {
		if i < len(g.members) {
			g.members[i].restore(m)
		}
	}
}

// Inconsistency is evidence that contradicts itself or physics, or that
// cannot be placed (a quantile past the highest bucket): it is withheld.
type Inconsistency struct {
	// Check names the test that failed (ttft-excludes-queue, ...).
	Check string `json:"check"`
	// Fields are the nodes withheld from rules (stage.ttft).
	Fields []string `json:"fields"`
	Note   string   `json:"note"`
}

// Inconsistent returns the note of the inconsistency that withholds the
// node a path belongs to, or "".
func (e *Evidence) Inconsistent(path string) string {
	node := Node(path)
	for _, in := range e.Inconsistencies {
		for _, f := range in.Fields {
			if f == node || f == path {
				return in.Note
			}
		}
	}
	return ""
}

// AddInconsistency records one, once per check and fields.
func (e *Evidence) AddInconsistency(in Inconsistency) {
	if e.trusting {
		return
	}
	for _, x := range e.Inconsistencies {
		if x.Check == in.Check && strings.Join(x.Fields, ",") == strings.Join(in.Fields, ",") {
			return
		}
	}
	e.Inconsistencies = append(e.Inconsistencies, in)
}

// TextFields are the names evidence may carry besides numbers.
var TextFields = map[string]string{
	"service.ttft_p99_outlier": "the instance whose TTFT p99 is furthest above its peers'",
	"service.waiting_outlier":  "the instance whose waiting queue is furthest above its peers'",
	"service.queue_top":        "the instance with the most queue wait (seconds summed over requests)",
	"stage.budget_gap":         "the likely reasons the stages the server times miss mean end-to-end",
}

// New returns evidence with every value missing.
func New(t Target) *Evidence {
	e := &Evidence{Target: t, Sources: map[string]Source{}, Text: map[string]string{}, Curves: map[string][][2]float64{}}
	fillNaN(reflect.ValueOf(&e.Values).Elem())
	return e
}

func fillNaN(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fillNaN(v.Field(i))
		}
	case reflect.Float64:
		v.SetFloat(math.NaN())
	}
}

// Cite records where the value at path came from.
func (e *Evidence) Cite(path string, s Source) { e.Sources[path] = s }

// SourceOf returns the source recorded for path or its closest prefix.
func (e *Evidence) SourceOf(path string) (Source, bool) {
	for p := path; p != ""; p = parent(p) {
		if s, ok := e.Sources[p]; ok {
			return s, true
		}
	}
	return Source{}, false
}

func parent(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '.' {
			return p[:i]
		}
	}
	return ""
}

// Present reports whether v is a real number.
func Present(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Summarise reduces gauge samples to a Series, skipping NaN and ±Inf; with no
// samples every field is missing.
func Summarise(points []float64) Series {
	s := Series{Mean: math.NaN(), Max: math.NaN(), Min: math.NaN(), Last: math.NaN(),
		FracPositive: math.NaN(), Samples: math.NaN()}
	var n, pos, sum float64
	for _, p := range points {
		if !Present(p) {
			continue
		}
		if n == 0 {
			s.Max, s.Min = p, p
		}
		s.Max, s.Min, s.Last = math.Max(s.Max, p), math.Min(s.Min, p), p
		sum += p
		n++
		if p > 0 {
			pos++
		}
	}
	if n > 0 {
		s.Mean, s.FracPositive, s.Samples = sum/n, pos/n, n
	}
	return s
}

// SetResolution records that the value at path is known only to lie
// between lo and hi (a quantile interpolated in a histogram bucket).
func (e *Evidence) SetResolution(path string, lo, hi float64) {
	// JSON has no infinity: an unbounded side is no resolution to give.
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return
	}
	if e.Resolution == nil {
		e.Resolution = map[string][2]float64{}
	}
	e.Resolution[path] = [2]float64{lo, hi}
}

// TreeNumber reads a dotted path (stage.ttft.p99) from a report's nested
// maps — the evidence tree of the JSON contract, its conditions; NaN when
// absent or not a number.
func TreeNumber(tree map[string]any, path string) float64 {
	var cur any = tree
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return math.NaN()
		}
		cur = m[k]
	}
	if x, ok := cur.(float64); ok {
		return x
	}
	return math.NaN()
}
