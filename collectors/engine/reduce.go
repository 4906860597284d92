package engine

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// The builder's reductions: histograms, gauges and counters summed over a
// target's series, each value cited to the family it came from.

// present finds the engine's family for a key in the window.
func (b *builder) present(key string) (string, bool) {
	m, ok := b.eng.ByKey(key)
	if !ok {
		return "", false
	}
	return Present(b.w, m)
}

// mine reports whether a series belongs to the target and to the metric's
// label match.
func (b *builder) mine(key string, l window.Labels, wildcard bool) bool {
	if !window.Matches(b.sel, l, wildcard) {
		return false
	}
	m, _ := b.eng.ByKey(key)
	for i := 0; i+1 < len(m.Exclude); i += 2 {
		if l[m.Exclude[i]] == m.Exclude[i+1] {
			return false
		}
	}
	return labelPairs(l, m.Match)
}

// withheld names evidence whose family was read but not trusted, so rules
// that need it say why instead of asking the user to export it.
func (b *builder) withheld(key string, paths ...string) {
	m, _ := b.eng.ByKey(key)
	for _, n := range m.Names {
		if why, ok := b.w.Withheld[n]; ok {
			b.e.AddInconsistency(evidence.Inconsistency{Check: "exposition", Fields: paths, Note: n + ": " + why})
			return
		}
	}
}

func (b *builder) cite(path, name string) {
	b.e.Cite(path, evidence.Source{Metric: name, From: b.w.From})
}

// sumHist adds a histogram's buckets, sum and count over the target's series.
func (b *builder) sumHist(key string) (buckets []window.Bucket, sum, count float64, name string) {
	name, ok := b.present(key)
	if !ok {
		return nil, 0, 0, ""
	}
	byLE := map[float64]float64{}
	found := false
	var series []window.Histogram
	for _, h := range b.w.Histograms[name] {
		if !b.mine(key, h.Labels, false) {
			continue
		}
		found = true
		series = append(series, h)
		for _, bk := range h.Buckets {
			byLE[bk.UpperBound] += bk.Count
		}
		sum += h.Sum
		count += h.Count
	}
	if !found {
		return nil, 0, 0, ""
	}
	common := commonBounds(series)
	buckets = make([]window.Bucket, 0, len(byLE))
	for le, c := range byLE {
		if common[le] {
			buckets = append(buckets, window.Bucket{UpperBound: le, Count: c})
		}
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].UpperBound < buckets[j].UpperBound })
	if m, _ := b.eng.ByKey(key); m.Scale != 0 && m.Scale != 1 {
		// To the evidence's base unit (SGLang's milliseconds, megabytes).
		for i := range buckets {
			buckets[i].UpperBound *= m.Scale
		}
		sum *= m.Scale
	}
	return buckets, sum, count, name
}

// commonBounds are the bucket bounds every series with buckets has. Series
// bucketed differently (a rolling upgrade, a --bucket-* flag on one replica)
// add up only where both count "at most x": summing at a bound one series
// lacks would put its observations above x, so the target's quantiles are
// read from the common bounds alone, coarser but right.
func commonBounds(series []window.Histogram) map[float64]bool {
	have := map[float64]int{}
	n := 0
	for _, h := range series {
		if len(h.Buckets) == 0 {
			continue
		}
		n++
		seen := map[float64]bool{}
		for _, bk := range h.Buckets {
			if !seen[bk.UpperBound] {
				seen[bk.UpperBound] = true
				have[bk.UpperBound]++
			}
		}
	}
	out := make(map[float64]bool, len(have))
	for le, k := range have {
		if k == n {
			out[le] = true
		}
	}
	return out
}

