package engine

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// stallGap is the inter-token gap that counts as a stream frozen.
const stallGap = 0.5

// Options control how series become targets.
type Options struct {
	// GroupBy are the labels that make a target; default model_name.
	GroupBy []string
	// WeightBytes gives model sizes by served name, over the presets.
	WeightBytes map[string]float64
	// MoE says by served name whether a model is a mixture of experts,
	// over the presets.
	MoE map[string]bool
	// Engine, when set, builds only that engine's targets.
	Engine string
}

// Build turns a window into one evidence per target of every registered
// engine whose families it holds, each with per-replica and per-rank
// members when there is more than one.
func Build(w *window.Window, opt Options) []*evidence.Evidence {
	var out []*evidence.Evidence
	for _, eng := range Engines() {
		if (opt.Engine == "" || opt.Engine == eng.Name) && eng.Has(w) {
			out = append(out, eng.Build(w, opt)...)
		}
	}
	return out
}

// Build turns the engine's series in a window into evidence per target.
func (eng *Engine) Build(w *window.Window, opt Options) []*evidence.Evidence {
	group := opt.GroupBy
	if len(group) == 0 {
		group = []string{"model_name"}
	}
	// Notes go to the caller's window; series are read from cw, where
	// copies of one number (tensor-parallel ranks) are one series.
	cw := eng.collapse(w, group)
	wm := w.Members
	if eng.labelledRoles(cw) {
		cw = withRoleLabel(cw, eng.RoleLabel)
		if wm != nil {
			wm = withRoleLabel(wm, eng.RoleLabel)
		}
		group = append(slices.Clone(group), RoleLabel)
		w.Notes = append(w.Notes, eng.Title+" prefill and decode run on separate instances (its "+eng.RoleLabel+" label says which): each side is diagnosed on its own")
	} else if roles := eng.roles(cw, group); roles != nil {
		cw = withRoles(cw, eng.Members[0], roles)
		if wm != nil {
			wm = withRoles(wm, eng.Members[0], roles)
		}
		group = append(slices.Clone(group), RoleLabel)
		w.Notes = append(w.Notes, eng.Title+" prefill and decode run on separate instances (a decode instance pulls KV, a prefill instance gives one token per request): each side is diagnosed on its own")
	}
	// Members come from the per-member series when the source summed the
	// target's own (Prometheus), else from the target's series.
	var mw *window.Window
	if wm != nil {
		mw = eng.collapse(wm, group)
	}
	var out []*evidence.Evidence
	sels := eng.targets(cw, group)
	if len(sels) == 0 && eng.hasInfos(cw) {
		// Only configuration series (vLLM's carry no model_name): one target
		// of unknown model holds what they say.
		sels = []window.Labels{{}}
		w.Notes = append(w.Notes, eng.Title+" configuration series only ("+strings.Join(eng.infoNames(cw), ", ")+"): nothing here counts or times requests, so only the configuration can be read; scrape the server's /metrics while it serves")
	}
	for _, sel := range sels {
		if len(sel) > 0 && emptyLabels(sel) {
			// Series without the grouping labels are not an engine's (the
			// production-stack router reuses vllm: names with a server label).
			w.Notes = append(w.Notes, fmt.Sprintf("%s series without %s were left out (a router or another exporter?); group by a label they carry to read them",
				eng.Title, strings.Join(group, ", ")))
			continue
		}
		// One pass per target and per member label keeps a fleet of
		// thousands of instances linear.
		tw := cw.Restrict(sel)
		members := tw
		if mw != nil {
			members = mw.Restrict(sel)
		}
		e := eng.buildOne(tw, members, sel, opt)
		// buildOne took the window to be as long as its data covers.
		if secs, cov := tw.Seconds(), e.Values.Cond.WindowSeconds; cov < secs {
			note := fmt.Sprintf("the data covers %s of the %s window (%.0f%%): rates are over the time covered, and the window is taken to be that long",
				time.Duration(cov*float64(time.Second)).Round(time.Second), time.Duration(secs*float64(time.Second)).Round(time.Second), 100*cov/secs)
			if !slices.Contains(w.Notes, note) {
				w.Notes = append(w.Notes, note)
			}
		}
		for _, ml := range eng.Members {
			if contains(group, ml) {
				continue
			}
			parts := members.Partition(ml)
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
				e.Members = append(e.Members, eng.buildOne(parts[v], parts[v], sub, opt))
			}
		}
		evidence.Fleet(e)
		out = append(out, e)
	}
	eng.deploymentShares(out)
	return out
}

