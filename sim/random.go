package sim

import (
	"fmt"
	"math"
	"math/rand"
	"time"

	"github.com/goccy/go-yaml"
)

// RandomScenario draws a scenario across the simulator's space: workload
// shape, load relative to what the engine can serve (light to overloaded),
// arrivals, engine limits, prefix reuse, model, GPU and tensor parallelism,
// API-server and step overheads. Every draw passes Check and fits in memory.
// The window is kept short (a few hundred requests) so hundreds run in seconds.
func RandomScenario(r *rand.Rand, i int) *Scenario {
	for {
		if sc := drawScenario(r, i); sc != nil {
			return sc
		}
	}
}

// pick returns one of xs with the given weights.
func pick[T any](r *rand.Rand, xs []T, weights ...float64) T {
	var total float64
	for _, w := range weights {
		total += w
	}
	u := r.Float64() * total
	for k, w := range weights {
		if u -= w; u < 0 {
			return xs[k]
		}
	}
	return xs[len(xs)-1]
}

// between draws uniformly on a log scale between lo and hi.
func between(r *rand.Rand, lo, hi float64) float64 {
	return lo * math.Exp(r.Float64()*math.Log(hi/lo))
}

func drawScenario(r *rand.Rand, i int) *Scenario {
	sc := &Scenario{Seed: r.Int63n(1 << 30)}
	w := &sc.Workload
	lognormal := func(mean, sigma float64, lo, hi int) Length {
		return Length{Dist: "lognormal", Mean: math.Round(mean), Sigma: math.Round(sigma*100) / 100, Min: lo, Max: hi}
	}
	shape := pick(r, []string{"chat", "short", "long-output", "rag", "chat+docs", "shared-prefix"}, 26, 10, 20, 14, 13, 17)
	switch shape {
	case "chat":
		w.Prompt = lognormal(between(r, 200, 2000), 0.4+0.5*r.Float64(), 0, 8000)
		w.Output = lognormal(between(r, 80, 500), 0.3+0.4*r.Float64(), 0, 2000)
	case "short":
		w.Prompt = lognormal(between(r, 40, 400), 0.3+0.5*r.Float64(), 0, 2000)
		w.Output = lognormal(between(r, 4, 60), 0.3+0.5*r.Float64(), 0, 400)
	case "long-output":
		w.Prompt = lognormal(between(r, 200, 3000), 0.4+0.4*r.Float64(), 0, 12000)
		w.Output = lognormal(between(r, 700, 3000), 0.3+0.3*r.Float64(), 0, 8000)
	case "rag":
		w.Prompt = lognormal(between(r, 4000, 24000), 0.2+0.3*r.Float64(), 1000, 30000)
		w.Output = lognormal(between(r, 50, 400), 0.3+0.3*r.Float64(), 0, 1500)
	case "chat+docs":
		long := 0.03 + 0.15*r.Float64()
		w.Prompt = Length{Dist: "mix", Parts: []Weight{
			{Weight: math.Round((1-long)*100) / 100, Length: lognormal(between(r, 200, 1500), 0.5, 0, 4000)},
			{Weight: math.Round(long*100) / 100, Length: lognormal(between(r, 6000, 20000), 0.3, 2000, 30000)},
		}}
		w.Output = lognormal(between(r, 100, 500), 0.4+0.2*r.Float64(), 0, 2000)
	case "shared-prefix":
		w.Prompt = lognormal(between(r, 1500, 9000), 0.15+0.3*r.Float64(), 500, 16000)
		w.Output = lognormal(between(r, 60, 500), 0.3+0.4*r.Float64(), 0, 2000)
		w.Prefix = Prefix{Groups: pick(r, []int{1, 2, 4, 8, 16}, 3, 2, 2, 1, 1), Tokens: int(w.Prompt.Mean * (0.4 + 0.5*r.Float64()))}
		w.UniquePrefix = r.Float64() < 0.3
	}
	if shape != "shared-prefix" && r.Float64() < 0.5 {
		w.Prefix = Prefix{Groups: 1 + r.Intn(8), Tokens: int(between(r, 100, 1500))}
		w.UniquePrefix = r.Float64() < 0.1
	}

	slow := 1.0
	if shape == "long-output" {
		slow = 2 // long answers from big models on slow memory: where decode is the problem
	}
	sc.Model = pick(r, []string{"qwen-1.5b", "llama-8b", "llama-70b", "moe-30b-a3b"}, 2, 4, 2.5*slow, 1.5)
	sc.GPU = pick(r, []string{"A100-80GB", "H100-SXM", "H200", "L40S", "L4"}, 1, 1, 0.6, 1.1*slow, 1.5*slow)
	e := &sc.Engine
	e.GPUMemoryUtilization = math.Round((0.75+0.2*r.Float64())*100) / 100
	if r.Float64() < 0.15 {
		e.KVCacheDTypeBytes = 1 // fp8 KV cache
	}
	e.MaxNumSeqs = pick(r, []int{8, 16, 32, 64, 128, 256, 512}, 1, 1.5, 2, 2, 2, 2, 1)
	e.ChunkedPrefill = r.Float64() < 0.75
	if e.ChunkedPrefill {
		e.MaxNumBatchedTokens = pick(r, []int{1024, 2048, 4096, 8192, 16384}, 1, 1.5, 2, 3, 1)
	} else {
		e.MaxNumBatchedTokens = pick(r, []int{8192, 16384, 32768}, 1, 1, 2)
	}
	e.PrefixCaching = r.Float64() < 0.8
	e.StepOverhead = time.Duration(between(r, 10, 80)) * 100 * time.Microsecond
	if r.Float64() < 0.1 {
		e.StepOverhead = time.Duration(between(r, 10, 40)) * time.Millisecond
	}
	e.Front = time.Duration(between(r, 3, 20)) * time.Millisecond
	if r.Float64() < 0.15 {
		e.Front = time.Duration(between(r, 30, 200)) * time.Millisecond
		e.FrontPerKToken = time.Duration(between(r, 2, 40)) * time.Millisecond
	}
	if !sc.fitTP(r) {
		return nil
	}

	// Load relative to a rough capacity estimate: from light to overloaded.
	rho := pick(r, []float64{between(r, 0.1, 0.5), between(r, 0.5, 0.9), between(r, 0.9, 1.3), between(r, 1.3, 3)}, 35, 30, 20, 15)
	w.Rate = roundTo(rho*sc.capacity(), 3)
	if w.Rate < 0.1 || w.Rate > 60 {
		// Too few requests for a window of half an hour, or so many that
		// one scenario would take seconds to simulate.
		return nil
	}
	if r.Float64() < 0.3 {
		w.Arrival, w.BurstShape = "bursty", roundTo(between(r, 0.05, 0.5), 2)
	}
	// A few hundred requests in the window, at least a minute and a half.
	window := math.Min(1800, math.Max(90, 300/w.Rate))
	sc.Duration = time.Duration(math.Ceil(window/30)) * 30 * time.Second
	sc.Warmup = time.Duration(60+30*r.Intn(3)) * time.Second
	sc.Name = fmt.Sprintf("random-%03d", i)
	sc.Description = fmt.Sprintf("%s workload at %.0f%% of estimated capacity", shape, 100*rho)
	if err := sc.Check(); err != nil {
		return nil
	}
	return sc
}

