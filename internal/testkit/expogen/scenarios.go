package expogen

import (
	"math"
	"math/rand"
)

func lognormal(r *rand.Rand, mean, sigma float64) float64 {
	mu := math.Log(mean) - sigma*sigma/2
	return math.Exp(mu + sigma*r.NormFloat64())
}

func steps(r *rand.Rand, n int, tpot, jitter float64) []float64 {
	if n < 2 {
		return nil
	}
	out := make([]float64, n-1)
	for i := range out {
		out[i] = tpot * (1 + jitter*(r.Float64()-0.5))
	}
	return out
}

const model8B = "meta-llama/Llama-3.1-8B-Instruct"

// Scenarios are the example windows shipped under examples/, 15 minutes each.
var Scenarios = []Scenario{
	{
		// 12 req/s against max_num_seqs=256: the batch is pinned, hundreds wait,
		// KV has room.
		Name: "queueing", Model: model8B, Seed: 1, Warm: 4000, Window: 10800,
		Draw: func(r *rand.Rand) Req {
			p := int(lognormal(r, 1000, 0.6))
			o := int(lognormal(r, 250, 0.5)) + 2
			return Req{Prompt: p, Output: o, Front: 0.015 + 0.01*r.Float64(),
				Queue: r.ExpFloat64() * 1.8, Prefill: 0.05 + float64(p)/12000,
				Steps: steps(r, o, 0.028, 0.4)}
		},
		Start: Gauges{Running: 256, Waiting: 280, KV: 0.58}, End: Gauges{Running: 256, Waiting: 312, KV: 0.61},
		BlockSize: 16, GPUBlocks: 27000, PrefixCache: true,
	},
	{
		// Retrieval-style prompts of ~12k tokens at 1 req/s.
		Name: "prefill", Model: model8B, Seed: 2, Warm: 300, Window: 900,
		Draw: func(r *rand.Rand) Req {
			p := int(lognormal(r, 12000, 0.5))
			o := int(lognormal(r, 200, 0.4)) + 2
			return Req{Prompt: p, Output: o, Front: 0.02, Queue: r.ExpFloat64() * 0.08,
				Prefill: float64(p) / 9000, Steps: steps(r, o, 0.03, 0.3)}
		},
		Start: Gauges{Running: 18, Waiting: 0, KV: 0.52}, End: Gauges{Running: 22, Waiting: 1, KV: 0.55},
		BlockSize: 16, GPUBlocks: 27000, PrefixCache: false,
	},
	{
		// Long conversations fill the KV cache: preemptions, waiting, a shrunken batch.
		Name: "kv-capacity", Model: model8B, Seed: 3, Warm: 1500, Window: 3200,
		Draw: func(r *rand.Rand) Req {
			p := int(lognormal(r, 3000, 0.5))
			o := int(lognormal(r, 800, 0.4)) + 2
			return Req{Prompt: p, Output: o, Front: 0.02, Queue: r.ExpFloat64() * 2.5,
				Prefill: 0.05 + float64(p)/12000, Steps: steps(r, o, 0.035, 0.6)}
		},
		Start: Gauges{Running: 84, Waiting: 38, KV: 0.98}, End: Gauges{Running: 61, Waiting: 57, KV: 0.99},
		Preemptions: [2]float64{250, 910},
		BlockSize:   16, GPUBlocks: 9000, PrefixCache: true,
	},
	{
		// A 70B model on bandwidth-poor GPUs: every token is slow.
		Name: "decode", Model: "meta-llama/Llama-3.1-70B-Instruct", Seed: 4, Warm: 200, Window: 700,
		Draw: func(r *rand.Rand) Req {
			p := int(lognormal(r, 500, 0.5))
			o := int(lognormal(r, 600, 0.4)) + 2
			return Req{Prompt: p, Output: o, Front: 0.02, Queue: r.ExpFloat64() * 0.05,
				Prefill: 0.1 + float64(p)/3000, Steps: steps(r, o, 0.16, 0.3)}
		},
		Start: Gauges{Running: 62, Waiting: 0, KV: 0.7}, End: Gauges{Running: 64, Waiting: 0, KV: 0.72},
		BlockSize: 16, GPUBlocks: 12000, PrefixCache: true,
	},
	{
		// A comfortable chat service.
		Name: "healthy", Model: model8B, Seed: 5, Warm: 1000, Window: 2700,
		Draw: func(r *rand.Rand) Req {
			p := int(lognormal(r, 800, 0.6))
			o := int(lognormal(r, 200, 0.5)) + 2
			return Req{Prompt: p, Output: o, Front: 0.01, Queue: r.ExpFloat64() * 0.004,
				Prefill: 0.02 + float64(p)/15000, Steps: steps(r, o, 0.02, 0.3), Cached: p / 2}
		},
		Start: Gauges{Running: 21, Waiting: 0, KV: 0.18}, End: Gauges{Running: 26, Waiting: 0, KV: 0.21},
		BlockSize: 16, GPUBlocks: 27000, PrefixCache: true,
	},
	{
		// Long-context requests of ~25k tokens with the batch capped at 12:
		// running sits at its cap and a request or two waits at each end, yet
		// queue wait is 2% of TTFT and prefill 98%. Prefix caching is on and
		// reuses almost nothing (the prompts share no prefix).
		Name: "long-context", Model: model8B, Seed: 6, Warm: 300, Window: 950,
		Draw: func(r *rand.Rand) Req {
			p := int(lognormal(r, 25000, 0.08))
			o := int(lognormal(r, 200, 0.4)) + 2
			return Req{Prompt: p, Output: o, Front: 0.01, Queue: r.ExpFloat64() * 0.059,
				Prefill: float64(p) / 8600, Steps: steps(r, o, 0.04, 0.3), Cached: int(r.Float64() * 300)}
		},
		Start: Gauges{Running: 12, Waiting: 1, KV: 0.7}, End: Gauges{Running: 12, Waiting: 2, KV: 0.71},
		BlockSize: 16, GPUBlocks: 27000, PrefixCache: true,
	},
	{
		// A fast chat service: TTFT ~60 ms, nothing waits, KV nearly empty.
		Name: "fast-chat", Model: model8B, Seed: 7, Warm: 500, Window: 1800,
		Draw: func(r *rand.Rand) Req {
			p := int(lognormal(r, 400, 0.5))
			o := int(lognormal(r, 120, 0.5)) + 2
			return Req{Prompt: p, Output: o, Front: 0.008 + 0.004*r.Float64(), Queue: r.ExpFloat64() * 0.002,
				Prefill: 0.035 + float64(p)/40000, Steps: steps(r, o, 0.015, 0.3)}
		},
		Start: Gauges{Running: 4, Waiting: 0, KV: 0.02}, End: Gauges{Running: 3, Waiting: 0, KV: 0.03},
		BlockSize: 16, GPUBlocks: 27000, PrefixCache: true,
	},
}

// Example is one example directory: a scenario in a vintage.
type Example struct {
	Dir      string
	Scenario string
	Version  Version
}

// Examples lists the example directories under examples/.
var Examples = []Example{
	{"queueing", "queueing", V1},
	{"prefill", "prefill", V1},
	{"kv-capacity", "kv-capacity", V1},
	{"decode", "decode", V1},
	{"healthy", "healthy", V1},
	{"v0.10-kv-capacity", "kv-capacity", V010},
	{"v0-healthy", "healthy", V0},
	{"long-context", "long-context", V1},
	{"no-queue-metrics", "fast-chat", V1NoQueue},
	{"ttft-excludes-queue", "queueing", V1TTFTNoQueue},
}

// ByName finds a scenario.
func ByName(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// Files returns the example files by path relative to the examples folder.
func Files() map[string]string {
	out := map[string]string{}
	for _, e := range Examples {
		sc, _ := ByName(e.Scenario)
		start, end := Snapshots(sc, e.Version)
		out[e.Dir+"/start.prom"] = start
		out[e.Dir+"/end.prom"] = end
	}
	return out
}
