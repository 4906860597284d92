// Package rules loads declarative rules (YAML with expr conditions), compiles
// them once against the typed evidence environment, and evaluates them to one
// of three outcomes: fired, quiet or insufficient.
package rules

import (
	"fmt"
	"slices"
	"text/template"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// Severity orders findings.
type Severity uint8

// Severities, lowest first.
const (
	Info Severity = iota + 1
	Warning
	Critical
)

var severityNames = map[string]Severity{"info": Info, "warning": Warning, "critical": Critical}

func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return "none"
}

// ParseSeverity reads info, warning or critical.
func ParseSeverity(s string) (Severity, error) {
	if v, ok := severityNames[s]; ok {
		return v, nil
	}
	return 0, fmt.Errorf("unknown severity %q (want info, warning or critical)", s)
}

// MarshalText writes the name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Cost classes of a next step, cheapest first.
var Costs = []string{"config", "architecture", "hardware"}

// CostRank orders cost classes; unknown classes sort last.
func CostRank(c string) int {
	for i, x := range Costs {
		if x == c {
			return i
		}
	}
	return len(Costs)
}

// Bottlenecks is the vocabulary a rule may name.
var Bottlenecks = []string{"queueing", "prefill", "decode", "kv-capacity", "memory-bandwidth", "compute",
	"prefill-interference", "prefix-cache", "cpu-overhead", "speculation", "lora", "kv-transfer", "routing", "client", "measurement", "errors", "imbalance", "none"}

// Layers of the evidence model.
var Layers = []string{"cond", "stage", "service", "resource"}

// Step is one next step.
type Step struct {
	Do   string `yaml:"do" json:"do"`
	Cost string `yaml:"cost" json:"cost"`
	// Whatif names the change a simulation can price for this step, one of
	// Changes; empty when none can.
	Whatif string `yaml:"whatif,omitempty" json:"whatif,omitempty"`
	// Turns are the knobs the step turns, all as one change, each with its
	// direction: {max_num_seqs: raise}. Knobs are those of
	// evidence.DefaultKnobs, directions those of Turns that fit the knob.
	// A step that turns no engine setting has none.
	Turns map[string]string `yaml:"turns,omitempty" json:"turns,omitempty"`
	// IfAlready is what to check instead of the step where the evidence
	// shows every turn already made (prefix caching already on): it follows
	// what the evidence shows, "prefix caching is already on
	// (cond.prefix_caching = 1): ". Only turns of knobs with a KnobStates
	// entry can be shown made; without IfAlready a plain check is said.
	IfAlready string `yaml:"if_already,omitempty" json:"-"`
	// OnlyIf is an expression over evidence: where it is false the step
	// does not apply to this target (expert parallelism for a dense model)
	// and is left out; where it cannot be judged (a field it reads is
	// missing) the step stays, worded as it is ("for MoE models, …").
	OnlyIf string `yaml:"only_if,omitempty" json:"-"`
	// Already, in a rendered step, names each knob the evidence shows
	// already turned the step's way, with that evidence
	// ({enable_prefix_caching: "cond.prefix_caching = 1"}): the step then
	// turns nothing and Do is what to check instead.
	Already map[string]string `yaml:"-" json:"already,omitempty"`
}

// Changes are the settings changes whatif can simulate, by name, each with
// what exactly it simulates.
var Changes = map[string]string{
	"more_seqs":            "max_num_seqs × 4, at most what the KV cache holds at the mean request size, and max_num_batched_tokens at least × 2",
	"fewer_seqs":           "max_num_seqs halved",
	"larger_token_budget":  "max_num_batched_tokens × 2",
	"smaller_token_budget": "chunked prefill on, max_num_batched_tokens 2048",
	"chunked_prefill":      "chunked prefill on, max_num_batched_tokens at most 8192",
	"prefix_caching":       "prefix caching on",
	"fp8_kv":               "an fp8 KV cache: twice the blocks, half the bytes read per token of context",
	"one_more_replica":     "one more replica: each gets n/(n+1) of the arrival rate",
}

// Spec is a rule file as written.
type Spec struct {
	ID    string `yaml:"id"`
	Title string `yaml:"title"`
	// Item is the checklist's wording: what holds when the rule is quiet.
	Item       string   `yaml:"item"`
	Layer      string   `yaml:"layer"`
	Bottleneck string   `yaml:"bottleneck"`
	Severity   string   `yaml:"severity"`
	Explains   []string `yaml:"explains"`
	// ExplainsIf names bottlenecks the finding explains only where an
	// expression holds (stalls explain slow prefills when prompt lengths are
	// mixed, so short prompts wait behind long ones).
	ExplainsIf map[string]string  `yaml:"explains_if"`
	Params     map[string]float64 `yaml:"params"`
	Thresholds map[string]string  `yaml:"thresholds"`
	// Needs names whole sources the rule is about (dcgm, requests): without
	// them a diagnosis skips the rule with one note, instead of a gap each.
	Needs []string `yaml:"needs"`
	// Applies, when set, is checked first: where it is false the rule does
	// not apply (a fleet rule on one server) and the outcome is quiet.
	Applies string `yaml:"applies"`
	// SkipIf, when set and known true, makes the rule quiet: it does not
	// apply there (a prefill-only instance of a split deployment). Unlike
	// Applies, unknown inputs leave the rule to run as it would.
	SkipIf string `yaml:"skip_if"`
	When   string `yaml:"when"`
	// Plain is what one reading shows plainly: where the gauges the rule
	// reads rest on fewer samples than a window needs (one snapshot), the
	// rule fires on Plain instead of When, and its finding is tentative.
	// Without it, such a rule cannot run on one reading.
	Plain string `yaml:"plain"`
	// DeniesHealthy: where the rule fires, the target is not healthy,
	// whatever its severity (a target missed, time the budget cannot place):
	// the verdict is inconclusive unless another finding names the cause.
	DeniesHealthy bool `yaml:"denies_healthy"`
	// Stage is the part of user-visible latency the rule's bottleneck holds
	// or slows; that part's share (stage.share.STAGE) is the finding's impact
	// unless Impact gives an expression of its own.
	Stage  string `yaml:"stage"`
	Impact string `yaml:"impact"`
	// Bound lists conditions under which the rule cannot fire although some
	// of what it reads is missing: the inputs that are there bound the rest.
	Bound []BoundSpec `yaml:"bound"`
	Says  string      `yaml:"says"`
	// OK, for checklist items, is the message when the item passes; the
	// fields it reads are optional (printed n/a when missing).
	OK   string `yaml:"ok"`
	Next []Step `yaml:"next"`
	Why  string `yaml:"why"`
	Docs string `yaml:"docs"`
}