// SpeculationShare is the share of random scenarios Speculate gives
// speculative decoding.
const SpeculationShare = 0.2

// Speculate gives a share of random scenarios speculative decoding: 1 to 6
// draft tokens, each accepted with a chance of 10% to 90% after the one
// before, drafting at 2% to 15% of a weight read per token. It draws from
// the scenario's own seed, so every other part is as RandomScenario drew it.
func Speculate(sc *Scenario, share float64) {
	r := rand.New(rand.NewSource(sc.Seed ^ 0x5bec))
	if r.Float64() >= share {
		return
	}
	sc.Engine.Speculative = &Speculative{Tokens: 1 + r.Intn(6), Acceptance: math.Round((0.1+0.8*r.Float64())*100) / 100,
		DraftCost: roundTo(between(r, 0.02, 0.15), 2)}
	sc.Description += fmt.Sprintf(", speculating %d tokens", sc.Engine.Speculative.Tokens)
}

// Shares of random scenarios served behind a router (Route) and with
// prefill and decode on separate instances (Disaggregate).
const (
	RouterShare        = 0.1
	DisaggregatedShare = 0.1
)

// ServeAdapters serves LoRA adapters in a share of random scenarios (not yet
// in the accuracy sets: see docs/accuracy.md): 2 to
// 16 adapters, a few popular and a long tail, with 1 to 4 adapter slots,
// fewer than the adapters, on one plain server (no router, prefill and
// decode together). It draws from the scenario's own seed.
func ServeAdapters(sc *Scenario, share float64) {
	r := rand.New(rand.NewSource(sc.Seed ^ 0x10ba))
	if r.Float64() >= share || sc.Router != nil || sc.Engine.Disaggregated != nil {
		return
	}
	n := 2 + r.Intn(15)
	sc.Workload.Adapters = n
	sc.Engine.MaxLoRAs = min(n-1, 1+r.Intn(4))
	sc.Description += fmt.Sprintf(", %d LoRA adapters in %d slots", n, sc.Engine.MaxLoRAs)
}

