package vllm

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// Options control how series become targets.
type Options struct {
	// GroupBy are the labels that make a target; default model_name.
	GroupBy []string
	// WeightBytes gives model sizes by served name, over the presets.
	WeightBytes map[string]float64
}

// Member labels: a target keeps one breakdown per distinct value of these.
var memberLabels = []string{"instance", "engine"}

// Build turns a window into one evidence per target, each with per-instance
// and per-engine members when there is more than one.
func Build(w *window.Window, opt Options) []*evidence.Evidence {
	group := opt.GroupBy
	if len(group) == 0 {
		group = []string{"model_name"}
	}
	var out []*evidence.Evidence
	for _, sel := range targets(w, group) {
		if emptyLabels(sel) {
			// Series without the grouping labels are not a vLLM engine's (the
			// production-stack router reuses vllm: names with a server label).
			w.Notes = append(w.Notes, fmt.Sprintf("series without %s were left out (a router or another exporter?); group by a label they carry to read them",
				strings.Join(group, ", ")))
			continue
		}
		// One pass per target and per member label keeps a fleet of
		// thousands of instances linear.
		tw := restrict(w, sel)
		e := buildOne(tw, sel, opt)
		for _, ml := range memberLabels {
			if contains(group, ml) {
				continue
			}
			parts := partition(tw, ml)
			if len(parts) < 2 {
				continue
			}
			vals := make([]string, 0, len(parts))
			for v := range parts {
				vals = append(vals, v)
			}
			sort.Strings(vals)
			for _, v := range vals {
				sub := copyLabels(sel)
				sub[ml] = v
				e.Members = append(e.Members, buildOne(parts[v], sub, opt))
			}
		}
		fleet(e)
		out = append(out, e)
	}
	return out
}

// restrict keeps the series that match sel; info series match on the labels
// they carry (cache_config_info has no model_name).
func restrict(w *window.Window, sel window.Labels) *window.Window {
	return split(w, func(l window.Labels) []string {
		if matches(sel, l, false) {
			return []string{""}
		}
		return nil
	}, func(l window.Labels) []string {
		if matches(sel, l, true) {
			return []string{""}
		}
		return nil
	})[""]
}

// partition splits a window by one label's values; info series without the
// label belong to every part.
func partition(w *window.Window, label string) map[string]*window.Window {
	values := map[string]bool{}
	key := func(l window.Labels) []string {
		if v, ok := l[label]; ok {
			values[v] = true
			return []string{v}
		}
		return nil
	}
	parts := split(w, key, nil)
	for v := range values {
		if parts[v] == nil {
			parts[v] = emptyLike(w)
		}
	}
	for _, ins := range w.Infos {
		for _, in := range ins {
			if v, ok := in.Labels[label]; ok {
				if p := parts[v]; p != nil {
					p.Infos[infoName] = append(p.Infos[infoName], in)
				}
				continue
			}
			for _, p := range parts {
				p.Infos[infoName] = append(p.Infos[infoName], in)
			}
		}
	}
	return parts
}

var infoName = ByKey(CacheConfig).Names[0]

func emptyLike(w *window.Window) *window.Window {
	n := window.New()
	n.Start, n.End, n.Length, n.Cumulative, n.Points, n.From = w.Start, w.End, w.Length, w.Cumulative, w.Points, w.From
	n.Withheld = w.Withheld
	return n
}

// split files every series under the keys key returns; infoKey (nil: none)
// does the same for info series.
func split(w *window.Window, key, infoKey func(window.Labels) []string) map[string]*window.Window {
	out := map[string]*window.Window{}
	get := func(k string) *window.Window {
		if out[k] == nil {
			out[k] = emptyLike(w)
		}
		return out[k]
	}
	for name, ss := range w.Counters {
		for _, s := range ss {
			for _, k := range key(s.Labels) {
				p := get(k)
				p.Counters[name] = append(p.Counters[name], s)
			}
		}
	}
	for name, ss := range w.Gauges {
		for _, s := range ss {
			for _, k := range key(s.Labels) {
				p := get(k)
				p.Gauges[name] = append(p.Gauges[name], s)
			}
		}
	}
	for name, ss := range w.Histograms {
		for _, s := range ss {
			for _, k := range key(s.Labels) {
				p := get(k)
				p.Histograms[name] = append(p.Histograms[name], s)
			}
		}
	}
	if infoKey != nil {
		for name, ss := range w.Infos {
			for _, s := range ss {
				for _, k := range infoKey(s.Labels) {
					p := get(k)
					p.Infos[name] = append(p.Infos[name], s)
				}
			}
		}
	}
	if out[""] == nil && infoKey != nil {
		out[""] = emptyLike(w)
	}
	return out
}

