package whatif

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/sim"
)

// vLLM's defaults where the metrics say nothing.
const (
	defaultMaxNumSeqs  = 256
	defaultTokenBudget = 8192
	defaultBlockSize   = 16
	defaultFront       = 8 * time.Millisecond
)

// scenarioOf builds the scenario the evidence describes, with a first guess
// at the step cost that fitCost then refines.
func scenarioOf(t *advisor.TargetReport, o Options) (*sim.Scenario, fitted, []Setting, error) {
	num := func(p string) float64 { return evidence.TreeNumber(t.Evidence, p) }
	var set []Setting
	note := func(name string, v float64, from string) {
		if finite(v) { // JSON has no NaN; a value that is not there is not shown
			set = append(set, Setting{name, v, from})
		}
	}
	var f fitted

	window := num("cond.window_seconds")
	if !(window > 0) {
		return nil, f, set, fmt.Errorf("the window's length is unknown")
	}
	// The simulator is one engine. A target that sums several (data
	// parallel, or replicas grouped under one model) would need each one's
	// share of requests, KV blocks, batch and GPUs, which the sums hide.
	f.engines = 1
	if n := math.Max(num("cond.engines"), 1) * math.Max(num("service.instances"), 1); n > 1 {
		return nil, f, set, fmt.Errorf("the target sums %.0f engines or replicas and whatif models one: group by instance too (the labels model_name and instance) to calibrate each", n)
	}
	rate := num("service.request_rate")
	if !(rate > 0) {
		return nil, f, set, fmt.Errorf("no request rate (service.request_rate): nothing finished, or no request counter")
	}
	// A queue that never emptied makes the window's latency a matter of how
	// long the queue was, which is history, not traffic. Arrivals were the
	// finished rate plus the queue's growth. Such a window's step cost is
	// fitted on a closed loop of as many requests as were in the system.
	// A queue that held its length is replayed that way; one that grew by
	// half its mean or more, from empty at the replay's own capacity plus
	// the growth, warmed up until the queue reached its first length.
	f.saturated = num("service.waiting.min") >= 1
	arrivals := rate
	if f.saturated {
		mean, last := num("service.waiting.mean"), num("service.waiting.last")
		first := math.Max(num("service.waiting.min"), math.Min(num("service.waiting.max"), 2*mean-last))
		if c := t.Curves["waiting"]; len(c) > 1 {
			first, last = c[0][1], c[len(c)-1][1]
		}
		grew := last - first
		if grew == grew {
			arrivals = math.Max(rate+grew/window, rate/2)
		}
		running := num("service.running.mean")
		if !(running >= 0) || !(mean >= 0) {
			return nil, f, set, fmt.Errorf("the queue never emptied, and without the running and waiting gauges' means (service.running, service.waiting) how many requests were in the system is unknown")
		}
		f.inSystem = math.Round((mean + running) / f.engines)
		if grew >= math.Max(0.5*mean, 5) {
			f.growing = true
			f.growth, f.firstWaiting = grew/window/f.engines, first/f.engines
			note("queue_growth_per_second", f.growth, "the waiting gauge grew through the window: the step cost is fitted on a closed loop, the window replayed from empty")
		} else {
			note("in_system", f.inSystem, "the queue never emptied: the replay keeps the mean waiting and running requests in the system")
		}
	}
	f.rate = arrivals / f.engines
	note("rate_per_engine", f.rate, fmt.Sprintf("requests finished per second over %d engine(s), plus the queue's growth", int(f.engines)))

	prompt, err := lengthOf(num, t.Resolution, "cond.prompt_tokens")
	if err != nil {
		return nil, f, set, fmt.Errorf("prompt lengths: %w", err)
	}
	output, err := lengthOf(num, t.Resolution, "cond.output_tokens")
	if err != nil {
		return nil, f, set, fmt.Errorf("output lengths: %w", err)
	}
	note("prompt_mean_tokens", prompt.Mean, lengthFrom(prompt, t.Resolution, "cond.prompt_tokens"))
	note("output_mean_tokens", output.Mean, lengthFrom(output, t.Resolution, "cond.output_tokens"))
	f.meanRequest = prompt.Mean + output.Mean

	sc := &sim.Scenario{Name: "calibrated", Model: modelName(t), Seed: o.Seed, Warmup: replayWarmup,
		Duration: min(time.Duration(window*float64(time.Second)), replayWindow)}
	if sc.Seed == 0 {
		sc.Seed = 1
	}
	w := &sc.Workload
	w.Rate, w.Prompt, w.Output = f.rate, prompt, output
	if f.saturated {
		w.Concurrency = max(int(f.inSystem), 1)
	}
	stream := true
	w.Streaming = &stream

	e := &sc.Engine
	e.BlockSize = defaultBlockSize
	if b := num("cond.block_size"); b >= 1 {
		e.BlockSize = int(b)
	}
	if b := num("cond.gpu_blocks"); b >= 16 {
		e.GPUBlocks = int(b)
		note("gpu_blocks", b, "num_gpu_blocks of the cache config")
	} else {
		return nil, f, set, fmt.Errorf("the KV cache's size is unknown (num_gpu_blocks of vllm:cache_config_info)")
	}

	// Prefix reuse: the share of prompt tokens the cache served.
	caching := num("cond.prefix_caching")
	hit := 1 - num("cond.computed_prompt_tokens.mean")/prompt.Mean
	if math.IsNaN(hit) {
		hit = num("resource.prefix_hit_rate")
	}
	e.PrefixCaching = caching == 1 || math.IsNaN(caching) && hit > 0
	if e.PrefixCaching && hit > 0.01 {
		// One shared prefix, long enough that the tokens served from cache
		// (whole blocks of it, after its first prefill) match the hit rate.
		w.Prefix = sim.Prefix{Groups: 1, Tokens: int(math.Round(hit * prompt.Mean * 1.1))}
	}
	if !math.IsNaN(hit) {
		note("prefix_hit_rate", math.Max(hit, 0), "prompt tokens served from the prefix cache")
	}

	e.MaxNumSeqs = defaultMaxNumSeqs
	run, waited, kv := num("service.running.max"), num("service.waiting.frac_positive"), num("resource.kv_usage.max")
	var from string
	switch {
	case math.IsNaN(run) || math.IsNaN(waited) || math.IsNaN(kv):
		from = "vLLM's default: without the running, waiting and KV usage gauges the cap cannot be inferred"
	case run >= 1 && waited > 0 && kv < 0.9:
		e.MaxNumSeqs = int(run)
		from = fmt.Sprintf("requests waited in %.0f%% of samples while the KV cache had room: the largest batch seen is taken as the cap", 100*waited)
	case run > defaultMaxNumSeqs:
		e.MaxNumSeqs, from = int(run), "at least the largest batch seen"
	case waited > 0:
		from = "vLLM's default: requests waited, but with the KV cache near full, which may be what held them"
	default:
		from = "vLLM's default: no request waited, so the cap never showed"
	}
	e.MaxNumBatchedTokens = defaultTokenBudget
	budgetFrom := "vLLM's default"
	e.ChunkedPrefill = true
	chunkFrom := "vLLM V1 always chunks"
	if v, ok := o.Assume["max_num_seqs"]; ok {
		e.MaxNumSeqs, from = int(v), "assumed (--assume)"
	}
	if v, ok := o.Assume["max_num_batched_tokens"]; ok {
		e.MaxNumBatchedTokens, budgetFrom = int(v), "assumed (--assume)"
	}
	if v, ok := o.Assume["chunked_prefill"]; ok {
		e.ChunkedPrefill, chunkFrom = v != 0, "assumed (--assume)"
	}
	note("max_num_seqs", float64(e.MaxNumSeqs), from)
	note("max_num_batched_tokens", float64(e.MaxNumBatchedTokens), budgetFrom)
	note("chunked_prefill", b2f(e.ChunkedPrefill), chunkFrom)

	e.Front = defaultFront
	// Under a moving queue TTFT and queue time cover different requests,
	// so what is left of TTFT is no API-server time.
	if fm := num("stage.front_mean"); fm >= 0 && !f.saturated && !f.growing {
		e.Front = max(time.Duration(fm*float64(time.Second)), time.Microsecond)
		note("front_seconds", fm, "mean TTFT outside queue and prefill")
	}

	cost, measured, err := firstCost(num, prompt.Mean, output.Mean)
	if err != nil {
		return nil, f, set, err
	}
	f.contextMeasured = measured
	f.floorKnown = num("stage.decode_floor") > 0
	e.Cost = cost
	if err := sc.Check(); err != nil {
		return nil, f, set, err
	}
	return sc, f, set, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func modelName(t *advisor.TargetReport) string {
	if t.Target.Model != "" {
		return t.Target.Model
	}
	return "calibrated"
}

// lengthOf fits a lognormal to a token-length histogram as the evidence
// gives it: the exact mean, and quantiles interpolated inside buckets. The
// sigma chosen is the one whose lognormal, interpolated the same way inside
// the same buckets, gives the quantiles seen; the largest value seen (its
// bucket's upper bound) caps the draws.
func lengthOf(num func(string) float64, res map[string][2]float64, path string) (sim.Length, error) {
	mean := num(path + ".mean")
	if !(mean >= 1) {
		return sim.Length{}, fmt.Errorf("no mean (%s.mean)", path)
	}
	type seen struct {
		q, v   float64
		lo, hi float64
	}
	var qs []seen
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}} {
		v := num(path + "." + q.name)
		b, ok := res[path+"."+q.name]
		if v > 0 && ok && b[1] > b[0] && !math.IsInf(b[1], 0) {
			qs = append(qs, seen{q.q, v, b[0], b[1]})
		}
	}
	sigma, bestMiss := 0.5, math.Inf(1)
	for s := 0.05; s <= 1.5; s += 0.01 {
		mu := math.Log(mean) - s*s/2
		cdf := func(x float64) float64 {
			if x <= 0 {
				return 0
			}
			return 0.5 * math.Erfc(-(math.Log(x)-mu)/(s*math.Sqrt2))
		}
		miss := 0.0
		for _, o := range qs {
			flo, fhi := cdf(o.lo), cdf(o.hi)
			v := o.hi
			if fhi > flo {
				v = o.lo + (o.hi-o.lo)*clamp((o.q-flo)/(fhi-flo), 0, 1)
			}
			miss += math.Pow(math.Log(math.Max(v, 1e-9)/o.v), 2)
		}
		if len(qs) > 0 && miss < bestMiss {
			sigma, bestMiss = s, miss
		}
	}
	hi := 10 * mean
	if b, ok := res[path+".max"]; ok && b[1] > 0 && !math.IsInf(b[1], 0) {
		hi = b[1]
	} else if p99 := num(path + ".p99"); p99 > 0 {
		hi = 2 * p99
	}
	return sim.Length{Dist: "lognormal", Mean: math.Round(mean), Sigma: math.Round(sigma*100) / 100, Max: int(math.Ceil(hi))}, nil
}

