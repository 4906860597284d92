package sglang_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file writes /metrics expositions in the shape an SGLang server's
// prometheus_client (multiprocess mode) produces: HELP and TYPE lines, labels
// sorted by name, a histogram's _sum, then its cumulative _bucket lines up to
// +Inf, then _count, floats as Python prints them. The numbers are made up.

// ob is n observations of the value v.
type ob struct{ v, n float64 }

// Default bucket bounds by release (reference §2.4).
var (
	ttftBuckets     = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	ttftBucketsV043 = []float64{0.1, 0.3, 0.5, 0.7, 0.9, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 120, 160}
	itlBuckets      = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
		0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0}
	itlBucketsV043 = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.050,
		0.075, 0.100, 0.150, 0.200, 0.300, 0.400, 0.500, 0.750, 1.0, 2.0}
	e2eBuckets = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200,
		1800, 2400}
	e2eBucketsV045 = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 800}
	e2eBucketsV043 = []float64{0.1, 0.2, 0.4, 0.8, 1, 2, 5, 10, 20, 40, 60, 80, 100, 150, 200, 250, 300, 350, 500, 1000}
	queueBuckets   = []float64{0.000, 0.001, 0.005, 0.010, 0.050, 0.100, 0.200, 0.500, 1, 2, 3, 4, 5, 10, 15, 20, 30,
		40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
	tokBuckets = []float64{100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000,
		12500, 15000, 17500, 20000, 22500, 25000, 27500, 30000, 35000, 40000, 60000, 80000, 100000, 200000, 300000,
		400000, 600000, 800000, 1000000, 1100000}
	stageBuckets = func() []float64 { // exponential_buckets(0.001, 1.62, 30)
		out := make([]float64, 30)
		for k := range out {
			out[k] = 0.001 * math.Pow(1.62, float64(k))
		}
		return out
	}()
)

type lbl map[string]string