// BoundSpec is one bound: when If holds, the rule is quiet for the reason Says.
type BoundSpec struct {
	If   string `yaml:"if"`
	Says string `yaml:"says"`
}

// Stages a rule may name, each with its share field in the evidence.
var Stages = []string{"queue", "prefill", "front", "decode", "itl_tail", "transfer"}

// offPath bottlenecks are not a stage of latency: how it was measured,
// failures, imbalance between replicas.
var offPath = []string{"client", "measurement", "errors", "imbalance", "none"}

// OnPath reports whether a bottleneck sits on the latency path, so that its
// findings have a stage.
func OnPath(bottleneck string) bool { return !slices.Contains(offPath, bottleneck) }

// DefaultStages is the stage a rule that does not say is taken to hold or
// slow: where its bottleneck usually shows in the latency users see.
var DefaultStages = map[string]string{"queueing": "queue", "kv-capacity": "queue", "prefill": "prefill",
	"prefix-cache": "prefill", "compute": "prefill", "decode": "decode", "memory-bandwidth": "decode",
	"prefill-interference": "itl_tail", "cpu-overhead": "front", "speculation": "decode", "lora": "queue", "kv-transfer": "transfer", "routing": "queue"}

// bound is a compiled BoundSpec; conjunct parts of a rule's condition are
// bounds too (if one is false, so is the whole).
type bound struct {
	cond  *expression
	reads []evidence.Field
	in    []input
	says  *template.Template
	msg   message
	// src is the condition as written, for conjuncts without says, and
	// params the params it reads, to cite their values.
	src    string
	params []string
}

// Rule is a compiled rule.
type Rule struct {
	Spec
	Sev  Severity
	File string
	Line int

	when, impact, applies, plain, skipIf *expression
	// shares are the params compared with a share in when (shareParams).
	shares map[string]bool
	// plainIn are the inputs Plain reads.
	plainIn           []input
	bounds, conjuncts []bound
	explainsIf        map[string]bound
	explainsOrder     []string
	// share is the stage's share field, the default impact, and shareMax
	// its upper bound.
	share, shareMax     *evidence.Field
	shareAt, shareMaxAt slot
	appliesReads        []evidence.Field
	skipIfReads         []evidence.Field
	skipIfIn            []input
	says, ok            *template.Template
	// msg is says compiled, nil where only text/template can run it.
	msg message
	// reads are the evidence fields the condition, impact and message read.
	reads []evidence.Field
	// okReads are the evidence fields the passing message (ok) reads: a
	// passing item cites them with the condition's.
	okReads []evidence.Field
	// The reads above as inputs, with the slots that judge them.
	in, appliesIn, okIn []input
	// needs are the slots that show each of Needs is there, and needGaps
	// the notes of a result skipped for want of it: one Notes every such
	// result shares (results are read, never changed), as a fleet skips
	// the same rules on every target.
	needs    []slot
	needGaps []*Notes
	// paramNames are the params sorted, and paramVals their defaults: the
	// frame compiled expressions and messages read params from.
	paramNames []string
	paramVals  []float64
	// stepIf are the next steps' only_if conditions compiled, one per step,
	// nil where a step has none.
	stepIf []*stepCond
	// usesVerdict: the rule reads other rules' results and runs after them.
	usesVerdict  bool
	verdictReads []string
	// BuiltIn marks rules shipped with llmdoctor.
	BuiltIn bool
}

// Reads lists the evidence paths the rule reads.
func (r *Rule) Reads() []string {
	out := make([]string, len(r.reads))
	for i, f := range r.reads {
		out[i] = f.Path
	}
	return out
}

// DocsPath is where the rule's generated page lives.
func (r *Rule) DocsPath() string {
	if r.Docs != "" {
		return r.Docs
	}
	return "docs/rules/" + r.ID + ".md"
}

func (r *Rule) addVerdictRead(name string) {
	for _, x := range r.verdictReads {
		if x == name {
			return
		}
	}
	r.verdictReads = append(r.verdictReads, name)
}

func newBound(cond *expression, reads []evidence.Field, src string) bound {
	return bound{cond: cond, reads: reads, in: inputsOf(reads), src: src}
}

// NeedSources are the sources a rule may need, with the evidence that shows
// the source is there and how to add it.
var NeedSources = map[string]struct{ Present, How string }{
	"dcgm":     {"resource.gpus", "scrape dcgm-exporter alongside the server, or query it through Prometheus"},
	"requests": {"service.client_requests", "a benchmark result (vllm bench serve JSON) or per-request records (JSONL/CSV)"},
}
