package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Offline runs a scenario in virtual time, warm-up then window, and writes
// what a real deployment would have produced: a timestamped OpenMetrics file
// (for promtool tsdb create-blocks-from openmetrics), the engine's periodic
// log (vLLM's stats lines, or SGLang's scheduler lines), and the requests of the window as `vllm bench serve` result JSON.
// Writers left nil are skipped.
type Offline struct {
	OpenMetrics io.Writer
	// Step is the sampling interval of the OpenMetrics file (default 15s).
	Step time.Duration
	Log  io.Writer
	// LogInterval is vLLM's VLLM_LOG_STATS_INTERVAL (default 10s).
	LogInterval time.Duration
	Bench       io.Writer
	// Start and End receive /metrics as a scrape would have seen it (vLLM
	// then DCGM families, no timestamps) at the window's edges.
	Start, End io.Writer
	// Points, when set, receives /metrics like Start and End at every sample
	// point of the OpenMetrics file, oldest first, with the point's time.
	Points func(at time.Time, exposition []byte) error
	// Epoch is the wall-clock time of virtual time zero (default sim.Epoch).
	Epoch time.Time
}

// Run executes the scenario and writes the outputs.
func (o Offline) Run(sc *Scenario) error {
	e, err := New(sc, o.Bench != nil)
	if err != nil {
		return err
	}
	step := o.Step
	if step <= 0 {
		step = 15 * time.Second
	}
	logEvery := o.LogInterval
	if logEvery <= 0 {
		logEvery = 10 * time.Second
	}
	warm, end := sc.Warmup.Seconds(), (sc.Warmup + sc.Duration).Seconds()
	epoch := o.Epoch
	if epoch.IsZero() {
		epoch = Epoch
	}
	gather := o.OpenMetrics != nil || o.Start != nil || o.End != nil || o.Points != nil
	vllmReg, dcgmReg := e.Registries()
	sources := []Endpoint{{Registry: vllmReg}, {Registry: dcgmReg}}
	if eps := e.Endpoints(); len(eps) > 1 {
		// Several servers, as a Prometheus scraping each would label
		// them; their GPUs, on one simulated host, are left out (see
		// simrun).
		sources = eps
	}
	series := map[string]*dto.MetricFamily{}
	var log *bufio.Writer
	if o.Log != nil {
		log = bufio.NewWriter(o.Log)
	}
	var last logSample
	// Outputs not asked for are scheduled past the end.
	nextOM, nextLog := warm, warm
	if !gather {
		nextOM = math.Inf(1)
	}
	if log == nil {
		nextLog = math.Inf(1)
	}
	e.AdvanceTo(warm)
	for {
		t := math.Min(nextOM, nextLog)
		if t > end+1e-9 {
			break
		}
		e.AdvanceTo(t)
		if t >= nextOM-1e-9 {
			merged, err := mergeEndpoints(sources)
			if err != nil {
				return err
			}
			var text bytes.Buffer
			ms := epoch.Add(time.Duration(t * float64(time.Second))).UnixMilli()
			for _, f := range merged {
				if _, err := expfmt.MetricFamilyToText(&text, f); err != nil {
					return err
				}
				stamp([]*dto.MetricFamily{f}, ms)
				acc, ok := series[f.GetName()]
				if !ok {
					acc = &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type}
					series[f.GetName()] = acc
				}
				acc.Metric = append(acc.Metric, f.Metric...)
			}
			if o.Points != nil {
				if err := o.Points(epoch.Add(time.Duration(t*float64(time.Second))), text.Bytes()); err != nil {
					return err
				}
			}
			for _, x := range []struct {
				at float64
				w  io.Writer
			}{{warm, o.Start}, {end, o.End}} {
				if x.w != nil && math.Abs(t-x.at) < 1e-9 {
					if _, err := x.w.Write(text.Bytes()); err != nil {
						return err
					}
				}
			}
			nextOM += step.Seconds()
			if nextOM > end && nextOM-step.Seconds() < end-1e-9 {
				nextOM = end // always sample the window's last moment
			}
		}
		if t >= nextLog-1e-9 {
			cur := e.logSample()
			if t > warm {
				writeLogLines(log, sc.Exposes, epoch, t, last, cur, logEvery.Seconds())
			}
			last = cur
			nextLog += logEvery.Seconds()
		}
	}
	if o.OpenMetrics != nil {
		if err := WriteOpenMetrics(o.OpenMetrics, series); err != nil {
			return err
		}
	}
	if log != nil {
		if err := log.Flush(); err != nil {
			return err
		}
	}
	e.AdvanceTo(end)
	if o.Bench != nil {
		// A benchmark client waits for every request it sent: drain them
		// (for at most two more virtual hours).
		for t := end; e.inFlightBefore(end) && t < end+7200; t += 60 {
			e.AdvanceTo(t)
		}
		return writeBench(o.Bench, sc, e, epoch, warm, end)
	}
	return nil
}