// ttftTrend sums the TTFT histogram step by step over the target's series
// and reads p99 per step and its trend across the window.
func (b *builder) ttftTrend() {
	name, ok := b.present(TTFT)
	if !ok {
		return
	}
	var steps []map[float64]float64
	var series []window.Histogram
	for _, h := range b.w.Histograms[name] {
		if b.mine(TTFT, h.Labels, false) {
			series = append(series, h)
		}
	}
	common := commonBounds(series)
	for _, h := range series {
		if h.Steps == nil {
			continue
		}
		if steps == nil {
			steps = make([]map[float64]float64, len(h.Steps))
		}
		for i, st := range h.Steps {
			if i >= len(steps) || st == nil {
				continue
			}
			if steps[i] == nil {
				steps[i] = map[float64]float64{}
			}
			for _, bk := range st {
				if common[bk.UpperBound] {
					steps[i][bk.UpperBound] += bk.Count
				}
			}
		}
	}
	p99, p50 := make([]float64, len(steps)), make([]float64, len(steps))
	var xs, ys []float64
	for i, m := range steps {
		p99[i], p50[i] = math.NaN(), math.NaN()
		if m == nil {
			continue
		}
		bk := make([]window.Bucket, 0, len(m))
		total := 0.0
		for le, c := range m {
			bk = append(bk, window.Bucket{UpperBound: le, Count: c})
			total = math.Max(total, c) // cumulative: the +Inf bucket holds all
		}
		if total < 10 {
			continue // too few first tokens in this step to place a p99
		}
		// A rank past the highest finite bound has only that bound as a
		// lower limit: no value to draw or fit.
		if q := window.Quantile(0.99, bk); evidence.Present(q) && !pastTopBucket(0.99, bk) {
			p99[i] = q
			xs, ys = append(xs, float64(i)), append(ys, q)
		}
		if !pastTopBucket(0.5, bk) {
			p50[i] = window.Quantile(0.5, bk)
		}
	}
	if len(xs) < 2 {
		return
	}
	b.v.Stage.TTFTP99Steps = evidence.Summarise(p99)
	b.curve("ttft_p99_steps", p99)
	b.curve("ttft_p50_steps", p50)
	b.cite("stage.ttft_p99_steps", name)
	if len(xs) >= 4 {
		slope, mean := window.LeastSquares(xs, ys)
		if mean > 0 {
			b.v.Stage.TTFTP99Trend = slope * (xs[len(xs)-1] - xs[0]) / mean
			b.e.Cite("stage.ttft_p99_trend", evidence.Source{Metric: name, From: b.w.From, Note: "least-squares slope of per-step p99 × window ÷ mean"})
		}
	}
}

// pastTopBucket reports whether the q-quantile's rank falls in the +Inf
// bucket, where histogram_quantile answers the highest finite bound.
func pastTopBucket(q float64, bk []window.Bucket) bool {
	total, top := 0.0, 0.0
	for _, b := range bk {
		total = math.Max(total, b.Count)
		if !math.IsInf(b.UpperBound, 1) {
			top = math.Max(top, b.Count)
		}
	}
	return total > 0 && top < q*total
}

// buckets returns the summed buckets of a histogram, or nil.
func (b *builder) buckets(key string) ([]window.Bucket, string) {
	bk, _, _, name := b.sumHist(key)
	return bk, name
}

