// Package engine is the seam between serving engines and the rest of
// llmdoctor. Each engine (vLLM, SGLang) registers a catalogue: the metric
// families it exposes under canonical keys, how a user obtains each evidence
// field and the flag behind each knob a next step names. Transports (scrape,
// Prometheus) read the kinds of the registered families; the builder turns a
// window of any registered engine into evidence.
package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// Kind is how a metric is exposed.
type Kind int

// Metric kinds.
const (
	Counter Kind = iota
	Gauge
	Histogram
	Info
)

func (k Kind) String() string {
	return [...]string{"counter", "gauge", "histogram", "info"}[k]
}

// Metric is one concept with every name an engine has exposed it under.
type Metric struct {
	// Key is the canonical concept (TTFT, Running…), shared by engines.
	Key string
	// Names are exposed family names, newest first: when a server exposes
	// several, the first present wins.
	Names []string
	Kind  Kind
	Unit  string
	// Meaning says what one observation is in this engine.
	Meaning string
	// Obtain tells a user how to get the metric when it is missing.
	Obtain string
	// Match narrows the family to series carrying these label/value pairs
	// (SGLang's per-stage histogram holds prefill under stage="prefill_forward").
	Match []string
	// Exclude leaves out series carrying these label/value pairs (SGLang's
	// non-streaming requests in TTFT).
	Exclude []string
	// Keep are labels a Prometheus query must keep (finished_reason).
	Keep []string
	// Sentinels are values that mean "no number" (V0's -1 hit rate).
	Sentinels []float64
	// Scale turns an observation into the evidence's base unit (0: as it
	// is): 0.001 for SGLang's milliseconds.
	Scale float64
	// PerToken marks an inter-token histogram observed once per token, not
	// once per step (SGLang divides a chunk's gap over its tokens): with
	// several tokens per step a frozen step counts several times.
	PerToken bool
}

// Ratio reports gauges that are shares (KV usage, hit rates): averaged
// across engines and instances, where counts are summed.
func (m Metric) Ratio() bool {
	return m.Key == KVUsage || m.Key == PrefixHitGauge || m.Key == CPUKVUsage || m.Key == SpecAcceptLength || m.Key == SpecAcceptRate
}

// Canonical keys. An engine maps the ones it exposes; the builder reads
// the rest as absent.
const (
	TTFT            = "ttft"
	QueueTime       = "queue_time"
	PrefillTime     = "prefill_time"
	DecodeTime      = "decode_time"
	InferenceTime   = "inference_time"
	StepLatency     = "step_latency"
	RequestTPOT     = "request_tpot"
	E2E             = "e2e"
	PromptLen       = "prompt_len"
	GenerationLen   = "generation_len"
	ComputedPrompt  = "computed_prompt_len"
	MaxTokens       = "max_tokens"
	IterationTokens = "iteration_tokens"
	PromptTokens    = "prompt_tokens"
	GenTokens       = "generation_tokens"
	Preemptions     = "preemptions"
	// RequestSuccess counts finished requests; Metric.Keep names the label
	// holding the finish reason when the engine has one.
	RequestSuccess = "request_success"
	// RequestAborts counts aborted requests where the engine counts them
	// apart from RequestSuccess.
	RequestAborts   = "request_aborts"
	PrefixQueries   = "prefix_queries"
	PrefixHits      = "prefix_hits"
	PrefixHitGauge  = "prefix_hit_rate_gauge"
	Running         = "running"
	Waiting         = "waiting"
	WaitingByReason = "waiting_by_reason"
	KVUsage         = "kv_usage"
	// Swapped and CPUKVUsage are V0 vLLM's: requests whose KV blocks were
	// swapped to CPU memory under KV pressure, and the share of that swap
	// space in use.
	Swapped    = "swapped"
	CPUKVUsage = "cpu_kv_usage"
	// CacheConfig is an info family whose labels hold block_size,
	// num_gpu_blocks, enable_prefix_caching and gpu_memory_utilization.
	CacheConfig = "cache_config"
	// KVCapacity and PageSize are gauges an engine without CacheConfig
	// exposes instead (SGLang's max_total_num_tokens and page_size).
	KVCapacity = "kv_capacity_tokens"
	PageSize   = "page_size"
	// SpecAcceptLength is tokens per step under speculative decoding (a
	// gauge; 0 or absent without it).
	SpecAcceptLength = "spec_accept_length"
	// SpecDrafts, SpecDraftTokens and SpecAccepted count, under
	// speculative decoding, verify passes of one request, tokens drafted
	// and drafts accepted (vLLM's counters, registered only with it on).
	SpecDrafts = "spec_drafts"
	// SpecAcceptRate is the share of drafted tokens accepted over recent
	// steps (a gauge; SGLang's).
	SpecAcceptRate  = "spec_accept_rate"
	SpecDraftTokens = "spec_draft_tokens"
	SpecAccepted    = "spec_accepted"
	// LoRAInfo is an info family of the LoRA adapters in use, its labels
	// the slots (max_lora) and the running and waiting adapters (vLLM's,
	// created only with --enable-lora); LoRASlots and LoRASlotsUsed are
	// gauges of the adapter slots and those the running batch holds
	// (SGLang's).
	LoRAInfo      = "lora_info"
	LoRASlots     = "lora_slots"
	LoRASlotsUsed = "lora_slots_used"
	// KVTransferTime and KVTransferBytes time and size each pull of a
	// request's prompt KV by a decode instance from a prefill instance
	// (vLLM's NIXL connector histograms).
	KVTransferTime  = "kv_transfer_time"
	KVTransferBytes = "kv_transfer_bytes"
	// TransferQueue counts a split deployment's decode-side requests whose
	// KV is on its way (SGLang's transfer queue).
	TransferQueue = "transfer_queue"
)