// deploymentShares gives each side of a split deployment its stages' shares
// of what users wait for the first token, not of the side's own TTFT, where
// the prefill side's is all prefill by design. That wait is the prefill
// side's TTFT plus the decode side's where the decode side starts its clock
// at the hand-over (vLLM), the decode side's alone where it starts it at the
// client's request (SGLang: its TTFT holds the prefill side's work and the
// transfer, which the prefill side times).
func (eng *Engine) deploymentShares(evs []*evidence.Evidence) {
	type sides struct{ p, d []*evidence.Evidence }
	by := map[string]*sides{}
	for _, e := range evs {
		role := e.Target.Labels[RoleLabel]
		if role == "" {
			continue
		}
		m := e.Target.Model
		if by[m] == nil {
			by[m] = &sides{}
		}
		if role == RolePrefill {
			by[m].p = append(by[m].p, e)
		} else {
			by[m].d = append(by[m].d, e)
		}
	}
	// The count-weighted mean of a distribution over a side's targets.
	mean := func(es []*evidence.Evidence, get func(*evidence.Evidence) evidence.Dist) float64 {
		var sum, n float64
		for _, e := range es {
			if d := get(e); evidence.Present(d.Mean) && evidence.Present(d.Count) {
				sum, n = sum+d.Mean*d.Count, n+d.Count
			}
		}
		return sum / n
	}
	ttft := func(e *evidence.Evidence) evidence.Dist { return e.Values.Stage.TTFT }
	e2e := func(e *evidence.Evidence) evidence.Dist { return e.Values.Service.E2E }
	prefill := func(e *evidence.Evidence) evidence.Dist { return e.Values.Stage.Prefill }
	secs := func(x float64) string {
		return time.Duration(x * float64(time.Second)).Round(time.Millisecond).String()
	}
	for _, s := range by {
		if len(s.p) == 0 || len(s.d) == 0 {
			continue
		}
		total, users := mean(s.p, ttft)+mean(s.d, ttft), mean(s.p, e2e)+mean(s.d, e2e)
		how := "the prefill side's plus the decode side's"
		// upstream is the prefill side's time inside the decode side's TTFT.
		upstream := 0.0
		if eng.DecodeTTFTFromArrival {
			total, users, upstream = mean(s.d, ttft), mean(s.d, e2e), mean(s.p, e2e)

			how = "the decode side's, which runs from the client's request"
			for _, p := range s.p {
				// The prefill side times no first token: the deployment's is
				// the decode side's.
				if !evidence.Present(p.Values.Stage.TTFT.Mean) && len(s.d) == 1 {
					p.Values.Stage.TTFT = s.d[0].Values.Stage.TTFT
					p.Cite("stage.ttft", evidence.Source{Metric: s.d[0].Sources["stage.ttft"].Metric, Note: "the decode side's: the prefill side times no first token"})
				}
			}
			for _, d := range s.d {
				// The prefill side times the transfer it pushes.
				if !evidence.Present(d.Values.Stage.Transfer.Mean) && len(s.p) == 1 {
					d.Values.Stage.Transfer = s.p[0].Values.Stage.Transfer
					if src, ok := s.p[0].Sources["stage.transfer"]; ok {
						src.Note = "timed by the prefill side, which pushes the KV"
						d.Cite("stage.transfer", src)
					}
				}
				// The prefill side's own part of the decode side's TTFT: its
				// end-to-end less the push, which has a row of its own.
				if x := upstream - nz(d.Values.Stage.Transfer.Mean); evidence.Present(x) {
					d.Values.Stage.UpstreamMean = math.Max(0, x)
					d.Cite("stage.upstream_mean", evidence.Source{Metric: s.p[0].Sources["service.e2e"].Metric,
						Note: "the prefill side's mean end-to-end less the KV push: its front end, queue and prefill"})
				}
			}
		}
		if !evidence.Present(total) || total <= 0 {
			continue
		}
		if evidence.Present(users) && users > 0 {
			for _, d := range s.d {
				if x := d.Values.Stage.Decode.Mean; evidence.Present(x) {
					d.Values.Stage.Share.Decode = x / users
					d.Cite("stage.share.decode", evidence.Source{Metric: "derived",
						Note: "decode mean ÷ the deployment's mean end-to-end, " + secs(users) + ": " + how})
				}
			}
		}
		// The decode side's first step computes the prompt's last token:
		// prefill too, which the prefill side's share counts with its own.
		decodePrefill := mean(s.d, prefill)
		if !evidence.Present(decodePrefill) {
			decodePrefill = 0
		}
		note := "stage mean ÷ the deployment's mean TTFT, " + secs(total) + ": " + how
		for _, e := range append(append([]*evidence.Evidence{}, s.p...), s.d...) {
			st := &e.Values.Stage
			prefillSide := e.Target.Labels[RoleLabel] == RolePrefill
			q, p, tr, t := st.Queue.Mean, st.Prefill.Mean, st.Transfer.Mean, st.TTFT.Mean
			if !evidence.Present(tr) {
				tr = 0
			}
			set := func(dst *float64, path string, x float64) {
				if evidence.Present(x) {
					*dst = math.Max(0, x) / total
					e.Cite(path, evidence.Source{Metric: "derived", Note: note})
				}
			}
			set(&st.Share.Queue, "stage.share.queue", q)
			if prefillSide {
				set(&st.Share.Prefill, "stage.share.prefill", p+decodePrefill)
			} else {
				set(&st.Share.Prefill, "stage.share.prefill", p)
				if tr > 0 {
					set(&st.Share.Transfer, "stage.share.transfer", tr)
				}
			}
			// The side's time before its engine saw the request.
			var front float64
			switch {
			case prefillSide && eng.DecodeTTFTFromArrival:
				front = e.Values.Service.E2E.Mean - q - p - tr
			case prefillSide:
				front = t - q - p
			case eng.DecodeTTFTFromArrival:
				// The prefill side's end-to-end holds the push.
				front = t - upstream - q - p
			default:
				front = t - q - p - tr
			}
			if evidence.Present(front) {
				st.FrontMean = math.Max(0, front)
				e.Cite("stage.front_mean", evidence.Source{Metric: "derived", Note: "the side's time before its engine saw the request"})
				set(&st.Share.Front, "stage.share.front", front)
			}
		}
	}
}