// dist sums a histogram over the target's series and summarises it.
func (b *builder) dist(key, path string) evidence.Dist {
	d := evidence.Dist{Count: math.NaN(), Mean: math.NaN(), P50: math.NaN(), P90: math.NaN(),
		P95: math.NaN(), P99: math.NaN(), Max: math.NaN()}
	buckets, sum, count, name := b.sumHist(key)
	if name == "" {
		b.withheld(key, path)
		return d
	}
	d.Count = count
	if count > 0 {
		// The largest observation lies at most at the top of the highest
		// bucket holding one: what a comparison's band needs of the tail.
		if _, hi := window.ObservedRange(buckets, count); !math.IsInf(hi, 0) {
			if _, lo, _ := window.QuantileBucket(1, buckets); lo <= hi {
				b.e.SetResolution(path+".max", lo, hi)
			}
		}
		d.Mean = sum / count
		if lo, hi := window.ObservedRange(buckets, count); d.Mean < lo*(1-1e-6)-1e-9 || d.Mean > hi*(1+1e-6)+1e-9 {
			b.e.AddInconsistency(evidence.Inconsistency{Check: "mean-outside-buckets", Fields: []string{path},
				Note: fmt.Sprintf("%s: the mean (_sum ÷ _count = %g) lies outside the buckets that hold observations (%g to %g): it is withheld", name, d.Mean, lo, hi)})
		}
	}
	for _, q := range []struct {
		q    float64
		name string
		v    *float64
	}{{0.5, "p50", &d.P50}, {0.9, "p90", &d.P90}, {0.95, "p95", &d.P95}, {0.99, "p99", &d.P99}} {
		v, lo, hi := window.QuantileBucket(q.q, buckets)
		*q.v = v
		if lo < hi && !math.IsInf(hi, 0) {
			b.e.SetResolution(path+"."+q.name, lo, hi)
		}
	}
	// histogram_quantile answers the highest finite bound for a rank in the
	// +Inf bucket: only a lower limit, which a rule would read as the value
	// (a p99 within an SLO that it is not). Token counts are left as they
	// are: their top bucket sits near the model's length limit, and rules
	// compare them only from below (long prompts).
	if m, _ := b.eng.ByKey(key); m.Unit == "s" || m.Unit == "ms" {
		var past []string
		top := math.NaN()
		for _, q := range []struct {
			q    float64
			name string
		}{{0.5, "p50"}, {0.9, "p90"}, {0.95, "p95"}, {0.99, "p99"}} {
			if pastTopBucket(q.q, buckets) {
				past = append(past, path+"."+q.name)
				top = window.Quantile(q.q, buckets)
			}
		}
		if len(past) > 0 {
			b.e.AddInconsistency(evidence.Inconsistency{Check: "quantile-past-top-bucket", Fields: past,
				Note: fmt.Sprintf("%s: %s fall past the highest finite bucket (%g s): each is only known to be over it, so it is withheld", name, strings.Join(past, ", "), top)})
		}
	}
	b.cite(path, name)
	return d
}

// series sums a gauge point by point over the target's series and summarises
// it; match, as label/value pairs, narrows the series further.
func (b *builder) series(key, path string, match ...string) evidence.Series {
	points, name := b.points(key, path, match...)
	s := evidence.Summarise(points)
	if name == "" || !evidence.Present(s.Mean) {
		return s
	}
	b.cite(path, name)
	b.curve(evidence.CurveOf(path), points)
	return s
}

// points sums a gauge point by point over the target's series (a ratio
// averages), with the family read; nil and "" when there is none.
func (b *builder) points(key, path string, match ...string) ([]float64, string) {
	name, ok := b.present(key)
	if !ok {
		b.withheld(key, path)
		return nil, ""
	}
	m, _ := b.eng.ByKey(key)
	// Point by point: counts add up across engines and instances, ratios
	// (KV usage) average over the series present. A count with one series
	// missing at a point (a failed scrape, a stale replica) is unknown
	// there: a partial sum would pass for the whole, a fake drop.
	var points, n []float64
	series := 0
	for _, g := range b.w.Gauges[name] {
		if !b.mine(key, g.Labels, false) || !labelPairs(g.Labels, match) {
			continue
		}
		series++
		if points == nil {
			points, n = make([]float64, len(g.Points)), make([]float64, len(g.Points))
		}
		for i, p := range g.Points {
			if i < len(points) && evidence.Present(p) {
				points[i] += p
				n[i]++
			}
		}
	}
	for i := range points {
		switch {
		case n[i] == 0:
			points[i] = math.NaN()
		case m.Ratio():
			points[i] /= n[i]
		case n[i] < float64(series):
			points[i] = math.NaN()
		}
	}
	return points, name
}

// seriesCount is how many of the target's series a gauge sums: its engines
// and replicas, counted where the source keeps them apart.
func (b *builder) seriesCount(key string) int {
	m, _ := b.eng.ByKey(key)
	name, ok := Present(b.members, m)
	if !ok {
		return 0
	}
	n := 0
	for _, g := range b.members.Gauges[name] {
		if b.mine(key, g.Labels, false) {
			n++
		}
	}
	return n
}

