// Package sim is a discrete-event model of a vLLM V1-style continuous-batching
// engine in virtual time. It exposes vLLM's metric names, labels and buckets
// and DCGM-style GPU metrics derived from the same model, for the demo, the
// tests and anyone who wants a vLLM-like target without a GPU. Served in
// real time (Server with no Step), it also answers the OpenAI completions
// and chat completions API, streaming each token when the engine step that
// made it ends on the wall clock, so that a probe measures the engine as it
// would a real server; NoTraffic drops a scenario's own requests so that it
// serves only those. The diagnosis path never imports it.
package sim

import (
	"fmt"
	"sort"
	"strings"
)

// GPU is one accelerator's peaks.
type GPU struct {
	Name string
	// ModelName is how dcgm-exporter labels it.
	ModelName string
	MemBytes  float64
	// Bandwidth is peak HBM bandwidth in bytes/s, from NVIDIA's datasheets.
	Bandwidth float64
	// FLOPS is dense BF16 tensor peak.
	FLOPS float64
	// LinkBandwidth (bytes/s) and LinkLatency (s) price one all-reduce between
	// tensor-parallel GPUs: NVLink on SXM parts, PCIe on the others.
	LinkBandwidth, LinkLatency float64
}

// GPUs are the presets.
var GPUs = map[string]GPU{
	"A100-80GB": {"A100-80GB", "NVIDIA A100-SXM4-80GB", 80e9, 2.039e12, 312e12, 300e9, 10e-6},
	"H100-SXM":  {"H100-SXM", "NVIDIA H100 80GB HBM3", 80e9, 3.35e12, 989e12, 450e9, 8e-6},
	"H200":      {"H200", "NVIDIA H200", 141e9, 4.8e12, 989e12, 450e9, 8e-6},
	"L40S":      {"L40S", "NVIDIA L40S", 48e9, 864e9, 362e12, 25e9, 30e-6},
	"L4":        {"L4", "NVIDIA L4", 24e9, 300e9, 121e12, 12e9, 40e-6},
}

// Model is a transformer's shape, enough for bytes and FLOPs per step.
type Model struct {
	Name string
	// Served is the name vLLM reports as model_name.
	Served       string
	Params       float64
	ActiveParams float64
	// ExpertParams is the part of Params in routed experts (MoE only).
	ExpertParams  float64
	Experts       int
	ActiveExperts int
	Layers        int
	KVHeads       int
	HeadDim       int
	Hidden        int
	DTypeBytes    float64
}

// Models are the presets.
var Models = map[string]Model{
	"llama-8b": {Name: "llama-8b", Served: "meta-llama/Llama-3.1-8B-Instruct", Params: 8.03e9, ActiveParams: 8.03e9,
		Layers: 32, KVHeads: 8, HeadDim: 128, Hidden: 4096, DTypeBytes: 2},
	"llama-70b": {Name: "llama-70b", Served: "meta-llama/Llama-3.1-70B-Instruct", Params: 70.6e9, ActiveParams: 70.6e9,
		Layers: 80, KVHeads: 8, HeadDim: 128, Hidden: 8192, DTypeBytes: 2},
	"qwen-1.5b": {Name: "qwen-1.5b", Served: "Qwen/Qwen2.5-1.5B-Instruct", Params: 1.54e9, ActiveParams: 1.54e9,
		Layers: 28, KVHeads: 2, HeadDim: 128, Hidden: 1536, DTypeBytes: 2},
	// A Qwen3-30B-A3B-like MoE: 128 experts, 8 active per token.
	"moe-30b-a3b": {Name: "moe-30b-a3b", Served: "Qwen/Qwen3-30B-A3B", Params: 30.5e9, ActiveParams: 3.3e9,
		ExpertParams: 29e9, Experts: 128, ActiveExperts: 8, Layers: 48, KVHeads: 4, HeadDim: 128, Hidden: 2048, DTypeBytes: 2},
}

// KVBytesPerToken is the KV cache one token takes: K and V, every layer.
func (m Model) KVBytesPerToken() float64 {
	return 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * m.DTypeBytes
}

// WeightBytes is the size of all weights.
func (m Model) WeightBytes() float64 { return m.Params * m.DTypeBytes }

func names[T any](m map[string]T) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func lookupGPU(name string) (GPU, error) {
	g, ok := GPUs[name]
	if !ok {
		return GPU{}, fmt.Errorf("unknown GPU %q; known: %s", name, names(GPUs))
	}
	return g, nil
}

func lookupModel(name string) (Model, error) {
	m, ok := Models[name]
	if !ok {
		return Model{}, fmt.Errorf("unknown model %q; known: %s", name, names(Models))
	}
	return m, nil
}
