package logs

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"

	// The engines whose names a log's window is written in.
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
)

// Default logging intervals when the lines carry no timestamps: vLLM V1
// logs every 10 s (VLLM_LOG_STATS_INTERVAL), V0 every 5 s.
const (
	v1Interval = 10 * time.Second
	v0Interval = 5 * time.Second
)

// rankLabel is the label an engine's metrics tell its data-parallel ranks
// apart by (vLLM's engine, SGLang's dp_rank): a log's engines are written
// under it, so a target counts them as the engine's own metrics would.
func rankLabel(eng string) string {
	if e, ok := engine.Lookup(eng); ok && len(e.Members) > 1 {
		return e.Members[1]
	}
	return "engine"
}

// name is the engine's exposed family name for a canonical key.
func name(eng, key string) string {
	e, ok := engine.Lookup(eng)
	if !ok {
		return ""
	}
	m, ok := e.ByKey(key)
	if !ok || len(m.Names) == 0 {
		return ""
	}
	return m.Names[0]
}

// build lays the readings on one time axis: rounds of lines, each at the
// time of its first line (engines log one after another in the same round,
// so a round may straddle a second; an engine logging twice starts a new
// round). Points are placed at their lines' times, so a pause in the log
// (idle lines at DEBUG, a cut) stays a pause and is noted. Events
// (preemption warnings, retractions) add to the counters of the engine
// that logged them.
func build(recs []record, eng, model, from string) (*window.Window, []string) {
	var notes []string
	readings := map[string][]record{}
	var events []record
	var spec, xfers []record
	seenRetract := map[string]bool{}
	v0 := false
	other, dups, clash := 0, 0, 0
	for _, r := range recs {
		switch {
		case eng == "vllm" && r.kind == vllmStats, eng == "sglang" && (r.kind == sglPrefill || r.kind == sglDecode):
			rs := readings[r.engine]
			// The same line twice (a paste repeated) counts once. Two
			// different state readings of one engine in one second are
			// two servers' logs joined: the later stands, and it is said.
			if i := sameMoment(rs, r); i >= 0 {
				if equal(rs[i], r) {
					dups++
					continue
				}
				if r.kind != sglPrefill {
					clash++
					rs[i] = r
					continue
				}
			}
			readings[r.engine] = append(rs, r)
			v0 = v0 || evidenceOfV0(r)
		case r.kind == vllmStats || r.kind == sglPrefill || r.kind == sglDecode:
			other++
		case eng == "vllm" && r.kind == vllmPrefix:
			// V0 prints the hit rate on its own line after the stats line.
			if rs := readings[lastEngine(readings, r.engine)]; len(rs) > 0 {
				rs[len(rs)-1].hit = r.hit
			}
		case eng == "vllm" && r.kind == vllmPreempt:
			events = append(events, r)
		case eng == "sglang" && r.kind == sglRetract:
			// Every TP rank logs the same retraction: count it once.
			key := r.t.String() + "|" + r.engine + "|" + r.text
			if !seenRetract[key] {
				seenRetract[key] = true
				events = append(events, r)
			}
		case r.kind == specDecode:
			spec = append(spec, r)
		case eng == "vllm" && r.kind == kvTransfer:
			xfers = append(xfers, r)
		}
	}
	if other > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d stats line%s of another engine left out: the log is mostly %s's; diagnose each engine's log apart", from, other, plural(other), eng))
	}
	if dups > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d stats line%s repeated word for word, counted once", from, dups, plural(dups)))
	}
	if clash > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d time%s one engine logged two different states in one second: is this two servers' logs joined? The later line of each was read", from, clash, plural(clash)))
	}
	// Per-engine lines are finer than the aggregated ones; use them when present.
	if len(readings) > 1 {
		delete(readings, "all")
	}
	def := v1Interval
	if v0 {
		def = v0Interval
	}
	if len(readings) == 0 {
		if len(events) > 0 || len(spec)+len(xfers) == 0 {
			return buildEvents(events, eng, model, from, def), notes
		}
		// Speculative decoding or KV transfer lines alone: their times
		// and counts.
		w := buildEvents(append(slices.Clone(spec), xfers...), eng, model, from, def)
		if eng == "vllm" {
			engines := map[string][]record{}
			for _, r := range append(slices.Clone(spec), xfers...) {
				engines[r.engine] = nil
			}
			specCounters(w, spec, engines, model)
			transfers(w, xfers, engines, model)
		}
		if len(spec) > 0 {
			notes = append(notes, specNote(from, spec))
		}
		return w, notes
	}
	undated := place(readings, def)
	if undated > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d stats line%s carry no timestamp: placed %s apart, the engine's default logging interval", from, undated, plural(undated), def))
	}
	fixYears(readings)

	w := window.New()
	w.From = from
	type line struct {
		eng string
		i   int
	}
	var all []line
	for e, rs := range readings {
		for i := range rs {
			all = append(all, line{e, i})
		}
	}
	sort.SliceStable(all, func(a, b int) bool {
		ta, tb := readings[all[a].eng][all[a].i].t, readings[all[b].eng][all[b].i].t
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		if all[a].eng != all[b].eng {
			return all[a].eng < all[b].eng
		}
		return all[a].i < all[b].i
	})
	// idx[engine][i] is the round of the engine's i-th line.
	idx := map[string][]int{}
	for e, rs := range readings {
		idx[e] = make([]int, len(rs))
	}
	var times []time.Time
	inRound := map[string]bool{}
	for _, l := range all {
		t := readings[l.eng][l.i].t
		if len(times) == 0 || t.Sub(times[len(times)-1]) > time.Second ||
			inRound[l.eng] && !t.Equal(times[len(times)-1]) {
			times = append(times, t)
			inRound = map[string]bool{}
		}
		inRound[l.eng] = true
		idx[l.eng][l.i] = len(times) - 1
	}
	// Each line covers the logging interval before it (the median spacing
	// of the rounds when there are several): a pause longer than
	// GapFactor of them is time no line covers.
	step := interval(times, def)
	w.Start, w.End = times[0].Add(-step), times[len(times)-1]
	w.Points = len(times)
	if len(times) > 1 {
		w.Times = times
		w.NoteGaps()
	}
	// The time the lines cover: a pause no line covers (idle rounds are
	// logged at DEBUG, a paste cut) is not time tokens were counted in, so
	// rates are over the covered time alone.
	covered := step
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d <= window.GapFactor*step {
			covered += d
		} else {
			covered += step
		}
	}
	if covered < w.End.Sub(w.Start) {
		w.Length = covered
	}
	for _, e := range slices.Sorted(maps.Keys(readings)) {
		rs := readings[e]
		l := window.Labels{"model_name": model, rankLabel(eng): e}
		points := func(f func(record) float64) []float64 {
			p := make([]float64, len(times))
			for i := range p {
				p[i] = math.NaN()
			}
			for i, r := range rs {
				// Lines of one engine in one second: the last is the state.
				if x := f(r); !math.IsNaN(x) || math.IsNaN(p[idx[e][i]]) {
					p[idx[e][i]] = x
				}
			}
			if len(readings) > 1 {
				hold(p, times, window.GapFactor*step)
			}
			return p
		}
		gauge := func(key string, f func(record) float64) {
			p := points(f)
			seen := false
			for _, x := range p {
				seen = seen || !math.IsNaN(x)
			}
			if n := name(eng, key); n != "" && seen {
				w.Gauges[n] = append(w.Gauges[n], window.Gauge{Labels: l, Points: p})
			}
		}
		counter := func(key string, x float64) {
			if n := name(eng, key); n != "" {
				w.Counters[n] = append(w.Counters[n], window.Counter{Labels: l, Increase: x})
			}
		}
		gauge(engine.Running, func(r record) float64 { return r.running })
		gauge(engine.Waiting, func(r record) float64 { return r.waiting })
		gauge(engine.KVUsage, func(r record) float64 { return r.kv })
		gauge(engine.Swapped, func(r record) float64 { return r.swapped })
		gauge(engine.CPUKVUsage, func(r record) float64 { return r.cpuKV })
		if eng == "vllm" {
			// The log's hit rate is over the last 1000 requests: a gauge, as V0 had.
			gauge(engine.PrefixHitGauge, func(r record) float64 { return r.hit })
		}
		if eng == "sglang" {
			// A decode line says "accept len" only when SGLang speculates:
			// without it, 0, as its spec_accept_length gauge says.
			spec := slices.ContainsFunc(rs, func(r record) bool { return r.kind == sglDecode && !math.IsNaN(r.acceptLen) })
			gauge(engine.SpecAcceptLength, func(r record) float64 {
				switch {
				case r.kind != sglDecode:
					return math.NaN()
				case spec:
					return r.acceptLen
				}
				return 0
			})
			gauge(engine.SpecAcceptRate, func(r record) float64 {
				if r.kind != sglDecode {
					return math.NaN()
				}
				return r.acceptRate
			})
			gauge(engine.TransferQueue, func(r record) float64 {
				if r.kind != sglDecode {
					return math.NaN()
				}
				return r.transferReq
			})
		}
		prompt, gen, cached := tokens(rs, eng, step, covered)
		counter(engine.PromptTokens, prompt)
		if !math.IsNaN(gen) {
			counter(engine.GenTokens, gen)
		}
		if eng == "sglang" && prompt > 0 {
			counter(engine.PrefixHits, cached)
		}
		// Without a single preemption field or warning the count is
		// unknown, not zero: older versions never print it.
		if pre, ok := preemptions(rs, events, e, len(readings) == 1); ok {
			counter(engine.Preemptions, pre)
		}
	}
	if len(spec) > 0 {
		notes = append(notes, specNote(from, spec))
	}
	if eng == "vllm" {
		specCounters(w, spec, readings, model)
		transfers(w, xfers, readings, model)
	}
	return w, notes
}