// fleet compares each instance with the median of the others: one replica
// far above its peers is load imbalance or a sick instance.
func fleet(e *evidence.Evidence) {
	var inst []*evidence.Evidence
	for _, m := range e.Members {
		if m.Target.Instance != "" && m.Target.Engine == "" {
			inst = append(inst, m)
		}
	}
	v := &e.Values.Service
	v.Instances = float64(max(1, len(inst)))
	e.Cite("service.instances", evidence.Source{Metric: "derived", Note: "instance label values (one server when there are none)"})
	if len(inst) < 2 {
		return
	}
	outlier := func(get func(*evidence.Evidence) float64, smooth float64) (float64, string) {
		best, name := math.NaN(), ""
		for i, m := range inst {
			x := get(m)
			var others []float64
			for j, o := range inst {
				if y := get(o); j != i && evidence.Present(y) {
					others = append(others, y)
				}
			}
			if !evidence.Present(x) || len(others) == 0 {
				continue
			}
			sort.Float64s(others)
			med := others[len(others)/2]
			if len(others)%2 == 0 {
				med = (others[len(others)/2-1] + others[len(others)/2]) / 2
			}
			if med+smooth <= 0 {
				continue
			}
			if r := (x + smooth) / (med + smooth); !(r <= best) {
				best, name = r, m.Target.Instance
			}
		}
		return best, name
	}
	if r, n := outlier(func(m *evidence.Evidence) float64 { return m.Values.Stage.TTFT.P99 }, 0); evidence.Present(r) {
		v.TTFTP99OutlierRatio = r
		e.Text["service.ttft_p99_outlier"] = n
		e.Cite("service.ttft_p99_outlier_ratio", evidence.Source{Metric: "derived", Note: "per-instance TTFT p99 against the median of the others"})
	}
	if r, n := outlier(func(m *evidence.Evidence) float64 { return m.Values.Service.Waiting.Mean }, 1); evidence.Present(r) {
		v.WaitingOutlierRatio = r
		e.Text["service.waiting_outlier"] = n
		e.Cite("service.waiting_outlier_ratio", evidence.Source{Metric: "derived", Note: "per-instance mean waiting against the median of the others"})
	}
}