// MemberKeys are the families a member's evidence is read from when the
// source sums a target's series before they reach the builder
// (window.Window.Members): what the per-member table and the fleet
// comparison read (TTFT p99, queue mean, waiting, running, KV usage,
// preemptions), so a 1000-replica fleet costs its targets plus a few
// compact per-member series.
var MemberKeys = []string{TTFT, QueueTime, Running, Waiting, WaitingByReason, KVUsage, Preemptions}

// MemberBuckets are the histograms among MemberKeys whose quantiles a
// member needs; the others give a member their mean only.
var MemberBuckets = []string{TTFT}

// Engine is one serving engine's catalogue.
type Engine struct {
	// Name is the identifier (vllm, sglang); Title is how people write it.
	Name, Title string
	Catalogue   []Metric
	// Members are labels that split a target into members (replicas, data
	// parallel ranks); the first is the replica label.
	Members []string
	// Copies are labels whose values tell apart copies of one number, not
	// parts of it (SGLang's tp_rank: with --enable-metrics-for-all-schedulers
	// every tensor-parallel rank reports its scheduler's running requests).
	// The builder reads one series per set of the other labels' values
	// instead of adding the copies up.
	Copies []string
	// NoSwap reports whether the engine behind a window has no swap space
	// (vLLM's V1 engine, SGLang): none of its requests is ever swapped out,
	// so an absent Swapped family means zero, not unknown.
	NoSwap func(w *window.Window) bool
	// SpecRegistered reports whether the engine behind a window registers
	// its speculative decoding counters (SpecDrafts) only when speculative
	// decoding is on (vLLM's V1 engine), so that their absence means off.
	SpecRegistered func(w *window.Window) bool
	// LoRARegistered reports the same of its LoRA families (LoRAInfo,
	// LoRASlots): exported only with LoRA enabled, by every version that
	// exports them at all.
	LoRARegistered func(w *window.Window) bool
	// QueueHoldsTransfer: the queue-time histogram runs until the
	// scheduler first runs a request, and a decode instance's request
	// waits in the queue while its KV is pulled (vLLM), so the queue time
	// holds the transfer.
	QueueHoldsTransfer bool
	// DecodeTTFTFromArrival: the decode side of a split deployment times
	// TTFT and end-to-end from the client's request, which reaches both
	// sides at once (SGLang), so its TTFT holds the prefill side's work and
	// the transfer; otherwise from the hand-over (vLLM's proxy asks the
	// prefill side first).
	DecodeTTFTFromArrival bool
	// RoleLabel is the label whose value says an instance's side of a
	// split deployment, prefill or decode ("" when the engine has none:
	// its traffic tells).
	RoleLabel string
	// ReasonLabel is the label of RequestSuccess that holds the finish
	// reason (stop, length, abort, error); "" when the engine has none.
	ReasonLabel string
	// How says, per evidence path, how a user of this engine obtains it;
	// paths it cannot fill say what it offers instead.
	How map[string]string
	// Knobs gives the engine's flag for each knob a next step names; ""
	// means the engine has no such setting.
	Knobs map[string]string
	byKey map[string]Metric
}

// ByKey returns the engine's metric for a canonical key.
func (e *Engine) ByKey(k string) (Metric, bool) {
	m, ok := e.byKey[k]
	return m, ok
}

// Vocabulary is what evidence carries of the engine: its name, how its
// users obtain each field and its flag per knob.
func (e *Engine) Vocabulary() *evidence.Engine {
	return &evidence.Engine{Name: e.Name, Title: e.Title, How: e.How, Knobs: e.Knobs}
}

// Has reports whether any of the engine's families is in the window.
func (e *Engine) Has(w *window.Window) bool {
	for _, m := range e.Catalogue {
		if _, ok := Present(w, m); ok {
			return true
		}
	}
	return false
}

var (
	mu       sync.RWMutex
	engines  []*Engine
	families = map[string]Metric{} // every registered family name
	steps    = map[string]bool{}
)