func (l lbl) with(kv ...string) lbl {
	o := lbl{}
	for k, v := range l {
		o[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		o[kv[i]] = kv[i+1]
	}
	return o
}

func (l lbl) String() string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, l[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

type family struct {
	typ, help string
	lines     []string
}

// expo collects families in the order first written.
type expo struct {
	order []string
	fams  map[string]*family
}

func newExpo() *expo { return &expo{fams: map[string]*family{}} }

func (x *expo) fam(name, typ, help string) *family {
	f, ok := x.fams[name]
	if !ok {
		f = &family{typ: typ, help: help}
		x.fams[name] = f
		x.order = append(x.order, name)
	}
	return f
}

func (x *expo) gauge(name, help string, l lbl, v float64) {
	f := x.fam(name, "gauge", help)
	f.lines = append(f.lines, name+l.String()+" "+pyFloat(v))
}

// counter writes a counter the way client_python's text format does: the
// family named with _total.
func (x *expo) counter(name, help string, l lbl, v float64) {
	f := x.fam(name, "counter", help)
	f.lines = append(f.lines, name+l.String()+" "+pyFloat(v))
}

func (x *expo) hist(name, help string, l lbl, bounds []float64, obs []ob) {
	f := x.fam(name, "histogram", help)
	var sum, count float64
	for _, o := range obs {
		sum += o.v * o.n
		count += o.n
	}
	f.lines = append(f.lines, name+"_sum"+l.String()+" "+pyFloat(sum))
	for _, b := range append(append([]float64(nil), bounds...), math.Inf(1)) {
		var c float64
		for _, o := range obs {
			if o.v <= b {
				c += o.n
			}
		}
		f.lines = append(f.lines, name+"_bucket"+l.with("le", pyFloat(b)).String()+" "+pyFloat(c))
	}
	f.lines = append(f.lines, name+"_count"+l.String()+" "+pyFloat(count))
}

func (x *expo) String() string {
	var b strings.Builder
	for _, n := range x.order {
		f := x.fams[n]
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", n, f.help, n, f.typ)
		for _, l := range f.lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// pyFloat formats like prometheus_client's floatToGoString.
func pyFloat(d float64) string {
	switch {
	case math.IsInf(d, 1):
		return "+Inf"
	case math.IsNaN(d):
		return "NaN"
	case d == 0:
		return "0.0"
	}
	if a := math.Abs(d); a < 1e-4 || a >= 1e16 {
		return strconv.FormatFloat(d, 'e', -1, 64)
	}
	s := strconv.FormatFloat(d, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	if dot := strings.IndexByte(s, '.'); d > 0 && dot > 6 {
		mant := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0")
		mant = strings.TrimSuffix(mant, ".")
		return fmt.Sprintf("%se+0%d", mant, dot-1)
	}
	return s
}

// Releases whose exposition shapes the tests use.
type release int

const (
	v043  release = iota // v0.4.3.post3: model_name only, old TTFT/ITL/E2E buckets
	v045                 // v0.4.5: engine_type on scheduler series, no queue or stage histograms
	v0518                // v0.5.18: rank labels, is_streaming, every family read
)

// sched is one reporting scheduler, cumulative as /metrics shows it.
type sched struct {
	ranks                   lbl // tp_rank, dp_rank overrides
	running, waiting, usage float64
	// byPriority holds running and waiting per priority value.
	byPriority map[string][2]float64
	capacity   float64
	queue      []ob
	// stages by stage label: prefill_forward, request_process, chunked_prefill.
	stages    map[string][]ob
	retracted float64
}

// traffic is what the tokenizer saw of one kind of request.
type traffic struct {
	ttft, e2e                             []ob
	requests, promptTokens, genTokens     float64
	cachedDevice, cachedHost, cachedTotal float64
}

// server is one SGLang server at one moment.
type server struct {
	rel      release
	model    string
	priority bool
	scheds   []sched
	// stream and batch are streaming and non-streaming requests; before
	// v0.5.17 they share one series.
	stream, batch       traffic
	itl                 []ob
	prompt, gen, uncach []ob
	aborted             float64
}

func (s server) String() string {
	x := newExpo()
	schedLbl := func(sc sched) lbl {
		l := lbl{"model_name": s.model}
		if s.rel >= v045 {
			l["engine_type"] = "unified"
		}
		if s.rel >= v0518 {
			l = l.with("tp_rank", "0", "pp_rank", "0", "moe_ep_rank", "0")
			if s.priority {
				l["priority"] = ""
			}
		}
		for k, v := range sc.ranks {
			l[k] = v
		}
		return l
	}
	tokLbl := lbl{"model_name": s.model}
	if s.rel >= v0518 {
		tokLbl["engine_type"] = "unified"
	}
	for _, sc := range s.scheds {
		l := schedLbl(sc)
		x.gauge("sglang:num_running_reqs", "The number of running requests.", l, sc.running)
		for _, p := range slices.Sorted(maps.Keys(sc.byPriority)) {
			x.gauge("sglang:num_running_reqs", "", l.with("priority", p), sc.byPriority[p][0])
		}
		x.gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", l, sc.waiting)
		for _, p := range slices.Sorted(maps.Keys(sc.byPriority)) {
			x.gauge("sglang:num_queue_reqs", "", l.with("priority", p), sc.byPriority[p][1])
		}
		x.gauge("sglang:token_usage", "The token usage.", l, sc.usage)
		x.gauge("sglang:gen_throughput", "The generation throughput (token/s).", l, 1234.5)
		// Last prefill batch only: must never be read as the hit rate.
		x.gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", l, 0.97)
		if s.rel >= v0518 {
			x.gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", l, sc.capacity)
			x.gauge("sglang:page_size", "KV cache page size in tokens.", l, 1)
			x.counter("sglang:num_retracted_requests_total", "Number of retracted requests.", l, sc.retracted)
			x.hist("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", l, queueBuckets, sc.queue)
			for _, st := range slices.Sorted(maps.Keys(sc.stages)) {
				x.hist("sglang:per_stage_req_latency_seconds", "The latency of each stage of requests.", l.with("stage", st), stageBuckets, sc.stages[st])
			}
		}
	}
	ttftB, itlB, e2eB := ttftBuckets, itlBuckets, e2eBuckets
	switch s.rel {
	case v043:
		ttftB, itlB, e2eB = ttftBucketsV043, itlBucketsV043, e2eBucketsV043
	case v045:
		e2eB = e2eBucketsV045
	}
	kinds := []struct {
		t   traffic
		tag string
	}{{s.stream, "true"}, {s.batch, "false"}}
	if s.rel < v0518 {
		kinds = kinds[:1] // no is_streaming label: one series for both
	}
	for _, k := range kinds {
		if k.t.requests == 0 && len(k.t.ttft) == 0 {
			continue // labelled series appear on first use
		}
		l := tokLbl
		if s.rel >= v0518 {
			l = l.with("is_streaming", k.tag)
		}
		x.counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", l, k.t.promptTokens)
		x.counter("sglang:generation_tokens_total", "Number of generation tokens processed.", l, k.t.genTokens)
		x.counter("sglang:num_requests_total", "Number of requests processed.", l, k.t.requests)
		x.hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", l, ttftB, k.t.ttft)
		x.hist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", l, e2eB, k.t.e2e)
	}
	cached := func(t traffic) (dev, host, tot float64) { return t.cachedDevice, t.cachedHost, t.cachedTotal }
	dev, host, tot := cached(s.stream)
	if s.rel >= v0518 {
		d2, h2, t2 := cached(s.batch)
		dev, host, tot = dev+d2, host+h2, tot+t2
	}
	switch {
	case s.rel >= v0518:
		x.counter("sglang:cached_tokens_total", "Number of cached prompt tokens by source (device/host/storage).", tokLbl.with("cache_source", "device"), dev)
		x.counter("sglang:cached_tokens_total", "", tokLbl.with("cache_source", "host"), host)
	case s.rel >= v045:
		x.counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", tokLbl, dev+host+tot)
	}
	x.hist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", tokLbl, itlB, s.itl)
	if s.rel == v043 {
		// Removed in v0.4.4.post4; llmdoctor does not read it.
		x.hist("sglang:time_per_output_token_seconds", "Histogram of time per output token in seconds.", tokLbl, itlB, s.itl)
	}
	if s.rel >= v0518 {
		x.counter("sglang:num_aborted_requests_total", "Number of requests aborted.", tokLbl, s.aborted)
		x.hist("sglang:prompt_tokens_histogram", "Histogram of prompt token length.", tokLbl, tokBuckets, s.prompt)
		x.hist("sglang:uncached_prompt_tokens_histogram", "Histogram of uncached (compute) prompt token length.", tokLbl, tokBuckets, s.uncach)
		x.hist("sglang:generation_tokens_histogram", "Histogram of generation token length.", tokLbl, tokBuckets, s.gen)
		// Families without model_name that llmdoctor leaves alone.
		x.counter("sglang:http_responses_total", "Total HTTP responses.", lbl{"endpoint": "/v1/chat/completions", "method": "POST", "status_code": "200"}, 1)
		x.counter("sglang:evicted_tokens_total", "Evicted tokens.", lbl{"cache_type": "RadixCache"}, 5e5)
	}
	return x.String()
}

// grow returns before, or before and during together at the window's end.
func grow(before, during []ob, end bool) []ob {
	if !end {
		return before
	}
	return append(append([]ob(nil), before...), during...)
}

func add(before, during float64, end bool) float64 {
	if end {
		return before + during
	}
	return before
}

func scale(obs []ob, k float64) []ob {
	out := make([]ob, len(obs))
	for i, o := range obs {
		out[i] = ob{o.v, o.n * k}
	}
	return out
}

// gateway rewrites an exposition as SGLang's model gateway serves it on
// /engine_metrics: every ':' becomes '_' (names, label values, help), then
// the worker's address is added as a label to every sample.
func gateway(text, worker string) string {
	text = strings.ReplaceAll(text, ":", "_")
	var out []string
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			out = append(out, line)
			continue
		}
		extra := fmt.Sprintf("worker_addr=%q", worker)
		if i := strings.Index(line, "}"); i >= 0 {
			line = line[:i] + "," + extra + line[i:]
		} else {
			sp := strings.Index(line, " ")
			line = line[:sp] + "{" + extra + "}" + line[sp:]
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n") + "\n"
}

// merge joins expositions family by family, as the gateway does when it
// aggregates several workers: one HELP and TYPE per family, then every
// worker's samples.
func merge(texts ...string) string {
	x := newExpo()
	for _, text := range texts {
		var cur *family
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			switch {
			case strings.HasPrefix(line, "# HELP "):
				f := strings.SplitN(line, " ", 4)
				cur = x.fam(f[2], "", f[3])
			case strings.HasPrefix(line, "# TYPE "):
				f := strings.SplitN(line, " ", 4)
				cur = x.fam(f[2], f[3], "")
				cur.typ = f[3]
			default:
				cur.lines = append(cur.lines, line)
			}
		}
	}
	return x.String()
}
