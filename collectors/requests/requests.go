package requests

import (
	"fmt"
	"math"
	"math/rand"
	"sort"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// Record is one request as a client or gateway saw it. Times are seconds;
// a field the source lacks is NaN (or nil).
type Record struct {
	ID        string
	Start     float64
	Prompt    float64
	Output    float64
	MaxTokens float64
	// TTFT and E2E as the client measured them.
	TTFT, E2E float64
	ITLs      []float64
	// Server-side stages, when the export has them.
	Queue, Prefill, Decode, ServerTTFT float64
	Streaming                          *bool
	Error                              string

	pre        *streamedGaps // gaps a bench read streamed instead of ITLs
	bad        uint16        // fields present but not finite (b* bits)
	ms         uint16        // time fields given in milliseconds (ms* bits)
	e2eFromITL bool          // E2E is TTFT plus the gaps, as benchmarks record it
}

// Run describes the run as a whole (a benchmark's settings).
type Run struct {
	// RequestRate is the arrival rate asked for; +Inf is a closed loop.
	RequestRate    float64
	MaxConcurrency float64
	// SummaryOnly: the source had percentiles but no requests.
	SummaryOnly bool
	// Model is the model the run served, as the result names it
	// (model_id); "" when it does not.
	Model string
}

// Accumulator reads requests one at a time into evidence.
type Accumulator struct {
	Run                                  Run
	ttft, e2e, tpot, itl, prompt, output dist
	queue, prefill, decode, serverTTFT   dist
	n, failed, multi, streamed, outputs  float64
	outputRatio                          dist
	lenSum, lenSq                        float64
	distinctLens                         map[float64]bool
	first                                []float64 // TTFTs of the first requests, by arrival
	fit                                  [][2]float64
	seen                                 int
	rng                                  *rand.Rand
	ordered                              bool
	lastStart                            float64
	// Summary holds distributions given directly by a summary-only source.
	Summary map[string]evidence.Dist
	q       quality
}

const (
	warmupRequests = 20
	fitSample      = 1500
)

// NewAccumulator returns an empty accumulator.
func NewAccumulator() *Accumulator {
	return &Accumulator{distinctLens: map[float64]bool{}, rng: rand.New(rand.NewSource(1)), ordered: true,
		lastStart: math.Inf(-1), Run: Run{RequestRate: math.NaN(), MaxConcurrency: math.NaN()}, q: newQuality("line")}
}

// streamedShare says from the data whether a multi-token request was
// streamed: gaps between its tokens recorded one by one settle it; else the
// time between its first and last token, which a non-streaming response
// (first token delivered with the last) does not have. How much of
// end-to-end TTFT is says nothing: queue wait makes TTFT most of it on a
// busy server that streams.
func streamedShare(r Record) float64 {
	gaps := len(r.ITLs)
	if r.pre != nil {
		gaps = max(gaps, r.pre.n)
	}
	if gaps >= 2 && float64(gaps) >= 0.5*(r.Output-1) {
		return 1
	}
	if r.Streaming != nil && !*r.Streaming {
		return 0
	}
	// Half a millisecond a token is faster than any stream decodes.
	if r.E2E-r.TTFT >= math.Max(minStreamGap, 0.0005*(r.Output-1)) {
		return 1
	}
	return 0
}

// minStreamGap is the least time between first and last token that shows
// the tokens came apart.
const minStreamGap = 0.005

// Add takes one request as it is; readers validate rows first (take).
func (a *Accumulator) Add(r Record) {
	a.n++
	if r.Error != "" {
		a.failed++
		return // failed requests stay out of the latency figures
	}
	a.ttft.add(r.TTFT)
	a.e2e.add(r.E2E)
	for _, x := range r.ITLs {
		a.itl.add(x)
	}
	if evidence.Present(r.Prompt) {
		a.prompt.add(r.Prompt)
		a.lenSum += r.Prompt
		a.lenSq += r.Prompt * r.Prompt
		if len(a.distinctLens) < 1000 {
			a.distinctLens[r.Prompt] = true
		}
	}
	if evidence.Present(r.Output) {
		a.output.add(r.Output)
		a.outputs++
		if evidence.Present(r.MaxTokens) && r.MaxTokens > 0 {
			a.outputRatio.add(r.Output / r.MaxTokens)
		}
	}
	if evidence.Present(r.Output) && r.Output > 1 && evidence.Present(r.TTFT) && evidence.Present(r.E2E) {
		a.tpot.add((r.E2E - r.TTFT) / (r.Output - 1))
		a.multi++
		a.streamed += streamedShare(r)
	}
	a.queue.add(r.Queue)
	a.prefill.add(r.Prefill)
	a.decode.add(r.Decode)
	a.serverTTFT.add(r.ServerTTFT)
	if evidence.Present(r.Start) {
		if r.Start < a.lastStart {
			a.ordered = false
		}
		a.lastStart = r.Start
	}
	if len(a.first) < warmupRequests && evidence.Present(r.TTFT) {
		a.first = append(a.first, r.TTFT)
	}
	// Reservoir sample of (prompt, TTFT) for the length curve.
	if evidence.Present(r.Prompt) && evidence.Present(r.TTFT) {
		a.seen++
		if len(a.fit) < fitSample {
			a.fit = append(a.fit, [2]float64{r.Prompt, r.TTFT})
		} else if j := a.rng.Intn(a.seen); j < fitSample {
			a.fit[j] = [2]float64{r.Prompt, r.TTFT}
		}
	}
}

// Requests is how many requests were read.
func (a *Accumulator) Requests() int { return int(a.n) }

// Exact reports whether every distribution is exact (no sketch was needed).
func (a *Accumulator) Exact() bool {
	for _, d := range []*dist{&a.ttft, &a.e2e, &a.tpot, &a.itl, &a.prompt} {
		if !d.Exact() {
			return false
		}
	}
	return true
}

// Fill writes request evidence into e. Per-request distributions replace
// histogram-derived ones for the same field: exact beats interpolated.
func (a *Accumulator) Fill(e *evidence.Evidence, from string) {
	v := &e.Values
	cite := func(path, note string) { e.Cite(path, evidence.Source{Metric: "requests", From: from, Note: note}) }
	set := func(dst *evidence.Dist, d *dist, path string) {
		if d.n == 0 {
			return
		}
		note := "exact per-request values"
		if !d.Exact() {
			note = fmt.Sprintf("DDSketch of %d values, quantiles within %.0f%%", int(d.n), SketchAccuracy*100)
		}
		if prev, ok := e.Sources[path]; ok && prev.Metric != "requests" {
			note += "; replaces " + prev.Metric
		}
		*dst = d.Dist()
		cite(path, note)
	}
	if a.Run.SummaryOnly {
		for path, d := range a.Summary {
			if f, ok := evidence.Lookup(path + ".count"); ok {
				for sub, x := range map[string]float64{"count": d.Count, "mean": d.Mean, "p50": d.P50, "p90": d.P90,
					"p95": d.P95, "p99": d.P99, "max": d.Max} {
					if ff, ok := evidence.Lookup(path + "." + sub); ok {
						v.Set(ff, x)
					}
				}
				_ = f
				cite(path, "summary statistics only: no per-request analysis")
			}
		}
	}
	set(&v.Service.ClientTTFT, &a.ttft, "service.client_ttft")
	set(&v.Service.ClientE2E, &a.e2e, "service.client_e2e")
	set(&v.Service.ClientTPOT, &a.tpot, "service.client_tpot")
	if a.tpot.n > 0 || evidence.Present(v.Service.ClientTPOT.P50) {
		v.Cond.TPOTTracked = 1
		cite("cond.tpot_tracked", "client-side TPOT per request")
	}
	set(&v.Service.ClientITL, &a.itl, "service.client_itl")
	set(&v.Cond.PromptTokens, &a.prompt, "cond.prompt_tokens")
	set(&v.Cond.OutputTokens, &a.output, "cond.output_tokens")
	// Server-side stage times from a request file fill in where the server's
	// own histograms are missing; beside them they would be shares of
	// another population's TTFT.
	for _, x := range []struct {
		dst  *evidence.Dist
		d    *dist
		path string
	}{{&v.Stage.Queue, &a.queue, "stage.queue"}, {&v.Stage.Prefill, &a.prefill, "stage.prefill"}, {&v.Stage.Decode, &a.decode, "stage.decode"}} {
		if !evidence.Present(x.dst.Count) || !evidence.Present(v.Stage.TTFT.Count) {
			set(x.dst, x.d, x.path)
		}
	}
	if a.n > 0 {
		v.Service.ClientRequests = a.n
		v.Service.ClientFailedShare = a.failed / a.n
		cite("service.client_requests", "requests in the source")
		cite("service.client_failed_share", "requests with an error")
	}
	if a.multi > 0 {
		v.Service.StreamingShare = a.streamed / a.multi
		cite("service.streaming_share", "multi-token requests whose tokens came one by one: gaps recorded per token, or time between first and last token")
	}
	if a.prompt.n >= 2 {
		mean := a.lenSum / a.prompt.n
		sd := math.Sqrt(math.Max(0, a.lenSq/a.prompt.n-mean*mean))
		v.Cond.PromptLenCV = sd / mean
		v.Cond.PromptLenDistinct = float64(len(a.distinctLens))
		cite("cond.prompt_len_cv", "standard deviation ÷ mean of prompt lengths")
		cite("cond.prompt_len_distinct", "distinct prompt lengths (counted up to 1000)")
	}
	if a.outputRatio.n > 0 {
		v.Cond.OutputMaxRatio = a.outputRatio.Dist().P50
		cite("cond.output_max_ratio", "median output tokens ÷ max_tokens")
	}
	if a.ttft.n >= 2*warmupRequests && len(a.first) == warmupRequests && a.ordered {
		med := a.ttft.Dist().P50
		var s float64
		for _, x := range a.first {
			s += x
		}
		if med > 0 {
			v.Service.WarmupRatio = s / float64(len(a.first)) / med
			cite("service.warmup_ratio", fmt.Sprintf("mean TTFT of the first %d requests ÷ median TTFT", warmupRequests))
		}
	}
	if a.serverTTFT.n > 0 && a.ttft.n > 0 {
		c, s := a.ttft.sum/a.ttft.n, a.serverTTFT.sum/a.serverTTFT.n
		if c > 0 {
			v.Service.NetworkShare = math.Max(0, (c-s)/c)
			cite("service.network_share", "(client TTFT − server TTFT) ÷ client TTFT, per-request means")
		}
	}
	if slope, icpt, r2, ok := theilSen(a.fit); ok {
		v.Cond.PromptTTFTSlope, v.Cond.PromptTTFTIntercept, v.Cond.PromptTTFTR2 = slope*1000, icpt, r2
		for _, p := range []string{"cond.prompt_ttft_slope", "cond.prompt_ttft_intercept", "cond.prompt_ttft_r2"} {
			cite(p, fmt.Sprintf("Theil–Sen fit of TTFT on prompt length over %d requests", len(a.fit)))
		}
		e.Curves["prompt_ttft"] = binned(a.fit, 24)
	}
	if !math.IsNaN(a.Run.RequestRate) {
		v.Cond.OpenLoop = 1
		if math.IsInf(a.Run.RequestRate, 1) {
			v.Cond.OpenLoop = 0
		}
		cite("cond.open_loop", "the benchmark's request_rate (inf: send the next request when one returns)")
	}
	if evidence.Present(a.Run.MaxConcurrency) {
		v.Cond.MaxConcurrency = a.Run.MaxConcurrency
		cite("cond.max_concurrency", "the benchmark's max_concurrency")
	}
}

// theilSen fits y = a + b·x robustly: b is the median of pairwise slopes, a
// the median residual. R² is measured against that line.
func theilSen(pts [][2]float64) (slope, intercept, r2 float64, ok bool) {
	if len(pts) < 10 {
		return 0, 0, 0, false
	}
	slopes := make([]float64, 0, len(pts)*(len(pts)-1)/2)
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			if dx := pts[j][0] - pts[i][0]; dx != 0 {
				slopes = append(slopes, (pts[j][1]-pts[i][1])/dx)
			}
		}
	}
	if len(slopes) < len(pts) {
		return 0, 0, 0, false // (nearly) one prompt length: nothing to fit
	}
	slope = median(slopes)
	res := make([]float64, len(pts))
	var my float64
	for i, p := range pts {
		res[i] = p[1] - slope*p[0]
		my += p[1]
	}
	sort.Float64s(res)
	intercept = quantile(res, 0.5)
	my /= float64(len(pts))
	var ssr, sst float64
	for _, p := range pts {
		d := p[1] - (intercept + slope*p[0])
		ssr += d * d
		sst += (p[1] - my) * (p[1] - my)
	}
	r2 = 0
	if sst > 0 {
		r2 = math.Max(0, 1-ssr/sst)
	}
	return slope, intercept, r2, true
}