// targets lists the distinct group label values across catalogue series.
func targets(w *window.Window, group []string) []window.Labels {
	seen := map[string]window.Labels{}
	add := func(l window.Labels) {
		sel := window.Labels{}
		for _, g := range group {
			sel[g] = l[g]
		}
		seen[sel.Key()] = sel
	}
	for _, m := range Catalogue {
		name, ok := present(w, m)
		if !ok || m.Kind == Info {
			continue
		}
		switch m.Kind {
		case Counter:
			for _, s := range w.Counters[name] {
				add(s.Labels)
			}
		case Gauge:
			for _, s := range w.Gauges[name] {
				add(s.Labels)
			}
		case Histogram:
			for _, s := range w.Histograms[name] {
				add(s.Labels)
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]window.Labels, 0, len(keys))
	for _, k := range keys {
		out = append(out, seen[k])
	}
	return out
}

// present returns the first of a metric's names that the window holds.
func present(w *window.Window, m Metric) (string, bool) {
	for _, n := range m.Names {
		var ok bool
		switch m.Kind {
		case Counter:
			_, ok = w.Counters[n]
		case Gauge:
			_, ok = w.Gauges[n]
		case Histogram:
			_, ok = w.Histograms[n]
		case Info:
			_, ok = w.Infos[n]
		}
		if ok {
			return n, true
		}
	}
	return "", false
}

// matches: every selector label equals the series label. With wildcard, a
// label the series lacks matches anything (cache_config_info has no model_name).
func matches(sel, l window.Labels, wildcard bool) bool {
	for k, v := range sel {
		lv, ok := l[k]
		if !ok && wildcard {
			continue
		}
		if lv != v {
			return false
		}
	}
	return true
}

func distinct(w *window.Window, sel window.Labels, label string) []string {
	set := map[string]bool{}
	for _, ss := range w.Gauges {
		for _, s := range ss {
			if v, ok := s.Labels[label]; ok && matches(sel, s.Labels, false) {
				set[v] = true
			}
		}
	}
	for _, ss := range w.Histograms {
		for _, s := range ss {
			if v, ok := s.Labels[label]; ok && matches(sel, s.Labels, false) {
				set[v] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

type builder struct {
	w   *window.Window
	sel window.Labels
	e   *evidence.Evidence
	v   *evidence.Values
}

func buildOne(w *window.Window, sel window.Labels, opt Options) *evidence.Evidence {
	t := evidence.Target{Model: sel["model_name"], Instance: sel["instance"], Engine: sel["engine"], Labels: map[string]string(sel)}
	if t.Model == "" && t.Instance == "" {
		// Grouped by something else: name the target by its labels.
		t.Model = strings.TrimSuffix(sel.Key(), ",")
	}
	b := &builder{w: w, sel: sel, e: evidence.New(t)}
	b.v = &b.e.Values
	v := b.v
	secs := w.Seconds()

	v.Cond.PromptTokens = b.dist(PromptLen, "cond.prompt_tokens")
	v.Cond.ComputedPromptTokens = b.dist(ComputedPrompt, "cond.computed_prompt_tokens")
	v.Cond.OutputTokens = b.dist(GenerationLen, "cond.output_tokens")
	v.Cond.MaxTokens = b.dist(MaxTokens, "cond.max_tokens")
	v.Cond.WindowSeconds = secs
	if wb, ok := opt.WeightBytes[t.Model]; ok && wb > 0 {
		v.Cond.WeightBytes = wb
		b.e.Cite("cond.weight_bytes", evidence.Source{Metric: "config", Note: "models." + t.Model + ".weight_bytes"})
	} else if wb := WeightBytes(t.Model); evidence.Present(wb) {
		v.Cond.WeightBytes = wb
		b.e.Cite("cond.weight_bytes", evidence.Source{Metric: "derived", Note: "weight-size preset for the served model name"})
	}
	if !math.IsNaN(secs) {
		b.e.Cite("cond.window_seconds", evidence.Source{Metric: "derived", From: w.From, Note: "window end − start"})
	}
	b.cacheConfig()
	if n := len(distinct(w, sel, "engine")); n > 0 {
		v.Cond.Engines = float64(n)
		b.e.Cite("cond.engines", evidence.Source{Metric: "derived", From: w.From, Note: "distinct engine label values"})
	}

	_, hasQ := present(w, ByKey(QueueTime))
	_, hasP := present(w, ByKey(PrefillTime))
	_, hasT := present(w, ByKey(RequestTPOT))
	v.Cond.StageMetrics, v.Cond.TPOTTracked = boolNum(hasQ && hasP), boolNum(hasT)
	b.e.Cite("cond.stage_metrics", evidence.Source{Metric: "derived", From: w.From, Note: "queue and prefill histograms present"})
	b.e.Cite("cond.tpot_tracked", evidence.Source{Metric: "derived", From: w.From, Note: "request TPOT histogram present"})
	v.Stage.TTFT = b.dist(TTFT, "stage.ttft")
	v.Stage.Queue = b.dist(QueueTime, "stage.queue")
	v.Stage.Prefill = b.dist(PrefillTime, "stage.prefill")
	v.Stage.Decode = b.dist(DecodeTime, "stage.decode")
	v.Stage.Inference = b.dist(InferenceTime, "stage.inference")
	v.Stage.ITL = b.dist(StepLatency, "stage.itl")
	v.Stage.TPOT = b.dist(RequestTPOT, "stage.tpot")
	b.ttftTrend()
	if bk, name := b.buckets(StepLatency); bk != nil {
		v.Stage.ITLStalls = window.CountAbove(0.5, bk)
		v.Stage.ITLStallSeconds = window.SumAbove(0.5, bk)
		b.cite("stage.itl_stalls", name)
		b.cite("stage.itl_stall_seconds", name)
	}

	v.Service.E2E = b.dist(E2E, "service.e2e")
	v.Service.IterationTokens = b.dist(IterationTokens, "service.iteration_tokens")
	v.Service.Running = b.series(Running, "service.running")
	// Newer vLLM counts deferred requests (LoRA budget, KV transfer) in
	// num_requests_waiting; only those waiting for capacity say the batch is full.
	v.Service.Waiting = b.series(WaitingByReason, "service.waiting", "reason", "capacity")
	if !evidence.Present(v.Service.Waiting.Mean) {
		v.Service.Waiting = b.series(Waiting, "service.waiting")
	}
	b.finished(secs)
	if x, ok := b.counter(PromptTokens, "service.prompt_tps"); ok {
		v.Service.PromptTPS = x / secs
	}
	if x, ok := b.counter(GenTokens, "service.generation_tps"); ok {
		v.Service.GenerationTPS = x / secs
	}
	if x, ok := b.counter(Preemptions, "service.preemptions"); ok {
		v.Service.Preemptions = x
	}

	v.Resource.KVUsage = b.series(KVUsage, "resource.kv_usage")
	q, okq := b.counter(PrefixQueries, "resource.prefix_queries")
	h, okh := b.counter(PrefixHits, "resource.prefix_hit_rate")
	if okq {
		v.Resource.PrefixQueries = q
	}
	switch {
	case okq && okh && q > 0:
		v.Resource.PrefixHitRate = h / q
	default:
		if s := b.series(PrefixHitGauge, "resource.prefix_hit_rate"); evidence.Present(s.Mean) {
			v.Resource.PrefixHitRate = s.Mean
		} else {
			delete(b.e.Sources, "resource.prefix_hit_rate")
		}
	}
	return b.e
}

// withheld names evidence whose family was read but not trusted, so rules
// that need it say why instead of asking the user to export it.
func (b *builder) withheld(key string, paths ...string) {
	for _, n := range ByKey(key).Names {
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
	name, ok := present(b.w, ByKey(key))
	if !ok {
		return nil, 0, 0, ""
	}
	byLE := map[float64]float64{}
	found := false
	for _, h := range b.w.Histograms[name] {
		if !matches(b.sel, h.Labels, false) {
			continue
		}
		found = true
		for _, bk := range h.Buckets {
			byLE[bk.UpperBound] += bk.Count
		}
		sum += h.Sum
		count += h.Count
	}
	if !found {
		return nil, 0, 0, ""
	}
	buckets = make([]window.Bucket, 0, len(byLE))
	for le, c := range byLE {
		buckets = append(buckets, window.Bucket{UpperBound: le, Count: c})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].UpperBound < buckets[j].UpperBound })
	return buckets, sum, count, name
}

// ttftTrend sums the TTFT histogram step by step over the target's series
// and reads p99 per step and its trend across the window.
func (b *builder) ttftTrend() {
	name, ok := present(b.w, ByKey(TTFT))
	if !ok {
		return
	}
	var steps []map[float64]float64
	for _, h := range b.w.Histograms[name] {
		if !matches(b.sel, h.Labels, false) || h.Steps == nil {
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
				steps[i][bk.UpperBound] += bk.Count
			}
		}
	}
	p99 := make([]float64, len(steps))
	var xs, ys []float64
	for i, m := range steps {
		p99[i] = math.NaN()
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
		if q := window.Quantile(0.99, bk); evidence.Present(q) {
			p99[i] = q
			xs, ys = append(xs, float64(i)), append(ys, q)
		}
	}
	if len(xs) < 2 {
		return
	}
	b.v.Stage.TTFTP99Steps = evidence.Summarise(p99)
	b.cite("stage.ttft_p99_steps", name)
	if len(xs) >= 4 {
		slope, mean := leastSquares(xs, ys)
		if mean > 0 {
			b.v.Stage.TTFTP99Trend = slope * (xs[len(xs)-1] - xs[0]) / mean
			b.e.Cite("stage.ttft_p99_trend", evidence.Source{Metric: name, From: b.w.From, Note: "least-squares slope of per-step p99 × window ÷ mean"})
		}
	}
}

func leastSquares(xs, ys []float64) (slope, meanY float64) {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	n := float64(len(xs))
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, my
	}
	return sxy / sxx, my
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
		d.Mean = sum / count
		if lo, hi := window.ObservedRange(buckets, count); d.Mean < lo*(1-1e-6)-1e-9 || d.Mean > hi*(1+1e-6)+1e-9 {
			b.e.AddInconsistency(evidence.Inconsistency{Check: "mean-outside-buckets", Fields: []string{path},
				Note: fmt.Sprintf("%s: the mean (_sum ÷ _count = %g) lies outside the buckets that hold observations (%g to %g): it is withheld", name, d.Mean, lo, hi)})
		}
	}
	d.P50 = window.Quantile(0.5, buckets)
	d.P90 = window.Quantile(0.9, buckets)
	d.P95 = window.Quantile(0.95, buckets)
	d.P99 = window.Quantile(0.99, buckets)
	b.cite(path, name)
	return d
}

// series sums a gauge point by point over the target's series and summarises
// it; match, as label/value pairs, narrows the series further.
func (b *builder) series(key, path string, match ...string) evidence.Series {
	name, ok := present(b.w, ByKey(key))
	if !ok {
		b.withheld(key, path)
		return evidence.Summarise(nil)
	}
	// Point by point: counts add up across engines and instances, ratios
	// (KV usage) average.
	var points, n []float64
	for _, g := range b.w.Gauges[name] {
		if !matches(b.sel, g.Labels, false) || !labelPairs(g.Labels, match) {
			continue
		}
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
		case ByKey(key).Ratio():
			points[i] /= n[i]
		}
	}
	s := evidence.Summarise(points)
	if !evidence.Present(s.Mean) {
		return s
	}
	b.cite(path, name)
	return s
}