func lengthFrom(l sim.Length, res map[string][2]float64, path string) string {
	for _, q := range []string{"p50", "p90", "p99"} {
		if _, ok := res[path+"."+q]; ok {
			return fmt.Sprintf("lognormal, sigma %.2f fitted to the histogram's quantiles, at most %d", l.Sigma, l.Max)
		}
	}
	return fmt.Sprintf("lognormal, sigma %.2f assumed (no quantile with its bucket to fit), at most %d", l.Sigma, l.Max)
}

// firstCost guesses the step cost from the observed times. A step takes
// Fixed (CPU) plus the larger of its memory time — the weights, Memory, and
// the batch's context, PerContext a token — and its compute time, PerToken
// a token. With DCGM the weights' time is the decode floor, and the bytes
// the GPUs moved per step, less the weights, give the context's.
func firstCost(num func(string) float64, promptMean, outputMean float64) (*sim.StepCost, bool, error) {
	itl := num("stage.itl.mean")
	if !(itl > 0) {
		itl = num("stage.tpot.mean")
	}
	if !(itl > 0) {
		return nil, false, fmt.Errorf("no time per output token (inter-token latency or TPOT)")
	}
	if itl < 100e-6 {
		return nil, false, fmt.Errorf("a mean time per output token of %.0f µs is faster than any engine steps: the latency histograms are not in seconds, or broken", itl*1e6)
	}
	prefill := num("stage.prefill.mean")
	if !(prefill > 0) {
		return nil, false, fmt.Errorf("no prefill time (stage.prefill)")
	}
	computed := num("cond.computed_prompt_tokens.mean")
	if !(computed > 0) {
		computed = promptMean
	}
	batch := math.Max(num("service.running.mean"), 1)
	ctx := promptMean + outputMean/2
	fixed := math.Min(0.002, 0.1*itl)
	memory := 0.5 * itl
	perCtx := -1.0
	if fl := num("stage.decode_floor"); fl > 0 {
		// Weights read at the bandwidth kernels reach.
		memory = fl / 0.85
		bw := num("resource.peak_bandwidth") * num("resource.gpus")
		perStep := num("resource.achieved_bandwidth") * num("resource.gpus") * num("cond.window_seconds") / num("service.iteration_tokens.count")
		if kv := (perStep - num("cond.weight_bytes")) / (batch * ctx); kv > 0 && !math.IsInf(kv, 0) && bw > 0 && !math.IsInf(bw, 0) {
			perCtx = kv / (bw * 0.85)
		}
	}
	memory = math.Min(memory, 0.85*itl-fixed)
	perToken := math.Max(prefill-itl, 0.1*itl) / computed
	measured := perCtx >= 0
	if !measured {
		perCtx = math.Max(itl-fixed-memory, 0) / (batch * ctx)
	}
	return &sim.StepCost{Fixed: fixed, Memory: memory, PerToken: perToken, PerContext: perCtx}, measured, nil
}