// WriteOpenMetrics writes timestamped families as one OpenMetrics file for
// promtool: every family once, by name, each series' samples together and in
// time order, as OpenMetrics requires.
func WriteOpenMetrics(w io.Writer, fams map[string]*dto.MetricFamily) error {
	bw := bufio.NewWriter(w)
	order := make([]string, 0, len(fams))
	for name := range fams {
		order = append(order, name)
	}
	sort.Strings(order)
	for _, name := range order {
		f := fams[name]
		sort.SliceStable(f.Metric, func(i, j int) bool {
			a, b := labelKey(f.Metric[i]), labelKey(f.Metric[j])
			if a != b {
				return a < b
			}
			return f.Metric[i].GetTimestampMs() < f.Metric[j].GetTimestampMs()
		})
		if _, err := expfmt.MetricFamilyToOpenMetrics(bw, f); err != nil {
			return err
		}
	}
	if _, err := expfmt.FinalizeOpenMetrics(bw); err != nil {
		return err
	}
	return bw.Flush()
}

func labelKey(m *dto.Metric) string {
	var s string
	for _, l := range m.Label {
		s += l.GetName() + "=" + l.GetValue() + ","
	}
	return s
}

type logSample struct {
	prompt, gen, preempt float64
	queried, cached      float64
	running, waiting     int
	// capacity is the tokens the KV cache holds.
	capacity    float64
	kv, hitRate float64
	// Speculative decoding: verify passes, drafted and accepted tokens,
	// accepted per position, and SGLang's recent accepted length and rate.
	spec                      bool
	drafts, drafted, accepted float64
	perPos                    []float64
	specLength, specRate      float64
	// A split deployment's decode instance: every KV pull so far, its
	// seconds, and the bytes pulled.
	xfers     []float64
	xferBytes float64
	// split: a decode instance; transferReq its requests whose KV is on
	// the way.
	split       bool
	transferReq int
}

func (e *Engine) logSample() logSample {
	return logSample{prompt: e.m.promptTokens, gen: e.m.genTokens, preempt: e.m.preemptions,
		queried: e.m.prefixQueries, cached: e.m.prefixHits, capacity: float64(e.totalBlocks * e.sc.Engine.BlockSize),
		running: len(e.running), waiting: len(e.waiting) + len(e.loading), kv: e.KVUsage(), hitRate: e.m.recentHitRate(),
		spec: e.sc.Engine.Speculative != nil, drafts: e.m.specDrafts, drafted: e.m.specDraftTokens, accepted: e.m.specAccepted,
		perPos: slices.Clone(e.m.specPerPos), specLength: e.m.specLength, specRate: e.m.specRate,
		xfers: e.m.xferLog[:len(e.m.xferLog):len(e.m.xferLog)], xferBytes: e.m.xferBytes,
		split: e.prefill != nil, transferReq: len(e.loading)}
}

// writeLogLines prints the engine's periodic log for one interval: vLLM's
// stats line, or SGLang's scheduler lines. A write error stays in w until
// its Flush, which is checked.
func writeLogLines(w *bufio.Writer, exposes string, epoch time.Time, t float64, prev, cur logSample, interval float64) {
	if exposes == "sglang" {
		writeSGLangLines(w, epoch, t, prev, cur, interval)
		return
	}
	writeStatsLine(w, epoch, t, prev, cur, interval)
}