// counter sums a counter's increase over the target's series.
func (b *builder) counter(key, path string) (float64, bool) {
	name, ok := present(b.w, ByKey(key))
	if !ok {
		b.withheld(key, path)
		return 0, false
	}
	var inc float64
	found := false
	for _, c := range b.w.Counters[name] {
		if matches(b.sel, c.Labels, false) {
			inc += c.Increase
			found = true
		}
	}
	if found {
		b.cite(path, name)
	}
	return inc, found
}

func (b *builder) finished(secs float64) {
	name, ok := present(b.w, ByKey(RequestSuccess))
	if !ok {
		return
	}
	by := map[string]float64{}
	var total float64
	found := false
	for _, c := range b.w.Counters[name] {
		if matches(b.sel, c.Labels, false) {
			by[c.Labels["finished_reason"]] += c.Increase
			total += c.Increase
			found = true
		}
	}
	if !found {
		return
	}
	sv := &b.v.Service
	sv.Finished, sv.Errors, sv.Aborts = total, by["error"], by["abort"]
	sv.RequestRate = total / secs
	if total > 0 {
		sv.FailedShare = (by["error"] + by["abort"]) / total
		sv.LengthShare = by["length"] / total
	}
	for _, p := range []string{"service.finished", "service.request_rate", "service.errors", "service.aborts",
		"service.failed_share", "service.length_share"} {
		b.cite(p, name)
	}
}

// cacheConfig reads cache_config_info labels. The series has no model_name, so
// it matches on the labels it does carry (engine, instance).
func (b *builder) cacheConfig() {
	name, ok := present(b.w, ByKey(CacheConfig))
	if !ok {
		b.withheld(CacheConfig, "cond.kv_capacity_tokens", "cond.gpu_blocks", "cond.block_size", "cond.prefix_caching", "cond.gpu_memory_utilization")
		return
	}
	c := &b.v.Cond
	var blocksTotal, capTotal float64
	seen := 0
	engines := map[string]string{}
	for _, in := range b.w.Infos[name] {
		if !matches(b.sel, in.Labels, true) {
			continue
		}
		// One engine stating two configurations in one window changed
		// configuration within it: adding both would blend two servers.
		eng := in.Labels["instance"] + "/" + in.Labels["engine"]
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
		"cond.gpu_memory_utilization", "cond.prefix_caching"} {
		b.cite(p, name)
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