// fitCost replays sc and scales its step cost until the replay's mean
// inter-token and prefill times match the observed ones. The response is
// far from linear (a replay slightly too slow for its arrivals queues and
// batches more, which slows every step), so each round moves by a damped
// power of the miss, halved whenever a miss changes sign; the best round
// wins. It returns that round's evidence.
func fitCost(ctx context.Context, sc *sim.Scenario, f fitted, obs map[string]any, rounds int, o Options) (map[string]any, error) {
	floorKnown := evidence.TreeNumber(obs, "stage.decode_floor") > 0
	ctxMean := float64(sc.Workload.Prompt.Mean) + float64(sc.Workload.Output.Mean)/2
	wantITL := evidence.TreeNumber(obs, "stage.itl.mean")
	itlPath := "stage.itl.mean"
	if !(wantITL > 0) {
		wantITL, itlPath = evidence.TreeNumber(obs, "stage.tpot.mean"), "stage.tpot.mean"
	}
	wantPrefill := evidence.TreeNumber(obs, "stage.prefill.mean")
	var best map[string]any
	var bestCost sim.StepCost
	bestMiss := math.Inf(1)
	stepI, stepP := 1.0, 1.0
	lastI, lastP := 0.0, 0.0
	for round := 0; round < rounds; round++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rep, err := measure(ctx, sc, o)
		if err != nil {
			return nil, err
		}
		gotITL, gotPrefill := evidence.TreeNumber(rep, itlPath), evidence.TreeNumber(rep, "stage.prefill.mean")
		if !(gotITL > 0) || !(gotPrefill > 0) {
			return nil, fmt.Errorf("the replay finished no request")
		}
		mi, mp := math.Log(wantITL/gotITL), math.Log(wantPrefill/gotPrefill)
		if debug {
			fmt.Printf("round %d cost %+v itl %.4g/%.4g prefill %.4g/%.4g\n", round, *sc.Engine.Cost, gotITL, wantITL, gotPrefill, wantPrefill)
		}
		c := sc.Engine.Cost
		if miss := math.Max(math.Abs(mi), math.Abs(mp)); miss < bestMiss {
			best, bestCost, bestMiss = rep, *c, miss
		}
		if bestMiss < 0.02 {
			break
		}
		if mi*lastI < 0 {
			stepI /= 2
		}
		if mp*lastP < 0 {
			stepP /= 2
		}
		lastI, lastP = mi, mp
		// Prefill time is mostly per-token work. Inter-token time is the
		// weights read and the batch's context: with a decode floor the
		// weights' time is known, so the context takes the miss, and the
		// weights only what the context cannot give back.
		c.PerToken *= math.Exp(clamp(stepP*mp, -1.4, 1.4))
		if !floorKnown {
			c.Memory *= math.Exp(clamp(stepI*mi, -1.4, 1.4))
			c.PerContext *= math.Exp(clamp(stepI*mi, -1.4, 1.4))
			continue
		}
		batchCtx := math.Max(evidence.TreeNumber(rep, "service.running.mean"), 1) * ctxMean
		delta := stepI * (wantITL - gotITL)
		if f.contextMeasured {
			// The context's bytes were measured: the miss is CPU work.
			if fx := c.Fixed + delta; fx >= 0 {
				c.Fixed = fx
			} else {
				c.Fixed = 0
				c.Memory = math.Max(c.Memory+fx, 0.1*c.Memory)
			}
			continue
		}
		if pc := c.PerContext + delta/batchCtx; pc >= 0 {
			c.PerContext = pc
		} else {
			c.PerContext = 0
			c.Memory = math.Max(c.Memory+pc*batchCtx, 0.1*c.Memory)
		}
	}
	*sc.Engine.Cost = bestCost
	return best, nil
}