// transfers adds the KV pulls of vLLM's "KV Transfer metrics" lines (per
// interval) to a log's window as the transfer histograms' counts and sums,
// without buckets: the lines give a mean, and a p90 per interval only.
func transfers(w *window.Window, xfers []record, readings map[string][]record, model string) {
	engines := slices.Sorted(maps.Keys(readings))
	if len(engines) == 0 || len(xfers) == 0 {
		return
	}
	type sums struct{ n, secs, bytes float64 }
	by := map[string]*sums{}
	for _, r := range xfers {
		e := r.engine
		if _, ok := readings[e]; !ok {
			e = engines[0]
		}
		if by[e] == nil {
			by[e] = &sums{}
		}
		s := by[e]
		s.n += nz(r.xfers)
		s.secs += nz(r.xfers) * nz(r.xferMean)
		s.bytes += nz(r.xfers) * nz(r.xferBytes)
	}
	for _, e := range engines {
		s := by[e]
		if s == nil {
			s = &sums{}
		}
		l := window.Labels{"model_name": model, rankLabel("vllm"): e}
		if n := name("vllm", engine.KVTransferTime); n != "" {
			w.Histograms[n] = append(w.Histograms[n], window.Histogram{Labels: l, Count: s.n, Sum: s.secs})
		}
		if n := name("vllm", engine.KVTransferBytes); n != "" && s.bytes > 0 {
			w.Histograms[n] = append(w.Histograms[n], window.Histogram{Labels: l, Count: s.n, Sum: s.bytes})
		}
	}
}