// writeSGLangLines prints what SGLang's scheduler logs
// (python/sglang/srt/managers/scheduler_metrics_mixin.py, v0.5.x): the
// interval's prefill batches as one "Prefill batch" line with their new and
// cached tokens, then a "Decode batch" line with the state and the
// generation throughput since the last one, and a retraction warning when
// requests were preempted.
func writeSGLangLines(w *bufio.Writer, epoch time.Time, t float64, prev, cur logSample, interval float64) {
	ts := epoch.Add(time.Duration(t * float64(time.Second))).Format("2006-01-02 15:04:05")
	if p := cur.preempt - prev.preempt; p > 0 {
		fmt.Fprintf(w, "[%s TP0] KV cache pool is full. Retract requests. #retracted_reqs: %d, #new_token_ratio: 0.7000 -> 0.9000\n", ts, int(p))
	}
	if q := cur.queried - prev.queried; q > 0 {
		cached := cur.cached - prev.cached
		fmt.Fprintf(w, "[%s TP0] Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "+
			"#running-req: %d, #queue-req: %d, input throughput (token/s): %.2f\n",
			ts, max(1, cur.running-prev.running), int(q-cached), int(cached), cur.kv, cur.running, cur.waiting, (q-cached)/interval)
	}
	spec := ""
	if cur.spec {
		spec = fmt.Sprintf("accept len: %.2f, accept rate: %.2f, ", cur.specLength, cur.specRate)
	}
	if cur.split {
		// A decode instance of a split deployment (v0.5.9's fields): its
		// waiting queue holds only requests whose KV has arrived.
		spec += fmt.Sprintf("pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: %d, #retracted-req: 0, ", cur.transferReq)
	}
	fmt.Fprintf(w, "[%s TP0] Decode batch, #running-req: %d, #token: %d, token usage: %.2f, %scuda graph: True, "+
		"gen throughput (token/s): %.2f, #queue-req: %d\n",
		ts, cur.running, int(cur.kv*cur.capacity), cur.kv, spec, (cur.gen-prev.gen)/interval, cur.waiting-cur.transferReq)
}

// writeStatsLine prints vLLM V1's periodic stats line (vllm/v1/metrics/loggers.py).
func writeStatsLine(w *bufio.Writer, epoch time.Time, t float64, prev, cur logSample, interval float64) {
	ts := epoch.Add(time.Duration(t * float64(time.Second)))
	fmt.Fprintf(w, "(APIServer pid=4242) INFO %s [loggers.py:127] Engine 000: Avg prompt throughput: %.1f tokens/s, "+
		"Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, ",
		ts.Format("01-02 15:04:05"), (cur.prompt-prev.prompt)/interval, (cur.gen-prev.gen)/interval, cur.running, cur.waiting)
	if p := cur.preempt - prev.preempt; p > 0 {
		fmt.Fprintf(w, "Preemptions: %d, ", int(p))
	}
	fmt.Fprintf(w, "GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%\n", 100*cur.kv, 100*cur.hitRate)
	if d := cur.drafts - prev.drafts; cur.spec && d > 0 {
		// vllm/v1/spec_decode/metrics.py, after the stats line.
		acc, dr := cur.accepted-prev.accepted, cur.drafted-prev.drafted
		pos := make([]string, len(cur.perPos))
		for i := range cur.perPos {
			p := cur.perPos[i]
			if i < len(prev.perPos) {
				p -= prev.perPos[i]
			}
			pos[i] = fmt.Sprintf("%.3f", p/d)
		}
		fmt.Fprintf(w, "(APIServer pid=4242) INFO %s [metrics.py:101] SpecDecoding metrics: Mean acceptance length: %.2f, "+
			"Accepted throughput: %.2f tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, "+
			"Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%\n",
			ts.Format("01-02 15:04:05"), 1+acc/d, acc/interval, dr/interval, int(acc), int(dr), strings.Join(pos, ", "), 100*acc/dr)
	}
	if xs := cur.xfers[len(prev.xfers):]; len(xs) > 0 {
		// The NIXL connector's KVConnectorLogging, on the decode instance.
		var sum float64
		for _, x := range xs {
			sum += x
		}
		sorted := slices.Sorted(slices.Values(xs))
		p90 := sorted[min(len(sorted)-1, int(math.Ceil(0.9*float64(len(sorted))))-1)]
		mb := (cur.xferBytes - prev.xferBytes) / 1e6
		n := float64(len(xs))
		fmt.Fprintf(w, "(APIServer pid=4242) INFO %s [metrics.py:98] KV Transfer metrics: Num successful transfers=%d, "+
			"Avg xfer time (ms)=%.3f, P90 xfer time (ms)=%.3f, Avg post time (ms)=%.3f, P90 post time (ms)=%.3f, "+
			"Avg MB per transfer=%.1f, Throughput (MB/s)=%.3f, Avg number of descriptors=%.1f\n",
			ts.Format("01-02 15:04:05"), len(xs), 1000*sum/n, 1000*p90, 0.0, 0.0, mb/n, mb/sum, 0.0)
	}
}