// binned reduces points to the median TTFT per prompt-length bin, for a chart.
func binned(pts [][2]float64, bins int) [][2]float64 {
	s := append([][2]float64(nil), pts...)
	sort.Slice(s, func(i, j int) bool { return s[i][0] < s[j][0] })
	var out [][2]float64
	per := max(1, len(s)/bins)
	for i := 0; i < len(s); i += per {
		chunk := s[i:min(len(s), i+per)]
		ys := make([]float64, len(chunk))
		var x float64
		for k, p := range chunk {
			ys[k] = p[1]
			x += p[0] / float64(len(chunk)) // a running mean: a sum can overflow
		}
		sort.Float64s(ys)
		if y := quantile(ys, 0.5); evidence.Present(x) && evidence.Present(y) {
			out = append(out, [2]float64{x, y})
		}
	}
	return out
}

// median is quantile(sorted s, 0.5) without sorting s: the one or two
// middle order statistics by selection, linear instead of n·log n on the
// million slopes of a Theil–Sen fit. s is reordered.
func median(s []float64) float64 {
	for _, x := range s {
		if math.IsNaN(x) { // NaN sorts first, where selection cannot place it
			sort.Float64s(s)
			return quantile(s, 0.5)
		}
	}
	pos := 0.5 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	a, b := nthElement(s, lo), s[min(lo+1, len(s)-1)]
	for _, x := range s[min(lo+2, len(s)):] { // all after lo are ≥ a: the next is their least
		b = math.Min(b, x)
	}
	return a + (b-a)*(pos-float64(lo))
}

// nthElement reorders s so that s[k] is what it would be sorted, nothing
// before it greater, nothing after it less, and returns s[k]. A three-way
// partition keeps runs of equal values (quantised latencies) linear.
func nthElement(s []float64, k int) float64 {
	lo, hi := 0, len(s)-1
	for lo < hi {
		// Median of three as the pivot.
		mid := lo + (hi-lo)/2
		a, b, c := s[lo], s[mid], s[hi]
		p := max(min(a, b), min(max(a, b), c))
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch x := s[i]; {
			case x < p:
				s[lt], s[i] = x, s[lt]
				lt++
				i++
			case x > p:
				s[gt], s[i] = x, s[gt]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return s[k]
		}
	}
	return s[k]
}
