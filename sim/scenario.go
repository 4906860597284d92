package sim

import (
	"embed"
	"fmt"
	"io/fs"
	"math"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// Scenario is a named preset: hardware, model, engine settings and workload.
type Scenario struct {
	Name        string `yaml:"name,omitempty"`
	Description string `yaml:"description,omitempty"`
	// Expect is the primary bottleneck a diagnosis should find; Also lists
	// other acceptable ones (decode-bound may read as memory-bandwidth).
	Expect string   `yaml:"expect,omitempty"`
	Also   []string `yaml:"also,omitempty"`
	// Gaps are rules expected to lack evidence even here (the model's weight
	// size is unknown for a MoE, say).
	Gaps     []string      `yaml:"gaps,omitempty"`
	Model    string        `yaml:"model,omitempty"`
	GPU      string        `yaml:"gpu,omitempty"`
	TP       int           `yaml:"tp,omitempty"`
	Seed     int64         `yaml:"seed,omitempty"`
	Warmup   time.Duration `yaml:"warmup,omitempty"`
	Duration time.Duration `yaml:"duration,omitempty"`
	Engine   EngineConfig  `yaml:"engine,omitempty"`
	// Exposes is whose metric names the simulator serves: vllm (default)
	// or sglang.
	Exposes  string   `yaml:"exposes,omitempty"`
	Workload Workload `yaml:"workload,omitempty"`
	// Router, when set, serves the scenario from several replicas of the
	// engine behind a router.
	Router *Router `yaml:"router,omitempty"`
}

// Exposures are the engines whose metric names the simulator can serve.
var Exposures = []string{"vllm", "sglang"}

// EngineConfig mirrors the vLLM flags that shape scheduling.
type EngineConfig struct {
	MaxNumSeqs           int           `yaml:"max_num_seqs,omitempty"`
	MaxNumBatchedTokens  int           `yaml:"max_num_batched_tokens,omitempty"`
	ChunkedPrefill       bool          `yaml:"chunked_prefill,omitempty"`
	PrefixCaching        bool          `yaml:"prefix_caching,omitempty"`
	BlockSize            int           `yaml:"block_size,omitempty"`
	GPUMemoryUtilization float64       `yaml:"gpu_memory_utilization,omitempty"`
	KVCacheDTypeBytes    float64       `yaml:"kv_cache_dtype_bytes,omitempty"`
	StepOverhead         time.Duration `yaml:"step_overhead,omitempty"`
	// Front is the mean API-server time per request: HTTP, chat template,
	// tokenization, hand-off to the engine.
	Front time.Duration `yaml:"front,omitempty"`
	// FrontPerKToken adds tokenization time per thousand prompt tokens.
	FrontPerKToken time.Duration `yaml:"front_per_k_token,omitempty"`
	// Cost, when set, prices a step from fitted coefficients instead of the
	// model's shape and the GPU's peaks; GPUBlocks then gives the KV cache
	// size, and the model and GPU may be left out.
	Cost      *StepCost `yaml:"cost,omitempty"`
	GPUBlocks int       `yaml:"gpu_blocks,omitempty"`
	// Speculative, when set, runs speculative decoding.
	Speculative *Speculative `yaml:"speculative,omitempty"`
	// MaxLoRAs, when positive, serves LoRA adapters with this many slots:
	// the most distinct adapters the running batch may hold (vLLM's
	// --max-loras, SGLang's --max-loras-per-batch).
	MaxLoRAs int `yaml:"max_loras,omitempty"`
	// Disaggregated, when set, splits prefill and decode onto two
	// instances of these settings, as vLLM's NIXL connector runs them.
	Disaggregated *Disaggregation `yaml:"disaggregated,omitempty"`
}

// Disaggregation is prefill/decode disaggregation as vLLM's proxy and NIXL
// connector run it: a prefill instance computes each prompt (max_tokens 1),
// the proxy then hands the request to the decode instance, which pulls the
// prompt's KV cache over the transfer link before its scheduler can run it,
// and streams every token.
type Disaggregation struct {
	// TransferGBps is the link's bandwidth in GB/s per transfer.
	TransferGBps float64 `yaml:"transfer_gbps"`
	// TransferLatency is each transfer's fixed cost (handshake, posting
	// descriptors).
	TransferLatency time.Duration `yaml:"transfer_latency,omitempty"`
	// Handoff is the proxy's time between the prefill instance's answer
	// and the request reaching the decode instance.
	Handoff time.Duration `yaml:"handoff,omitempty"`
}

// Speculative is speculative decoding as vLLM's --speculative-config and
// SGLang's --speculative-* flags run it: each decode step drafts Tokens
// tokens per request and verifies them in one pass of the target model,
// which keeps the accepted run of drafts and one token of its own.
type Speculative struct {
	// Tokens drafted per request per step (num_speculative_tokens).
	Tokens int `yaml:"tokens"`
	// Acceptance is the chance each draft token is accepted, given the
	// ones before it were.
	Acceptance float64 `yaml:"acceptance"`
	// DraftCost is the time to draft one token as a share of the target
	// model's weight read: a small draft model, or an EAGLE/MTP head.
	DraftCost float64 `yaml:"draft_cost"`
}

// StepCost is a step's time from its work, in seconds, on the roofline the
// modelled cost follows: Fixed (CPU work) + the larger of the memory time,
// Memory (weights) + PerContext × context tokens read, and the compute
// time, PerToken × tokens computed. It is what a calibration fits to a
// deployment's observed times.
type StepCost struct {
	Fixed      float64 `yaml:"fixed"`
	Memory     float64 `yaml:"memory"`
	PerToken   float64 `yaml:"per_token"`
	PerContext float64 `yaml:"per_context"`
}

// Workload describes the requests.
type Workload struct {
	// Rate is the mean arrival rate in requests per second.
	Rate float64 `yaml:"rate,omitempty"`
	// Arrival is poisson (default) or bursty (gamma gaps with BurstShape < 1).
	Arrival    string  `yaml:"arrival,omitempty"`
	BurstShape float64 `yaml:"burst_shape,omitempty"`
	// Steps change the rate at given offsets from the start (after warm-up).
	Steps        []RateStep `yaml:"steps,omitempty"`
	Prompt       Length     `yaml:"prompt,omitempty"`
	Output       Length     `yaml:"output,omitempty"`
	Prefix       Prefix     `yaml:"prefix,omitempty"`
	UniquePrefix bool       `yaml:"unique_prefix,omitempty"`
	// Streaming is true unless set false (the client waits for the whole answer).
	Streaming *bool `yaml:"streaming,omitempty"`
	// ClientRTT is the network round trip between client and server.
	ClientRTT time.Duration `yaml:"client_rtt,omitempty"`
	// Concurrency, when positive, closes the loop instead of Rate: this many
	// requests are in the system from the start, and each one that finishes
	// is replaced at once, as a benchmark client with a fixed concurrency
	// sends them.
	Concurrency int `yaml:"concurrency,omitempty"`
	// External, when true, means the scenario has no traffic of its own:
	// the engine serves only the requests sent to its OpenAI-compatible API
	// (sim.Server in real time). Rate, Steps and Concurrency must then be
	// unset, and Prompt and Output are not used.
	External bool `yaml:"external,omitempty"`
	// Adapters, when positive, is how many LoRA adapters requests ask for,
	// the i-th (from 0) about 1/(i+1) as often as the first.
	Adapters int `yaml:"adapters,omitempty"`
}

// NoTraffic returns a copy of sc without traffic of its own: the same
// engine, GPU and model, its workload's rate, steps and concurrency dropped,
// for a server that answers only what it is sent.
func NoTraffic(sc *Scenario) *Scenario {
	out := *sc
	out.Workload.External = true
	out.Workload.Rate, out.Workload.Steps, out.Workload.Concurrency = 0, nil, 0
	return &out
}

// RateStep sets a new arrival rate from an offset on.
type RateStep struct {
	At   time.Duration `yaml:"at,omitempty"`
	Rate float64       `yaml:"rate,omitempty"`
}

// Prefix describes groups of requests that share a system prompt.
type Prefix struct {
	Groups int `yaml:"groups,omitempty"`
	Tokens int `yaml:"tokens,omitempty"`
	// Skew draws group i about 1/(i+1) as often as the first, instead of
	// every group alike: a few popular system prompts and a long tail.
	Skew bool `yaml:"skew,omitempty"`
}

// Length is a token-length distribution.
type Length struct {
	Dist  string   `yaml:"dist,omitempty"` // lognormal, fixed, mix
	Mean  float64  `yaml:"mean,omitempty"`
	Sigma float64  `yaml:"sigma,omitempty"`
	Value int      `yaml:"value,omitempty"`
	Min   int      `yaml:"min,omitempty"`
	Max   int      `yaml:"max,omitempty"`
	Parts []Weight `yaml:"parts,omitempty"`
}

// Weight is one part of a mixture.
type Weight struct {
	Weight float64 `yaml:"weight,omitempty"`
	Length `yaml:",inline"`
}

func (l Length) draw(r *rand.Rand) int {
	var x float64
	switch l.Dist {
	case "fixed":
		x = float64(l.Value)
	case "mix":
		var total float64
		for _, p := range l.Parts {
			total += p.Weight
		}
		u := r.Float64() * total
		for _, p := range l.Parts {
			if u -= p.Weight; u <= 0 {
				return l.clamp(p.Length.draw(r))
			}
		}
		return l.clamp(l.Parts[len(l.Parts)-1].Length.draw(r))
	default:
		mu := math.Log(l.Mean) - l.Sigma*l.Sigma/2
		x = math.Exp(mu + l.Sigma*r.NormFloat64())
	}
	return l.clamp(int(math.Round(x)))
}

func (l Length) clamp(n int) int {
	if n < max(1, l.Min) {
		n = max(1, l.Min)
	}
	if l.Max > 0 && n > l.Max {
		n = l.Max
	}
	return n
}

func (l Length) check(what string) error {
	switch l.Dist {
	case "fixed":
		if l.Value < 1 {
			return fmt.Errorf("%s: fixed needs value ≥ 1", what)
		}
	case "mix":
		if len(l.Parts) == 0 {
			return fmt.Errorf("%s: mix needs parts", what)
		}
		for i, p := range l.Parts {
			if p.Weight <= 0 {
				return fmt.Errorf("%s: part %d needs a positive weight", what, i+1)
			}
			if err := p.Length.check(fmt.Sprintf("%s part %d", what, i+1)); err != nil {
				return err
			}
		}
	case "lognormal", "":
		if l.Mean < 1 || l.Sigma < 0 {
			return fmt.Errorf("%s: lognormal needs mean ≥ 1 and sigma ≥ 0", what)
		}
	default:
		return fmt.Errorf("%s: unknown dist %q (lognormal, fixed, mix)", what, l.Dist)
	}
	return nil
}

func (s *Scenario) defaults() {
	if s.TP == 0 {
		s.TP = 1
	}
	if s.Duration == 0 {
		s.Duration = 15 * time.Minute
	}
	e := &s.Engine
	if e.MaxNumSeqs == 0 {
		e.MaxNumSeqs = 256
	}
	if e.MaxNumBatchedTokens == 0 {
		e.MaxNumBatchedTokens = 8192
	}
	if e.BlockSize == 0 {
		e.BlockSize = 16
	}
	if e.GPUMemoryUtilization == 0 {
		e.GPUMemoryUtilization = 0.9
	}
	if e.StepOverhead == 0 {
		e.StepOverhead = 2 * time.Millisecond
	}
	if e.Front == 0 {
		e.Front = 8 * time.Millisecond
	}
	if s.Workload.Arrival == "" {
		s.Workload.Arrival = "poisson"
	}
	if s.Workload.BurstShape == 0 {
		s.Workload.BurstShape = 1
	}
}

// Setup says what serves the scenario: "llama-8b on 1× H100-SXM", with
// "× 4 replicas behind a router" or "on prefill and decode instances".
func (s *Scenario) Setup() string {
	out := fmt.Sprintf("%s on %d× %s", s.Model, s.TP, s.GPU)
	switch {
	case s.Router != nil:
		out += fmt.Sprintf(", %d replicas behind a router", s.Router.Replicas)
	case s.Engine.Disaggregated != nil:
		out += ", prefill and decode instances"
	}
	return out
}

// CanExpose reports whether the simulator can serve the scenario under the
// engine's names: every engine it knows, every scenario.
func (s *Scenario) CanExpose(engine string) bool { return slices.Contains(Exposures, engine) }

// Check validates a scenario after defaults.
func (s *Scenario) Check() error {
	s.defaults()
	if s.Name == "" {
		return fmt.Errorf("scenario has no name")
	}
	if c := s.Engine.Cost; c != nil {
		if !(c.Fixed >= 0) || !(c.Memory >= 0) || !(c.PerToken >= 0) || !(c.PerContext >= 0) ||
			!(c.Fixed+c.Memory > 0) || math.IsInf(c.Fixed+c.Memory+c.PerToken+c.PerContext, 0) {
			return fmt.Errorf("scenario %s: engine.cost needs finite fixed, memory, per_token, per_context ≥ 0, fixed + memory > 0", s.Name)
		}
		if s.Engine.GPUBlocks < 16 {
			return fmt.Errorf("scenario %s: engine.cost needs engine.gpu_blocks ≥ 16", s.Name)
		}
	} else {
		if _, err := lookupGPU(s.GPU); err != nil {
			return fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		if _, err := lookupModel(s.Model); err != nil {
			return fmt.Errorf("scenario %s: %w", s.Name, err)
		}
	}
	if s.Workload.Concurrency < 0 {
		return fmt.Errorf("scenario %s: workload.concurrency must not be negative", s.Name)
	}
	if s.Exposes != "" && !slices.Contains(Exposures, s.Exposes) {
		return fmt.Errorf("scenario %s: exposes %q (%s)", s.Name, s.Exposes, strings.Join(Exposures, " or "))
	}
	if s.Workload.External {
		if s.Workload.Rate != 0 || len(s.Workload.Steps) > 0 || s.Workload.Concurrency != 0 {
			return fmt.Errorf("scenario %s: workload.external has no traffic of its own: leave out rate, steps and concurrency", s.Name)
		}
	} else if err := s.checkTraffic(); err != nil {
		return err
	}
	if sp := s.Engine.Speculative; sp != nil && (sp.Tokens < 1 || sp.Tokens > 16 || !(sp.Acceptance >= 0 && sp.Acceptance <= 1) ||
		!(sp.DraftCost >= 0 && sp.DraftCost <= 1)) {
		return fmt.Errorf("scenario %s: engine.speculative needs tokens 1 to 16, acceptance and draft_cost 0 to 1", s.Name)
	}
	if s.Workload.Adapters < 0 || s.Engine.MaxLoRAs < 0 || s.Workload.Adapters > 0 && s.Engine.MaxLoRAs == 0 {
		return fmt.Errorf("scenario %s: workload.adapters needs engine.max_loras of 1 or more", s.Name)
	}
	if r := s.Router; r != nil {
		if err := r.check(s.Name); err != nil {
			return err
		}
		if s.Engine.Disaggregated != nil || s.Workload.External || s.Workload.Concurrency > 0 {
			return fmt.Errorf("scenario %s: router runs open-loop traffic of its own over plain replicas: leave out engine.disaggregated, workload.external and concurrency", s.Name)
		}
	}
	if d := s.Engine.Disaggregated; d != nil {
		switch {
		case !(d.TransferGBps > 0) || math.IsInf(d.TransferGBps, 0) || d.TransferLatency < 0 || d.Handoff < 0:
			return fmt.Errorf("scenario %s: engine.disaggregated needs transfer_gbps > 0 and transfer_latency, handoff ≥ 0", s.Name)
		case s.Workload.External || s.Workload.Concurrency > 0:
			return fmt.Errorf("scenario %s: engine.disaggregated runs open-loop traffic of its own: leave out workload.external and concurrency", s.Name)
		}
	}
	if s.Engine.MaxNumSeqs < 1 || s.Engine.MaxNumBatchedTokens < 1 || s.Engine.BlockSize < 1 {
		return fmt.Errorf("scenario %s: engine limits must be positive", s.Name)
	}
	return nil
}

// checkTraffic validates the scenario's own traffic.
func (s *Scenario) checkTraffic() error {
	if s.Workload.Rate <= 0 && s.Workload.Concurrency <= 0 {
		return fmt.Errorf("scenario %s: workload.rate must be positive (or workload.concurrency given, or workload.external set)", s.Name)
	}
	if a := s.Workload.Arrival; a != "poisson" && a != "bursty" {
		return fmt.Errorf("scenario %s: workload.arrival %q (poisson or bursty)", s.Name, a)
	}
	if err := s.Workload.Prompt.check("prompt"); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	if err := s.Workload.Output.check("output"); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return nil
}

//go:embed scenarios/*.yaml
var builtinScenarios embed.FS

// ParseScenario reads one scenario file.
func ParseScenario(name string, data []byte) (*Scenario, error) {
	var s Scenario
	if err := yaml.UnmarshalWithOptions(data, &s, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.Join(strings.Fields(yaml.FormatError(err, false, false)), " "))
	}
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// Scenarios lists the built-in scenarios, sorted by name.
func Scenarios() ([]*Scenario, error) {
	entries, err := fs.Glob(builtinScenarios, "scenarios/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, p := range entries {
		data, _ := builtinScenarios.ReadFile(p)
		s, err := ParseScenario(p, data)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Load finds a built-in scenario by name, or reads a scenario file.
func Load(nameOrFile string) (*Scenario, error) {
	if strings.HasSuffix(nameOrFile, ".yaml") || strings.HasSuffix(nameOrFile, ".yml") {
		data, err := os.ReadFile(nameOrFile)
		if err != nil {
			return nil, err
		}
		return ParseScenario(nameOrFile, data)
	}
	all, err := Scenarios()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, s := range all {
		if s.Name == nameOrFile {
			return s, nil
		}
		have = append(have, s.Name)
	}
	return nil, fmt.Errorf("no scenario %q (have %s, or give a .yaml file)", nameOrFile, strings.Join(have, ", "))
}