// writeBench writes the window's requests as `vllm bench serve --save-result
// --save-detailed` JSON: summary statistics in ms, per-request arrays in s.
func writeBench(w io.Writer, sc *Scenario, e *Engine, epoch time.Time, warm, end float64) error {
	var recs []Record
	for _, x := range e.Replicas() {
		for _, r := range x.Records {
			if r.Arrival >= warm && r.Arrival < end {
				recs = append(recs, r)
			}
		}
	}
	// vllm bench serve lists requests in the order it sent them.
	sort.Slice(recs, func(i, j int) bool { return recs[i].Arrival < recs[j].Arrival })
	// The benchmark lasts from its first request to its last answer.
	dur := end - warm
	for _, r := range recs {
		dur = math.Max(dur, r.Arrival+r.E2E-warm)
	}
	var inTok, outTok int
	var ttfts, tpots, itlsFlat []float64
	inputLens, outputLens := []int{}, []int{}
	itls, starts := [][]float64{}, []float64{}
	texts, errs := []string{}, []string{}
	for _, r := range recs {
		inTok += r.Prompt
		outTok += r.Output
		inputLens = append(inputLens, r.Prompt)
		outputLens = append(outputLens, r.Output)
		ttfts = append(ttfts, r.ClientTTFT)
		gaps := r.ITLs
		if !r.Streaming {
			gaps = []float64{}
		}
		itls = append(itls, gaps)
		itlsFlat = append(itlsFlat, gaps...)
		if r.Output > 1 {
			tpots = append(tpots, (r.E2E-r.TTFT)/float64(r.Output-1))
		}
		starts = append(starts, r.Arrival)
		texts = append(texts, "")
		errs = append(errs, "")
	}
	out := map[string]any{
		"date":          Epoch.Add(time.Duration(warm * float64(time.Second))).Format("20060102-150405"),
		"endpoint_type": "openai-chat", "backend": "openai-chat", "label": nil,
		"model_id": e.model.Served, "tokenizer_id": e.model.Served, "num_prompts": len(recs),
		"request_rate": sc.Workload.Rate, "burstiness": sc.Workload.BurstShape, "max_concurrency": nil,
		"duration": dur, "completed": len(recs), "failed": 0,
		"total_input_tokens": inTok, "total_output_tokens": outTok,
		"request_throughput": float64(len(recs)) / dur, "request_goodput": nil,
		"output_throughput": float64(outTok) / dur, "total_token_throughput": float64(inTok+outTok) / dur,
		"input_lens": inputLens, "output_lens": outputLens, "ttfts": ttfts, "itls": itls,
		"start_times": starts, "generated_texts": texts, "errors": errs,
	}
	for name, xs := range map[string][]float64{"ttft": ttfts, "tpot": tpots, "itl": itlsFlat} {
		mean, med, std, p99 := stats(xs)
		out["mean_"+name+"_ms"], out["median_"+name+"_ms"] = mean*1000, med*1000
		out["std_"+name+"_ms"], out["p99_"+name+"_ms"] = std*1000, p99*1000
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}

// stats returns mean, median, population standard deviation and p99 with
// numpy's default linear interpolation, as vllm bench serve computes them.
func stats(xs []float64) (mean, median, std, p99 float64) {
	if len(xs) == 0 {
		return 0, 0, 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	for _, x := range s {
		std += (x - mean) * (x - mean)
	}
	std = math.Sqrt(std / float64(len(s)))
	pct := func(q float64) float64 {
		pos := q * float64(len(s)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(s)-1)
		return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
	}
	return mean, pct(0.5), std, pct(0.99)
}

// mergeEndpoints gathers the servers' metrics into one family per name, the
// servers' series together and labelled with their instance where it is
// set, as a federation endpoint gives them.
func mergeEndpoints(eps []Endpoint) ([]*dto.MetricFamily, error) {
	var merged []*dto.MetricFamily
	byName := map[string]*dto.MetricFamily{}
	for _, ep := range eps {
		fams, err := ep.Registry.Gather()
		if err != nil {
			return nil, err
		}
		for _, f := range fams {
			if ep.Instance != "" {
				for _, m := range f.Metric {
					m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("instance"), Value: proto.String(ep.Instance)})
					sort.Slice(m.Label, func(i, j int) bool { return m.Label[i].GetName() < m.Label[j].GetName() })
				}
			}
			if g, ok := byName[f.GetName()]; ok {
				g.Metric = append(g.Metric, f.Metric...)
				continue
			}
			byName[f.GetName()] = f
			merged = append(merged, f)
		}
	}
	return merged, nil
}