// Route puts a share of random scenarios behind a router: 2 or 3 replicas,
// each given the traffic the scenario drew for one (the rate multiplied),
// picked by prefix affinity (half of them, the shared prompts' popularity
// skewed or not), round robin or the shortest queue. It draws from the
// scenario's own seed, as Speculate does; a split deployment is left as it is.
func Route(sc *Scenario, share float64) {
	r := rand.New(rand.NewSource(sc.Seed ^ 0x7247))
	if r.Float64() >= share || sc.Engine.Disaggregated != nil || sc.Workload.Concurrency > 0 {
		return
	}
	n := 2 + r.Intn(2)
	policy := pick(r, RouterPolicies, 1, 1, 2)
	if sc.Workload.Rate*float64(n) > 60 {
		return // too many requests to simulate quickly
	}
	sc.Router = &Router{Replicas: n, Policy: policy}
	sc.Workload.Rate = roundTo(sc.Workload.Rate*float64(n), 3)
	if policy == "prefix" && sc.Workload.Prefix.Groups > 0 && r.Float64() < 0.5 {
		sc.Workload.Prefix.Skew = true
	}
	sc.Description += fmt.Sprintf(", %d replicas behind a %s router", n, policy)
}

// Disaggregate splits prefill and decode onto two instances in a share of
// random scenarios: a KV link of 1 to 50 GB/s (TCP to RDMA) with 1 to 10 ms
// per transfer. It draws from the scenario's own seed.
func Disaggregate(sc *Scenario, share float64) {
	r := rand.New(rand.NewSource(sc.Seed ^ 0xd15a))
	if r.Float64() >= share || sc.Router != nil || sc.Workload.Concurrency > 0 {
		return
	}
	gbps := roundTo(between(r, 1, 50), 2)
	sc.Engine.Disaggregated = &Disaggregation{TransferGBps: gbps, TransferLatency: time.Duration(between(r, 1, 10)) * time.Millisecond}
	sc.Description += fmt.Sprintf(", prefill and decode apart over %.3g GB/s", gbps)
}

func roundTo(x float64, digits int) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// fitTP picks the smallest tensor parallelism whose KV cache holds a few of
// the longest requests, sometimes one step more; false when none does.
func (sc *Scenario) fitTP(r *rand.Rand) bool {
	longest := float64(min(maxModelLen, sc.Workload.Prompt.upper()+sc.Workload.Output.upper()))
	need := math.Max(16384, 2*longest)
	tps := []int{1, 2, 4, 8}
	for k, tp := range tps {
		sc.TP = tp
		if sc.kvTokens() >= need {
			if k+1 < len(tps) && r.Float64() < 0.25 {
				sc.TP = tps[k+1]
			}
			return true
		}
	}
	return false
}