func clamp(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }

var debug = false

// candidate is one calibrated scenario and how well its replay fits.
type candidate struct {
	scenario *sim.Scenario
	fits     []Fit
	err      float64
	// words says which settings the search changed from the first guess,
	// tried how many variants it replayed.
	words string
	tried float64
}

// search fits the step cost to the first guess at the engine's settings
// and, while the replay misses, to the settings the metrics cannot show
// (chunked prefill off, a smaller token budget, bursty arrivals); the
// variant whose replay fits best wins.
func search(ctx context.Context, t *advisor.TargetReport, sc *sim.Scenario, f fitted, o Options) (candidate, error) {
	type variant struct {
		words string
		apply func(*sim.Scenario)
	}
	_, chunkAssumed := o.Assume["chunked_prefill"]
	_, budgetAssumed := o.Assume["max_num_batched_tokens"]
	engine := []variant{{"", func(*sim.Scenario) {}}}
	// The largest step seen bounds the token budget from below; with
	// chunking, steps fill the budget, so its bucket's upper bound (a power
	// of two, as budgets are) is the likeliest budget.
	largest := 0
	if b, ok := t.Resolution["service.iteration_tokens.max"]; ok && b[1] >= 256 && !math.IsInf(b[1], 0) {
		largest = int(b[1])
	}
	if !budgetAssumed && largest > 0 && largest != sc.Engine.MaxNumBatchedTokens {
		engine = append(engine, variant{fmt.Sprintf("max_num_batched_tokens %d, the bucket of the largest step seen", largest),
			func(s *sim.Scenario) { s.Engine.MaxNumBatchedTokens = largest }})
	}
	if !chunkAssumed {
		engine = append(engine, variant{"chunked prefill off", func(s *sim.Scenario) {
			s.Engine.ChunkedPrefill = false
			if !budgetAssumed {
				s.Engine.MaxNumBatchedTokens = max(s.Engine.MaxNumBatchedTokens, largest, 16384)
			}
		}})
	}
	if !budgetAssumed && largest == 0 && sc.Engine.MaxNumBatchedTokens > 2048 {
		engine = append(engine, variant{"max_num_batched_tokens 2048", func(s *sim.Scenario) { s.Engine.MaxNumBatchedTokens = 2048 }})
	}
	var best candidate
	try := func(v variant, from *sim.Scenario) error {
		s := *from
		s.Engine.Cost = new(sim.StepCost)
		*s.Engine.Cost = *from.Engine.Cost
		if best.scenario != nil {
			*s.Engine.Cost = *best.scenario.Engine.Cost
		}
		v.apply(&s)
		// A variant starts from the best cost so far: fewer rounds do.
		rounds := 8
		if best.scenario != nil {
			rounds = 5
		}
		rep, err := fitCost(ctx, &s, f, t.Evidence, rounds, o)
		if err != nil {
			return err
		}
		if f.growing {
			if rep, err = growingReplay(ctx, &s, rep, f, o); err != nil {
				return err
			}
		}
		fits, e := compareFigures(t, rep, f)
		best.tried++
		if best.scenario == nil || e < best.err {
			words := v.words
			if best.scenario != nil && best.words != "" && v.words != "" && from != sc {
				words = best.words + ", " + v.words
			}
			best = candidate{scenario: &s, fits: fits, err: e, words: words, tried: best.tried}
		}
		return nil
	}
	good := func() bool { return best.scenario != nil && best.err <= o.Tolerance/2 }
	for _, v := range engine {
		if err := try(v, sc); err != nil && best.scenario == nil {
			return best, err
		}
		if good() {
			break
		}
	}
	// A queue longer than Poisson arrivals give at this rate: burstier
	// arrivals, tried on the best engine settings.
	if !good() && !f.saturated && !f.growing && queuedLess(best.fits) {
		base := best.scenario
		for _, shape := range []float64{0.3, 0.1} {
			v := variant{fmt.Sprintf("bursty arrivals (gamma shape %.1f)", shape), func(s *sim.Scenario) {
				s.Workload.Arrival, s.Workload.BurstShape = "bursty", shape
			}}
			if err := try(v, base); err != nil {
				continue
			}
			if good() {
				break
			}
		}
	}
	if best.words != "" {
		best.words = "the replay fits best with " + best.words
	}
	return best, nil
}

// queuedLess reports whether a replay queued less than was observed.
func queuedLess(fits []Fit) bool {
	for _, f := range fits {
		if f.Name == "waiting_mean" || f.Name == "ttft_mean" {
			if f.Replayed < f.Observed {
				return true
			}
		}
	}
	return false
}

// growingReplay replays a window whose queue grew: arrivals at the closed
// loop's capacity plus the observed growth, from empty, warmed up until the
// queue had grown to the length the window began with.
func growingReplay(ctx context.Context, sc *sim.Scenario, closed map[string]any, f fitted, o Options) (map[string]any, error) {
	capacity := evidence.TreeNumber(closed, "service.request_rate")
	if !(capacity > 0) {
		return nil, fmt.Errorf("the replay finished no request")
	}
	open := *sc
	open.Workload.Concurrency = 0
	open.Workload.Rate = capacity + f.growth
	open.Warmup = time.Duration(clamp(f.firstWaiting/f.growth, 10, 3600) * float64(time.Second))
	return measure(ctx, &open, o)
}