// specCounters adds vLLM's speculative decoding counters to a log's window:
// the drafted and accepted tokens of its SpecDecoding (V1, per interval)
// or Speculative metrics (V0, since start) lines, and the verify passes
// where the tokens drafted per pass are known (drafted ÷ that). A log
// without such lines counts none: vLLM logs them whenever it speculates.
func specCounters(w *window.Window, spec []record, readings map[string][]record, model string) {
	engines := slices.Sorted(maps.Keys(readings))
	if len(engines) == 0 || len(spec) == 0 {
		return
	}
	type sums struct{ acc, dr, drafts float64 }
	by := map[string]*sums{}
	var first, last = map[string]record{}, map[string]record{}
	perPass := true
	for _, r := range spec {
		e := r.engine
		if _, ok := readings[e]; !ok {
			e = engines[0]
		}
		if by[e] == nil {
			by[e] = &sums{}
		}
		if r.cumulativeSpec {
			if _, ok := first[e]; !ok {
				first[e] = r
			}
			last[e] = r
			continue
		}
		s := by[e]
		s.acc += nz(r.accepted)
		s.dr += nz(r.drafted)
		if r.specK > 0 {
			s.drafts += nz(r.drafted) / r.specK
		} else if nz(r.drafted) > 0 {
			perPass = false
		}
	}
	for e, l := range last {
		// V0's counts are since start: the increase over the log, or all
		// of them when one line is all there is.
		f, s := first[e], by[e]
		acc, dr := nz(l.accepted), nz(l.drafted)
		if f.t.Before(l.t) {
			acc, dr = acc-nz(f.accepted), dr-nz(f.drafted)
		}
		if acc < 0 || dr < 0 {
			acc, dr = nz(l.accepted), nz(l.drafted) // a restart between them
		}
		s.acc, s.dr = acc, dr
		if l.specK > 0 {
			s.drafts = dr / l.specK
		} else {
			perPass = false
		}
	}
	for _, e := range engines {
		s := by[e]
		if s == nil {
			s = &sums{}
		}
		l := window.Labels{"model_name": model, rankLabel("vllm"): e}
		add := func(key string, x float64) {
			if n := name("vllm", key); n != "" {
				w.Counters[n] = append(w.Counters[n], window.Counter{Labels: l, Increase: x})
			}
		}
		add(engine.SpecDraftTokens, s.dr)
		add(engine.SpecAccepted, s.acc)
		if perPass {
			add(engine.SpecDrafts, s.drafts)
		}
	}
}