// upper is the largest length a distribution draws.
func (l Length) upper() int {
	switch l.Dist {
	case "fixed":
		return l.clamp(l.Value)
	case "mix":
		u := 0
		for _, p := range l.Parts {
			u = max(u, p.Length.upper())
		}
		return l.clamp(u)
	}
	if l.Max > 0 {
		return l.Max
	}
	return int(l.Mean * math.Exp(3*l.Sigma))
}

// mean is a distribution's mean, before clamping.
func (l Length) mean() float64 {
	switch l.Dist {
	case "fixed":
		return float64(l.Value)
	case "mix":
		var s, t float64
		for _, p := range l.Parts {
			s += p.Weight * p.Length.mean()
			t += p.Weight
		}
		return s / t
	}
	return l.Mean
}

// kvTokens is the KV cache size in tokens, as New computes it.
func (sc *Scenario) kvTokens() float64 {
	sc.defaults()
	gpu, err1 := lookupGPU(sc.GPU)
	m, err2 := lookupModel(sc.Model)
	if err1 != nil || err2 != nil {
		return 0
	}
	kv := m.KVBytesPerToken()
	if b := sc.Engine.KVCacheDTypeBytes; b > 0 {
		kv *= b / m.DTypeBytes
	}
	free := gpu.MemBytes*float64(sc.TP)*sc.Engine.GPUMemoryUtilization - m.WeightBytes()
	bs := float64(sc.Engine.BlockSize)
	return math.Max(0, math.Floor(free/(kv*bs))*bs)
}

// capacity roughly estimates the requests per second the engine finishes
// when saturated: each request's prefill FLOPs, plus its share of decode
// steps at the batch the limits and the KV cache allow.
func (sc *Scenario) capacity() float64 {
	gpu, _ := lookupGPU(sc.GPU)
	m, _ := lookupModel(sc.Model)
	w := sc.Workload
	prompt, output := w.Prompt.mean(), w.Output.mean()
	fresh := prompt
	if sc.Engine.PrefixCaching && !w.UniquePrefix && w.Prefix.Groups > 0 {
		fresh -= math.Min(float64(w.Prefix.Tokens), prompt) * 0.9
	}
	tp := float64(sc.TP)
	compute := gpu.FLOPS * tp * computeEfficiency
	prefill := (2*m.ActiveParams*fresh + 4*float64(m.Layers*m.Hidden)*fresh*prompt/2) / compute
	kv := m.KVBytesPerToken()
	if b := sc.Engine.KVCacheDTypeBytes; b > 0 {
		kv *= b / m.DTypeBytes
	}
	ctx := prompt + output/2
	batch := math.Max(1, math.Min(float64(sc.Engine.MaxNumSeqs), 0.9*sc.kvTokens()/(prompt+output)))
	weights := m.WeightBytes()
	if m.Experts > 0 {
		touched := 1 - math.Pow(1-float64(m.ActiveExperts)/float64(m.Experts), batch)
		weights = (m.Params-m.ExpertParams)*m.DTypeBytes + m.ExpertParams*m.DTypeBytes*touched
	}
	mem := (weights + batch*ctx*kv) / (gpu.Bandwidth * tp * bandwidthEfficiency)
	cmp := (2*m.ActiveParams*batch + 4*float64(m.Layers*m.Hidden)*batch*ctx) / compute
	step := math.Max(mem, cmp) + sc.Engine.StepOverhead.Seconds()
	if sc.TP > 1 {
		step += 2 * float64(m.Layers) * gpu.LinkLatency
	}
	return 1 / (prefill + step*output/batch)
}

// YAML writes the scenario as a file that Load (and demo --scenario) reads back.
func (s *Scenario) YAML() ([]byte, error) { return yaml.Marshal(s) }