// seriesMax is the highest point of any one of the target's series of a
// gauge (NaN when none): a ratio is averaged over engines and replicas, and
// one full cache among them would not show in the mean.
func (b *builder) seriesMax(key string) float64 {
	m, _ := b.eng.ByKey(key)
	name, ok := Present(b.members, m)
	if !ok {
		return math.NaN()
	}
	top := math.NaN()
	for _, g := range b.members.Gauges[name] {
		if !b.mine(key, g.Labels, false) {
			continue
		}
		for _, p := range g.Points {
			if evidence.Present(p) && !(p <= top) {
				top = p
			}
		}
	}
	return top
}

// curve keeps points through the window for charts, under key ("": none).
func (b *builder) curve(key string, points []float64) {
	if pts := b.w.Timeline(points); key != "" && len(pts) > 0 {
		b.e.Curves[key] = pts
	}
}

// counter sums a counter's increase over the target's series.
func (b *builder) counter(key, path string) (float64, bool) {
	name, ok := b.present(key)
	if !ok {
		b.withheld(key, path)
		return 0, false
	}
	var inc float64
	found := false
	for _, c := range b.w.Counters[name] {
		if b.mine(key, c.Labels, false) {
			inc += c.Increase
			found = true
		}
	}
	if found {
		b.cite(path, name)
	}
	return inc, found
}

// finished reads finished requests, by reason where the engine gives one.
func (b *builder) finished(secs float64) {
	name, ok := b.present(RequestSuccess)
	if !ok {
		return
	}
	reason := b.eng.ReasonLabel
	by := map[string]float64{}
	var total float64
	found := false
	for _, c := range b.w.Counters[name] {
		if b.mine(RequestSuccess, c.Labels, false) {
			by[c.Labels[reason]] += c.Increase
			total += c.Increase
			found = true
		}
	}
	if !found {
		return
	}
	sv := &b.v.Service
	sv.Finished = total
	sv.RequestRate = total / secs
	cited := []string{"service.finished", "service.request_rate"}
	if reason != "" {
		sv.Errors, sv.Aborts = by["error"], by["abort"]
		sv.Failed = by["error"] + by["abort"]
		if total > 0 {
			sv.FailedShare = (by["error"] + by["abort"]) / total
			sv.LengthShare = by["length"] / total
		}
		cited = append(cited, "service.errors", "service.aborts", "service.failed", "service.failed_share", "service.length_share")
	} else if aborts, ok := b.counter(RequestAborts, "service.aborts"); ok {
		// Counted apart, but an aborted request also ends through the
		// finished counter (SGLang's tokenizer sees its last output), so
		// the share is of the finished count.
		sv.Aborts, sv.Failed = aborts, aborts
		if total > 0 {
			sv.FailedShare = math.Min(1, aborts/total)
			cited = append(cited, "service.failed", "service.failed_share")
		}
	}
	for _, p := range cited {
		b.cite(p, name)
	}
}