// hasInfos reports whether the window holds any of the engine's info series.
func (eng *Engine) hasInfos(w *window.Window) bool { return len(eng.infoNames(w)) > 0 }

// infoNames lists the engine's info families the window holds.
func (eng *Engine) infoNames(w *window.Window) []string {
	var out []string
	for _, m := range eng.Catalogue {
		for _, name := range m.Names {
			if m.Kind == Info && len(w.Infos[name]) > 0 {
				out = append(out, name)
			}
		}
	}
	return out
}

// targets lists the distinct group label values across the engine's series.
func (eng *Engine) targets(w *window.Window, group []string) []window.Labels {
	seen := map[string]window.Labels{}
	add := func(l window.Labels) {
		sel := window.Labels{}
		for _, g := range group {
			sel[g] = l[g]
		}
		seen[sel.Key()] = sel
	}
	// Every name, not only the first present: one model may be scraped
	// directly (sglang:) and another through a gateway (sglang_), and each
	// target then reads the name its own series carry.
	for _, m := range eng.Catalogue {
		for _, name := range m.Names {
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

func distinct(w *window.Window, sel window.Labels, label string) []string {
	set := map[string]bool{}
	for _, ss := range w.Gauges {
		for _, s := range ss {
			if v, ok := s.Labels[label]; ok && window.Matches(sel, s.Labels, false) {
				set[v] = true
			}
		}
	}
	for _, ss := range w.Histograms {
		for _, s := range ss {
			if v, ok := s.Labels[label]; ok && window.Matches(sel, s.Labels, false) {
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
	eng *Engine
	w   *window.Window
	// members holds the target's series one per engine and replica (w
	// itself unless the source summed them before the builder).
	members *window.Window
	sel     window.Labels
	e       *evidence.Evidence
	v       *evidence.Values
}

// rankLabel is the engine's label for a data-parallel rank ("" if none).
func (eng *Engine) rankLabel() string {
	if len(eng.Members) > 1 {
		return eng.Members[1]
	}
	return ""
}

// buildOne builds a target's or a member's evidence from w; members holds
// the series its ranks are counted from (w itself unless the source summed
// w's series across members).
func (eng *Engine) buildOne(w, members *window.Window, sel window.Labels, opt Options) *evidence.Evidence {
	t := evidence.Target{Model: sel["model_name"], ServedBy: eng.Name, Labels: map[string]string(sel)}
	if len(eng.Members) > 0 {
		t.Instance = sel[eng.Members[0]]
	}
	if r := eng.rankLabel(); r != "" {
		t.Engine = sel[r]
	}
	if t.Model == "" && t.Instance == "" {
		// Grouped by something else: name the target by its labels.
		t.Model = strings.TrimSuffix(sel.Key(), ",")
	}
	b := &builder{eng: eng, w: w, members: members, sel: sel, e: evidence.New(t)}
	b.e.Engine = eng.Vocabulary()
	b.v = &b.e.Values
	v := b.v
	secs := w.Seconds()
	// Rates are over the time the data covers: a window longer than its
	// data would divide increases by time nothing was recorded in.
	if cov := w.Covered(); cov < window.MinCovered*secs {
		secs = cov
	}

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
	if moe, ok := opt.MoE[t.Model]; ok {
		v.Cond.MoE = 0
		if moe {
			v.Cond.MoE = 1
		}
		b.e.Cite("cond.moe", evidence.Source{Metric: "config", Note: "models." + t.Model + ".moe"})
	} else if moe := MoE(t.Model); evidence.Present(moe) {
		v.Cond.MoE = moe
		b.e.Cite("cond.moe", evidence.Source{Metric: "derived", Note: "architecture preset for the served model name"})
	}
	if !math.IsNaN(secs) {
		b.e.Cite("cond.window_seconds", evidence.Source{Metric: "derived", From: w.From, Note: "window end − start, or the part the data covers"})
	}
	b.cacheConfig()
	if r := eng.rankLabel(); r != "" {
		if n := len(distinct(members, sel, r)); n > 0 {
			v.Cond.Engines = float64(n)
			b.e.Cite("cond.engines", evidence.Source{Metric: "derived", From: w.From, Note: "distinct " + r + " label values"})
		}
	}

	_, hasQ := b.present(QueueTime)
	_, hasP := b.present(PrefillTime)
	_, hasT := b.present(RequestTPOT)
	_, hasI := b.present(StepLatency)
	v.Cond.StageMetrics, v.Cond.TPOTTracked = boolNum(hasQ && hasP), boolNum(hasT || hasI)
	b.e.Cite("cond.stage_metrics", evidence.Source{Metric: "derived", From: w.From, Note: "queue and prefill histograms present"})
	b.e.Cite("cond.tpot_tracked", evidence.Source{Metric: "derived", From: w.From, Note: "request TPOT or inter-token latency histogram present"})
	v.Stage.TTFT = b.dist(TTFT, "stage.ttft")
	v.Stage.Queue = b.dist(QueueTime, "stage.queue")
	b.transfer()
	v.Stage.Prefill = b.dist(PrefillTime, "stage.prefill")
	v.Stage.Decode = b.dist(DecodeTime, "stage.decode")
	v.Stage.Inference = b.dist(InferenceTime, "stage.inference")
	v.Stage.ITL = b.dist(StepLatency, "stage.itl")
	v.Stage.TPOT = b.dist(RequestTPOT, "stage.tpot")
	b.ttftTrend()
	bk, name := b.buckets(StepLatency)
	// Counted from the first bucket bound at or above 0.5 s, not
	// interpolated below it: where 0.5 is not a bound (SGLang's 0.4 and 0.6)
	// a slow step of 0.45 s must not pass for a stall, so the count errs
	// low. Buckets that end below 0.5 s cannot count stalls at all.
	if at, ok := window.BoundAtOrAbove(stallGap, bk); bk != nil && ok {
		v.Stage.ITLStalls = window.CountAbove(at, bk)
		v.Stage.ITLStallSeconds = window.SumAbove(at, bk)
		note := ""
		if at != stallGap {
			note = fmt.Sprintf("gaps above %g s, the first bucket bound above 0.5 s", at)
		}
		for _, p := range []string{"stage.itl_stalls", "stage.itl_stall_seconds"} {
			b.e.Cite(p, evidence.Source{Metric: name, From: b.w.From, Note: note})
		}
		// Counted per token, a step that gives several tokens (speculative
		// decoding) is split into that many gaps of its share: at the mean
		// tokens a step L, a 0.5 s freeze shows as L gaps of 0.5/L s. The
		// count is estimated from there, the frozen time kept as read.
		if m, _ := eng.ByKey(StepLatency); m.PerToken {
			if s := b.series(SpecAcceptLength, "stage.itl_stalls"); evidence.Present(s.Mean) && s.Max > 1.05 {
				// From the first bound at or above 0.5/L, erring low as
				// the count does without speculation.
				l := math.Max(s.Mean, 1)
				if at, ok := window.BoundAtOrAbove(stallGap/l, bk); ok {
					v.Stage.ITLStalls = window.CountAbove(at, bk) / l
					b.e.Cite("stage.itl_stalls", evidence.Source{Metric: name, From: b.w.From,
						Note: fmt.Sprintf("estimated: counted per token, and speculative decoding kept %.2f tokens a step: gaps above %g s, divided by %.2f", l, at, l)})
				}
			}
		}
	}

	v.Service.E2E = b.dist(E2E, "service.e2e")
	v.Service.IterationTokens = b.dist(IterationTokens, "service.iteration_tokens")
	v.Service.Running = b.series(Running, "service.running")
	b.speculation()
	b.lora()
	// Newer vLLM counts deferred requests (LoRA budget, KV transfer) in
	// num_requests_waiting; only those waiting for capacity say the batch is full.
	v.Service.Waiting = b.series(WaitingByReason, "service.waiting", "reason", "capacity")
	if !evidence.Present(v.Service.Waiting.Mean) {
		v.Service.Waiting = b.series(Waiting, "service.waiting")
	}
	v.Service.Swapped = b.series(Swapped, "service.swapped")
	noSwap := !evidence.Present(v.Service.Swapped.Mean) && eng.NoSwap != nil && eng.NoSwap(w) && evidence.Present(v.Service.Running.Mean)
	if noSwap {
		// Zero at every reading of the running gauge: the engine has no swap space.
		v.Service.Swapped = evidence.Summarise(make([]float64, int(v.Service.Running.Samples)))
		b.e.Cite("service.swapped", evidence.Source{Metric: "derived", From: w.From, Note: eng.Title + " has no swap space: no request is ever swapped out"})
	}
	b.finished(secs)
	pt, okP := b.counter(PromptTokens, "service.prompt_tps")
	if okP {
		v.Service.PromptTPS = pt / secs
	}
	gt, okG := b.counter(GenTokens, "service.generation_tps")
	if okG {
		v.Service.GenerationTPS = gt / secs
	}
	// Whether the engine computed or generated anything at all: an engine
	// that did neither while requests ran and waited is stuck, not capped.
	switch {
	case okP && pt > 0, okG && gt > 0:
		v.Service.Progress = 1
	case okP && okG:
		v.Service.Progress = 0
	}
	if evidence.Present(v.Service.Progress) {
		b.e.Cite("service.progress", evidence.Source{Metric: "derived", From: w.From, Note: "prompt or generated tokens counted"})
	}
	if x, ok := b.counter(Preemptions, "service.preemptions"); ok {
		v.Service.Preemptions = x
	}

	v.Resource.KVUsage = b.series(KVUsage, "resource.kv_usage")
	v.Resource.CPUKVUsage = b.series(CPUKVUsage, "resource.cpu_kv_usage")
	if x := b.seriesMax(KVUsage); evidence.Present(x) {
		v.Resource.KVPeak = x
		b.e.Cite("resource.kv_peak", evidence.Source{Metric: "derived", From: w.From, Note: "highest KV cache usage of any one engine or replica"})
	}
	// Usage is averaged over engines and replicas, running requests summed:
	// one request's share is usage over the running requests of one of them.
	if k, r, n := v.Resource.KVUsage.Mean, v.Service.Running.Mean, b.seriesCount(Running); evidence.Present(k) && evidence.Present(r) && r > 0 && n > 0 {
		v.Resource.KVPerRequest = k * float64(n) / r
		b.e.Cite("resource.kv_per_request", evidence.Source{Metric: "derived", From: w.From,
			Note: fmt.Sprintf("mean KV usage ÷ mean running requests per engine (%d engine or replica series)", n)})
	}
	if noSwap && !evidence.Present(v.Resource.CPUKVUsage.Mean) {
		v.Resource.CPUKVUsage = evidence.Summarise(make([]float64, int(v.Service.Running.Samples)))
		b.e.Cite("resource.cpu_kv_usage", evidence.Source{Metric: "derived", From: w.From, Note: eng.Title + " has no swap space"})
	}
	// Each stream's speed is the decode witness where no histogram times the
	// tokens (a log, a server without one): where one does, it is the
	// measure, and a cruder second one would only blur it.
	if g, r := v.Service.GenerationTPS, v.Service.Running.Mean; !hasT && !hasI && evidence.Present(g) && evidence.Present(r) && r > 0 {
		v.Service.StreamTPS = g / r
		b.e.Cite("service.stream_tps", evidence.Source{Metric: "derived", From: w.From, Note: "generation throughput ÷ mean running requests"})
	}
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

// transfer reads the KV pulls of a decode instance, and takes them out of
// the queue time where the engine's queue histogram holds them: the
// budget then has a transfer stage of its own.
func (b *builder) transfer() {
	v := b.v
	if r := b.sel[RoleLabel]; r != "" {
		v.Cond.Disaggregated, v.Cond.PrefillSide = 1, boolNum(r == RolePrefill)
		for _, p := range []string{"cond.disaggregated", "cond.prefill_side"} {
			b.e.Cite(p, evidence.Source{Metric: "derived", From: b.w.From,
				Note: "a decode instance pulls KV, a prefill instance gives one token per request"})
		}
	}
	v.Stage.Transfer = b.dist(KVTransferTime, "stage.transfer")
	t, q := &v.Stage.Transfer, &v.Stage.Queue
	switch {
	case b.sel[RoleLabel] != "":
	case b.seriesCount(TransferQueue) > 0:
		// A transfer queue is a decode instance's.
		v.Cond.Disaggregated, v.Cond.PrefillSide = 1, 0
		v.Service.TransferWaiting = b.series(TransferQueue, "service.transfer_waiting")
		name, _ := b.present(TransferQueue)
		for _, p := range []string{"cond.disaggregated", "cond.prefill_side"} {
			b.e.Cite(p, evidence.Source{Metric: name, From: b.w.From, Note: "a transfer queue: a decode instance"})
		}
	case evidence.Present(t.Count) && t.Count > 0:
		// Pulling KV, it is a decode instance, whatever else was scraped.
		v.Cond.Disaggregated, v.Cond.PrefillSide = 1, 0
		b.e.Cite("cond.disaggregated", evidence.Source{Metric: b.e.Sources["stage.transfer"].Metric, From: b.w.From, Note: "the instance pulls KV: a decode instance"})
		b.e.Cite("cond.prefill_side", evidence.Source{Metric: b.e.Sources["stage.transfer"].Metric, From: b.w.From, Note: "the instance pulls KV: a decode instance"})
	case len(b.w.Histograms) > 0:
		// A window of metrics without a KV pull or a second role: one
		// instance does both (a KV connector without transfer metrics
		// would hide a split).
		v.Cond.Disaggregated, v.Cond.PrefillSide = 0, 0
		for _, p := range []string{"cond.disaggregated", "cond.prefill_side"} {
			b.e.Cite(p, evidence.Source{Metric: "derived", From: b.w.From, Note: "no KV transfer metrics, and no instance that only prefills"})
		}
	}
	if !b.eng.QueueHoldsTransfer || !evidence.Present(t.Mean) || !evidence.Present(q.Mean) {
		return
	}
	// The mean of a difference is the difference of means; a quantile's is
	// not: each is estimated as the difference of the same quantiles, as
	// the longest pulls are the longest prompts' and wait the longest.
	q.Mean = math.Max(0, q.Mean-t.Mean)
	for _, x := range [][2]*float64{{&q.P50, &t.P50}, {&q.P90, &t.P90}, {&q.P95, &t.P95}, {&q.P99, &t.P99}} {
		if evidence.Present(*x[0]) && evidence.Present(*x[1]) {
			*x[0] = math.Max(0, *x[0]-*x[1])
		} else {
			*x[0] = math.NaN()
		}
	}
	for _, k := range []string{"p50", "p90", "p95", "p99", "max"} {
		delete(b.e.Resolution, "stage.queue."+k)
	}
	src := b.e.Sources["stage.queue"]
	src.Note = strings.TrimPrefix(src.Note+"; the KV pull taken out (the engine counts a request as queued while its KV is pulled): the mean exactly, quantiles as the difference of the same quantiles", "; ")
	b.e.Cite("stage.queue", src)
}

// nz is x, or 0 where it is missing.
func nz(x float64) float64 {
	if evidence.Present(x) {
		return x
	}
	return 0
}