// Register adds an engine. Engines register in their package's init; a
// name registered twice panics, as a duplicate would make detection ambiguous.
func Register(e *Engine) {
	mu.Lock()
	defer mu.Unlock()
	// Everything is checked before anything is recorded: a refused engine
	// leaves the registry as it was.
	for _, x := range engines {
		if x.Name == e.Name {
			panic("engine: " + e.Name + " registered twice")
		}
	}
	byKey := map[string]Metric{}
	kinds := map[string]Kind{}
	for _, m := range e.Catalogue {
		if _, dup := byKey[m.Key]; dup {
			panic(fmt.Sprintf("engine %s: key %s twice", e.Name, m.Key))
		}
		byKey[m.Key] = m
		for _, n := range m.Names {
			prev, ok := families[n]
			if k, mine := kinds[n]; mine {
				prev, ok = Metric{Kind: k}, true
			}
			if ok && prev.Kind != m.Kind {
				panic(fmt.Sprintf("engine %s: family %s registered as %s and %s", e.Name, n, prev.Kind, m.Kind))
			}
			kinds[n] = m.Kind
		}
	}
	e.byKey = byKey
	for _, m := range e.Catalogue {
		for _, n := range m.Names {
			families[n] = m
			if m.Key == TTFT {
				steps[n] = true
			}
		}
	}
	engines = append(engines, e)
	evidence.RegisterEngine(e.Vocabulary())
	sort.Slice(engines, func(i, j int) bool { return engines[i].Name < engines[j].Name })
}

// Exporter is a source of resource metrics beside the engines (DCGM): its
// gauges are read by every transport and attached to engine targets.
type Exporter struct {
	Name string
	// Gauges lists each gauge's names, newest first: a transport reads the
	// first present.
	Gauges [][]string
	// Histograms lists each histogram's names the same way (a router's
	// decision time).
	Histograms [][]string
	// Keep are the labels that identify one device; a Prometheus query
	// averages away the rest.
	Keep []string
}

var exporters []*Exporter

// RegisterExporter adds an exporter's families, so transports read them.
func RegisterExporter(x *Exporter) {
	mu.Lock()
	defer mu.Unlock()
	for _, names := range x.Gauges {
		for _, n := range names {
			families[n] = Metric{Key: n, Names: []string{n}, Kind: Gauge}
		}
	}
	for _, names := range x.Histograms {
		for _, n := range names {
			families[n] = Metric{Key: n, Names: []string{n}, Kind: Histogram}
		}
	}
	exporters = append(exporters, x)
}

// Exporters lists the registered exporters.
func Exporters() []*Exporter {
	mu.RLock()
	defer mu.RUnlock()
	return append([]*Exporter(nil), exporters...)
}

// Engines lists the registered engines by name.
func Engines() []*Engine {
	mu.RLock()
	defer mu.RUnlock()
	return append([]*Engine(nil), engines...)
}

// Lookup finds a registered engine by name.
func Lookup(name string) (*Engine, bool) {
	for _, e := range Engines() {
		if e.Name == name {
			return e, true
		}
	}
	return nil, false
}

// Names lists the registered engines' names.
func Names() []string {
	var out []string
	for _, e := range Engines() {
		out = append(out, e.Name)
	}
	return out
}

// Known reports the metric a registered family name belongs to.
func Known(name string) (Metric, bool) {
	mu.RLock()
	defer mu.RUnlock()
	m, ok := families[name]
	return m, ok
}

// Of returns the engine that exposes a family name (nil for exporters and
// unknown names).
func Of(name string) *Engine {
	for _, e := range Engines() {
		for _, m := range e.Catalogue {
			for _, n := range m.Names {
				if n == name {
					return e
				}
			}
		}
	}
	return nil
}

// Families lists every registered family name, sorted.
func Families() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(families))
	for n := range families {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// StepFamily reports histograms whose per-step increases collectors keep,
// for behaviour over the window (TTFT p99 per step).
func StepFamily(name string) bool {
	mu.RLock()
	defer mu.RUnlock()
	return steps[name]
}

// Present returns the first of a metric's names that the window holds.
func Present(w *window.Window, m Metric) (string, bool) {
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

// Prefixed builds the names of a family under several prefixes (sglang:
// from the engine, sglang_ through its gateway).
func Prefixed(base string, prefixes ...string) []string {
	out := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		out = append(out, p+base)
	}
	return out
}

// Knob renders a knob for an engine: its flag, or the knob's name in words
// when the engine has no such setting.
func (e *Engine) Knob(k string) string {
	if f, ok := e.Knobs[k]; ok && f != "" {
		return f
	}
	return strings.ReplaceAll(k, "_", " ") + " (no " + e.Title + " flag)"
}

// Titles names the registered engines for messages: "SGLang or vLLM".
func Titles() string {
	var t []string
	for _, e := range Engines() {
		t = append(t, e.Title)
	}
	switch len(t) {
	case 0:
		return "serving-engine"
	case 1:
		return t[0]
	}
	return strings.Join(t[:len(t)-1], ", ") + " or " + t[len(t)-1]
}