// cacheConfig reads the KV cache configuration: an info family's labels
// (vLLM) or capacity gauges (SGLang).
func (b *builder) cacheConfig() {
	name, ok := b.present(CacheConfig)
	if !ok {
		b.withheld(CacheConfig, "cond.kv_capacity_tokens", "cond.gpu_blocks", "cond.block_size", "cond.prefix_caching", "cond.gpu_memory_utilization", "cond.kv_cache_fp8")
		b.capacityGauges()
		return
	}
	c := &b.v.Cond
	var blocksTotal, capTotal float64
	seen := 0
	engines := map[string]string{}
	// The series has no model_name, so it matches on the labels it does
	// carry (engine, instance), and one that names its replica is the
	// target's only if the target is served there: two models' servers
	// each state their own configuration.
	replica, served := "", map[string]bool{}
	if len(b.eng.Members) > 0 {
		replica = b.eng.Members[0]
		for _, v := range distinct(b.members, b.sel, replica) {
			served[v] = true
		}
	}
	for _, in := range b.w.Infos[name] {
		if !b.mine(CacheConfig, in.Labels, true) {
			continue
		}
		if v := in.Labels[replica]; replica != "" && v != "" && len(served) > 0 && !served[v] {
			continue
		}
		// One engine stating two configurations in one window changed
		// configuration within it: adding both would blend two servers.
		eng := b.memberKey(in.Labels)
		cfg := in.Labels["num_gpu_blocks"] + " blocks × " + in.Labels["block_size"]
		if prev, ok := engines[eng]; ok && prev != cfg {
			b.e.AddInconsistency(evidence.Inconsistency{Check: "exposition",
				Fields: []string{"cond.kv_capacity_tokens", "cond.gpu_blocks", "cond.block_size"},
				Note:   fmt.Sprintf("%s states two configurations for one engine within the window (%s, then %s): the server was reconfigured, so its KV capacity is withheld", name, prev, cfg)})
			return
		}
		engines[eng] = cfg
		seen++
		bs := parseNum(in.Labels["block_size"])
		nb := parseNum(in.Labels["num_gpu_blocks"])
		if evidence.Present(bs) {
			c.BlockSize = bs
		}
		if evidence.Present(nb) {
			blocksTotal += nb
			if evidence.Present(bs) {
				capTotal += nb * bs
			}
		}
		if u := parseNum(in.Labels["gpu_memory_utilization"]); evidence.Present(u) {
			c.GPUMemoryUtilization = u
		}
		switch strings.ToLower(in.Labels["enable_prefix_caching"]) {
		case "true":
			c.PrefixCaching = 1
		case "false":
			c.PrefixCaching = 0
		}
		// cache_dtype is "auto" (the model's type) or the type asked for:
		// fp8, fp8_e4m3, fp8_e5m2, …
		if d := strings.ToLower(in.Labels["cache_dtype"]); d != "" {
			c.KVCacheFP8 = 0
			if strings.HasPrefix(d, "fp8") {
				c.KVCacheFP8 = 1
			}
		}
	}
	if seen == 0 {
		return
	}
	if blocksTotal > 0 {
		c.GPUBlocks = blocksTotal
	}
	if capTotal > 0 {
		c.KVCapacityTokens = capTotal
	}
	for _, p := range []string{"cond.block_size", "cond.gpu_blocks", "cond.kv_capacity_tokens",
		"cond.gpu_memory_utilization", "cond.prefix_caching", "cond.kv_cache_fp8"} {
		b.cite(p, name)
	}
}

// memberKey identifies the engine process a series comes from.
func (b *builder) memberKey(l window.Labels) string {
	var parts []string
	for _, m := range b.eng.Members {
		parts = append(parts, l[m])
	}
	return strings.Join(parts, "/")
}

// capacityGauges reads KV capacity from gauges: one value per series, each
// an engine process (replica, worker behind a gateway, data-parallel rank)
// once the builder has collapsed copies (Engine.Copies) into one series.
// Keying them by the member labels instead would count one of several
// workers that share them (a gateway's workers differ in worker_addr).
func (b *builder) capacityGauges() {
	read := func(key string) (float64, string, bool) {
		name, ok := b.present(key)
		if !ok {
			b.withheld(key, "cond.kv_capacity_tokens")
			return 0, "", false
		}
		var total, largest float64
		found := false
		for _, g := range b.w.Gauges[name] {
			if !b.mine(key, g.Labels, false) {
				continue
			}
			if s := evidence.Summarise(g.Points); evidence.Present(s.Last) {
				total += s.Last
				largest = math.Max(largest, s.Last)
				found = true
			}
		}
		if !found {
			return 0, "", false
		}
		if key == PageSize {
			return largest, name, true
		}
		return total, name, true
	}
	if x, name, ok := read(KVCapacity); ok && x > 0 {
		b.v.Cond.KVCapacityTokens = x
		b.cite("cond.kv_capacity_tokens", name)
	}
	if x, name, ok := read(PageSize); ok && x > 0 {
		b.v.Cond.BlockSize = x
		b.cite("cond.block_size", name)
	}
}