// buildEvents makes a window of a log that holds preemption or retraction
// warnings and no stats line: their times are its points, and the count of
// preemptions its only number.
func buildEvents(events []record, eng, model, from string, def time.Duration) *window.Window {
	w := window.New()
	w.From = from
	byEngine := map[string][]record{}
	var times []time.Time
	seen := map[time.Time]bool{}
	last := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range events {
		if !events[i].dated {
			last = last.Add(def)
			events[i].t = last
		}
		last = events[i].t
		byEngine[events[i].engine] = append(byEngine[events[i].engine], events[i])
		if !seen[events[i].t] {
			seen[events[i].t] = true
			times = append(times, events[i].t)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	w.Start, w.End = times[0].Add(-def), times[len(times)-1]
	w.Points = len(times)
	if len(times) > 1 {
		w.Times = times
	}
	warned := slices.ContainsFunc(events, func(r record) bool { return r.sawPreemptions })
	for _, e := range slices.Sorted(maps.Keys(byEngine)) {
		l := window.Labels{"model_name": model, rankLabel(eng): e}
		if !warned {
			continue // speculative decoding or KV transfer lines: no reading of the cache
		}
		if pre, ok := preemptions(nil, byEngine[e], e, true); ok {
			if n := name(eng, engine.Preemptions); n != "" {
				w.Counters[n] = append(w.Counters[n], window.Counter{Labels: l, Increase: pre})
			}
		}
		// Each warning says the KV cache had no room at its moment ("KV
		// cache pool is full", "not enough KV cache space"): that is the
		// only usage reading such a log holds.
		p := make([]float64, len(times))
		for i := range p {
			p[i] = math.NaN()
		}
		for _, r := range byEngine[e] {
			if r.sawPreemptions {
				p[sort.Search(len(times), func(i int) bool { return !times[i].Before(r.t) })] = 1
			}
		}
		if n := name(eng, engine.KVUsage); n != "" {
			w.Gauges[n] = append(w.Gauges[n], window.Gauge{Labels: l, Points: p})
		}
	}
	if warned {
		w.Notes = append(w.Notes, fmt.Sprintf("%s: each preemption or retraction warning says the KV cache was full at its moment: read as KV cache usage 100%% there", from))
	}
	return w
}

// hold fills the rounds an engine did not log in with its nearest reading
// within limit: engines (SGLang's data-parallel
// ranks) log at their own moments, so a round seldom holds a line of each,
// and a gauge holds its value between readings. Without it the sum over
// engines would be unknown at most rounds. The nearest reading is taken,
// the earlier on a tie.
func hold(p []float64, times []time.Time, limit time.Duration) {
	src := append([]float64(nil), p...)
	for i := range p {
		if !math.IsNaN(p[i]) {
			continue
		}
		best, bestD := math.NaN(), limit+1
		for j := range src {
			if math.IsNaN(src[j]) {
				continue
			}
			d := times[i].Sub(times[j])
			if d < 0 {
				d = -d
			}
			// The earlier reading wins a tie: it is the state held until now.
			if d < bestD || d == bestD && j < i {
				best, bestD = src[j], d
			}
		}
		if bestD <= limit {
			p[i] = best
		}
	}
}

// sameMoment returns the index of the reading of rs logged at r's moment
// (the same second) that r would repeat or contradict, or -1. SGLang logs
// a line per prefill batch, so only a word-for-word repeat of one is one.
func sameMoment(rs []record, r record) int {
	if !r.dated {
		return -1 // undated lines are placed one interval apart
	}
	for i := len(rs) - 1; i >= 0 && !rs[i].t.Before(r.t); i-- {
		if rs[i].t.Equal(r.t) && rs[i].kind == r.kind && (r.kind != sglPrefill || equal(rs[i], r)) {
			return i
		}
	}
	return -1
}

// equal reports whether two readings hold the same numbers.
func equal(a, b record) bool {
	xs := []float64{a.running, a.waiting, a.swapped, a.kv, a.cpuKV, a.hit, a.promptTPS, a.genTPS, a.newTokens, a.cachedTokens, a.preemptions}
	ys := []float64{b.running, b.waiting, b.swapped, b.kv, b.cpuKV, b.hit, b.promptTPS, b.genTPS, b.newTokens, b.cachedTokens, b.preemptions}
	for i := range xs {
		if xs[i] != ys[i] && !(math.IsNaN(xs[i]) && math.IsNaN(ys[i])) {
			return false
		}
	}
	return true
}

// evidenceOfV0 reports whether a reading is a V0 line (it has Swapped or
// CPU KV cache usage, which V1 dropped).
func evidenceOfV0(r record) bool { return !math.IsNaN(r.swapped) || !math.IsNaN(r.cpuKV) }

func lastEngine(readings map[string][]record, e string) string {
	if _, ok := readings[e]; ok {
		return e
	}
	for k := range readings {
		return k
	}
	return e
}

// place gives undated readings times: after the dated reading before them,
// one default interval apart. It returns how many it placed.
func place(readings map[string][]record, def time.Duration) int {
	n := 0
	for _, rs := range readings {
		var last time.Time
		for i := range rs {
			if rs[i].dated {
				last = rs[i].t
				continue
			}
			if last.IsZero() {
				last = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
			} else {
				last = last.Add(def)
			}
			rs[i].t = last
			n++
		}
	}
	return n
}

// fixYears moves month-day stamps that run backwards across New Year into
// the next year, and time-of-day stamps that run backwards across midnight
// into the next day.
func fixYears(readings map[string][]record) {
	for _, rs := range readings {
		for i := 1; i < len(rs); i++ {
			if rs[i].clock && rs[i].t.Before(rs[i-1].t.Add(-12*time.Hour)) {
				for j := i; j < len(rs); j++ {
					rs[j].t = rs[j].t.AddDate(0, 0, 1)
				}
				continue
			}
			if rs[i].t.Before(rs[i-1].t.Add(-180 * 24 * time.Hour)) {
				for j := i; j < len(rs); j++ {
					rs[j].t = rs[j].t.AddDate(1, 0, 0)
				}
			}
		}
	}
}

// tokens are an engine's prompt and generated tokens over the log (vLLM:
// each line's average throughput times the time it covers; SGLang: the
// prefill batches' tokens, and the decode lines' throughput times their
// spacing) and SGLang's prompt tokens served from cache. A line after a
// pause covers its own interval, not the pause: idle rounds are not logged.
func tokens(rs []record, eng string, step, span time.Duration) (prompt, gen, cached float64) {
	if eng == "sglang" {
		// A decode line's throughput is over its own last 40 decode steps,
		// which data-parallel ranks take at their own moments: a rank
		// generates at its lines' mean rate over the whole log.
		var rate float64
		n := 0
		for _, r := range rs {
			switch r.kind {
			case sglPrefill:
				prompt += nz(r.newTokens) + nz(r.cachedTokens)
				cached += nz(r.cachedTokens)
			case sglDecode:
				rate += r.genTPS
				n++
			}
		}
		gen = math.NaN()
		if n > 0 {
			gen = rate / float64(n) * span.Seconds()
		}
		return prompt, gen, cached
	}
	var prev time.Time
	for i, r := range rs {
		dt := step
		if i > 0 {
			if d := r.t.Sub(prev); d > 0 && d <= window.GapFactor*step {
				dt = d
			}
		}
		prev = r.t
		prompt += r.promptTPS * dt.Seconds()
		gen += r.genTPS * dt.Seconds()
	}
	return prompt, gen, cached
}

func nz(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// preemptions counts an engine's preemptions: V1's per-interval field,
// SGLang's retractions, and V0's warnings, which carry the cumulative count
// and are printed at the first preemption and every 50th: the count is the
// rise of the cumulative number, at least one per warning. Warnings carry
// no engine: they go to the only engine, or to engine 0.
func preemptions(rs []record, events []record, e string, only bool) (float64, bool) {
	var n float64
	saw := false
	for _, r := range rs {
		if r.sawPreemptions {
			n += r.preemptions
			saw = true
		}
	}
	first, last := math.NaN(), math.NaN()
	warnings := 0.0
	for _, r := range events {
		if !only && r.engine != e {
			continue
		}
		saw = true
		if !math.IsNaN(r.cumulative) {
			if math.IsNaN(first) {
				first = r.cumulative
			}
			last = r.cumulative
			warnings++
			continue
		}
		n += r.preemptions
	}
	if warnings > 0 {
		n += math.Max(warnings, last-first+1)
	}
	// V0 lines with a swapped count say what V0 does at a preemption when
	// swap space is set: a swapped request was preempted.
	return n, saw
}

// specNote says what the speculative decoding lines show.
func specNote(from string, spec []record) string {
	var acc, dr, lenSum, lenN float64
	for _, r := range spec {
		if r.cumulativeSpec {
			// V0's counts are since start: the last line has them all.
			acc, dr = nz(r.accepted), nz(r.drafted)
		} else {
			acc += nz(r.accepted)
			dr += nz(r.drafted)
		}
		if !math.IsNaN(r.acceptLen) {
			lenSum += r.acceptLen
			lenN++
		}
	}
	var parts []string
	if dr > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% of %.0f drafted tokens accepted", 100*acc/dr, dr))
	}
	if lenN > 0 {
		parts = append(parts, fmt.Sprintf("mean acceptance length %.2f", lenSum/lenN))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%s: %d speculative decoding line%s", from, len(spec), plural(len(spec)))
	}
	return fmt.Sprintf("%s: speculative decoding in %d line%s: %s", from, len(spec), plural(len(spec)), strings.Join(parts, ", "))
}