func labelPairs(l window.Labels, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if l[pairs[i]] != pairs[i+1] {
			return false
		}
	}
	return true
}

func parseNum(s string) float64 {
	if s == "" || s == "None" {
		return math.NaN()
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return x
}

func boolNum(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func emptyLabels(l window.Labels) bool {
	for _, v := range l {
		if v != "" {
			return false
		}
	}
	return true
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func copyLabels(l window.Labels) window.Labels {
	o := window.Labels{}
	for k, v := range l {
		o[k] = v
	}
	return o
}

// speculation reads speculative decoding: whether it runs, the tokens a
// request keeps per verify step and the share of drafts accepted. An
// inter-token histogram observed once per step (vLLM's) then times steps
// that give several tokens: its gaps are divided by the tokens kept, so
// that stage.itl is per token whatever the engine.
func (b *builder) speculation() {
	v := b.v
	drafts, okD := b.counter(SpecDrafts, "cond.spec_tokens")
	draftTok, okT := b.counter(SpecDraftTokens, "service.spec_acceptance")
	acc, okA := b.counter(SpecAccepted, "service.spec_accept_length")
	name, _ := b.present(SpecDrafts)
	switch {
	case okD || okT || okA:
		// Created only with speculative decoding configured.
		v.Cond.Speculative = 1
		b.e.Cite("cond.speculative", evidence.Source{Metric: "derived", From: b.w.From, Note: "speculative decoding counters present"})
		if okD && drafts > 0 && okA {
			v.Service.SpecAcceptLength = 1 + acc/drafts
			b.e.Cite("service.spec_accept_length", evidence.Source{Metric: "derived", From: b.w.From, Note: "1 + accepted tokens ÷ " + name})
		} else {
			delete(b.e.Sources, "service.spec_accept_length")
		}
		if okD && drafts > 0 && okT {
			v.Cond.SpecTokens = draftTok / drafts
			b.e.Cite("cond.spec_tokens", evidence.Source{Metric: "derived", From: b.w.From, Note: "draft tokens ÷ " + name})
		} else {
			delete(b.e.Sources, "cond.spec_tokens")
		}
	case b.eng.SpecRegistered != nil && b.eng.SpecRegistered(b.w) && evidence.Present(v.Service.Running.Mean):
		delete(b.e.Sources, "service.spec_accept_length")
		v.Cond.Speculative = 0
		b.e.Cite("cond.speculative", evidence.Source{Metric: "derived", From: b.w.From,
			Note: b.eng.Title + " registers its speculative decoding counters only with speculative decoding on, and there are none"})
	default:
		delete(b.e.Sources, "service.spec_accept_length")
		if s := b.series(SpecAcceptLength, "service.spec_accept_length"); evidence.Present(s.Mean) {
			// SGLang's gauge is 0 without speculative decoding, and holds
			// the last decode window's mean with it.
			v.Cond.Speculative = boolNum(s.Max > 0)
			b.e.Cite("cond.speculative", evidence.Source{Metric: b.e.Sources["service.spec_accept_length"].Metric, From: b.w.From, Note: "0 without speculative decoding"})
			if s.Max > 0 {
				v.Service.SpecAcceptLength = s.Mean
			} else {
				delete(b.e.Sources, "service.spec_accept_length")
			}
		}
	}
	switch {
	case okT && okA && draftTok > 0:
		v.Service.SpecAcceptance = acc / draftTok
	case v.Cond.Speculative == 1:
		delete(b.e.Sources, "service.spec_acceptance")
		if s := b.series(SpecAcceptRate, "service.spec_acceptance"); evidence.Present(s.Mean) {
			// SGLang's gauge: before v0.5.11 it reads high (the bonus
			// token counted), so a low reading is low either way.
			v.Service.SpecAcceptance = math.Min(1, s.Mean)
		}
	default:
		delete(b.e.Sources, "service.spec_acceptance")
	}
	l := v.Service.SpecAcceptLength
	m, _ := b.eng.ByKey(StepLatency)
	if !evidence.Present(l) || l <= 1 || m.PerToken || !evidence.Present(v.Stage.ITL.Count) {
		return
	}
	d := &v.Stage.ITL
	for _, x := range []*float64{&d.Mean, &d.P50, &d.P90, &d.P95, &d.P99, &d.Max} {
		*x /= l
	}
	for _, q := range []string{"mean", "p50", "p90", "p95", "p99", "max"} {
		if r, ok := b.e.Resolution["stage.itl."+q]; ok {
			b.e.Resolution["stage.itl."+q] = [2]float64{r[0] / l, r[1] / l}
		}
	}
	src := b.e.Sources["stage.itl"]
	src.Note = strings.TrimPrefix(src.Note+fmt.Sprintf("; gaps between steps divided by the %.2f tokens a request kept per speculative step: per token", l), "; ")
	b.e.Cite("stage.itl", src)
}

// lora reads LoRA adapters: whether the engine serves them, the adapter
// slots of a running batch, and the requests waiting for a slot.
func (b *builder) lora() {
	v := b.v
	if name, ok := b.present(LoRAInfo); ok {
		// vLLM's info series carry no model_name: they are the target's
		// where nothing they carry says otherwise.
		slots := math.NaN()
		for _, in := range b.w.Infos[name] {
			if !b.mine(LoRAInfo, in.Labels, true) {
				continue
			}
			if x, err := strconv.ParseFloat(in.Labels["max_lora"], 64); err == nil && x > 0 && !(x <= slots) {
				slots = x
			}
		}
		if !evidence.Present(slots) {
			return
		}
		v.Cond.LoRA, v.Cond.MaxLoRAs = 1, slots
		b.e.Cite("cond.lora", evidence.Source{Metric: name, From: b.w.From})
		b.e.Cite("cond.max_loras", evidence.Source{Metric: name, From: b.w.From, Note: "label max_lora"})
		// Requests the scheduler passed over for want of an adapter slot
		// (or a KV transfer) wait as deferred.
		v.Service.LoRAHeld = b.series(WaitingByReason, "service.lora_held", "reason", "deferred")
		return
	}
	total, name := b.points(LoRASlots, "cond.max_loras")
	used, _ := b.points(LoRASlotsUsed, "service.lora_held")
	waiting, _ := b.points(Waiting, "service.lora_held")
	slots := evidence.Summarise(total)
	if name == "" || !evidence.Present(slots.Max) || slots.Max <= 0 {
		// Families created only with LoRA on, in a window of metrics (a
		// log never shows them): absent, LoRA is off.
		if r := b.eng.LoRARegistered; r != nil && r(b.w) && len(b.w.Histograms) > 0 {
			v.Cond.LoRA = 0
			b.e.Cite("cond.lora", evidence.Source{Metric: "derived", From: b.w.From,
				Note: b.eng.Title + " exports its LoRA metrics only with LoRA enabled, and there are none"})
		}
		return
	}
	v.Cond.LoRA, v.Cond.MaxLoRAs = 1, slots.Max
	b.e.Cite("cond.lora", evidence.Source{Metric: name, From: b.w.From})
	b.e.Cite("cond.max_loras", evidence.Source{Metric: name, From: b.w.From})
	if len(used) != len(total) || len(waiting) != len(total) {
		return
	}
	// SGLang does not say which adapter a queued request wants: at a
	// reading where every slot is taken, the queue waits for one.
	held := make([]float64, len(total))
	for i := range held {
		switch {
		case !evidence.Present(used[i]) || !evidence.Present(waiting[i]) || !evidence.Present(total[i]):
			held[i] = math.NaN()
		case used[i] >= total[i]:
			held[i] = waiting[i]
		}
	}
	if s := evidence.Summarise(held); evidence.Present(s.Mean) {
		v.Service.LoRAHeld = s
		b.e.Cite("service.lora_held", evidence.Source{Metric: "derived", From: b.w.From,
			Note: "queued requests at the readings where every LoRA adapter slot is in use"})
	}
}
