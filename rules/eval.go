package rules

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// Outcome of one rule on one target.
type Outcome string

// Outcomes.
const (
	Fired        Outcome = "fired"
	Quiet        Outcome = "quiet"
	Insufficient Outcome = "insufficient"
	// Skipped: a source the rule needs (Rule.Needs) is absent altogether.
	Skipped Outcome = "skipped"
)

// Result is one rule's outcome on one target.
type Result struct {
	Rule     *Rule
	Outcome  Outcome
	Severity Severity
	Message  string
	// Evidence holds, by path, the values the result cites: on a fired
	// result every value the condition, impact and message read; on a quiet
	// result of a rule with a passing message (a checklist item) those of
	// the condition, that message and the bound that held, when they have a
	// value.
	Evidence map[string]float64
	// Stage is the part of latency the rule's bottleneck holds or slows.
	Stage string
	// Impact is the share of that latency the finding accounts for: NaN
	// when the share is unknown. ImpactMax bounds it from above where it is
	// unknown (and equals it where known): enough to cap a small stage.
	Impact, ImpactMax float64
	// Bound, on a quiet result, says why the rule could not fire although
	// some of what it reads is missing.
	Bound string
	// Explains, on a fired result, are the bottlenecks it is the cause of
	// here: the rule's explains, and those of explains_if that held.
	Explains []string
	// Missing names what kept an insufficient rule from running.
	Missing []Missing
	// Suppressed holds the reason when a suppression matched.
	Suppressed string
}

// Missing is one absent or too-thin piece of evidence.
type Missing struct {
	Path string `json:"path"`
	// Why: "missing" or "only N samples (need M)".
	Why string `json:"why"`
	How string `json:"how"`
}

// DefaultMinSamples is the fewest observations a distribution needs in the
// window before a rule may judge it.
const DefaultMinSamples = 20

// DefaultMinGaugeSamples is the fewest samples a gauge summary needs: one
// sample is a moment, not a window.
const DefaultMinGaugeSamples = 2

// DefaultMinShare is the share of latency below which a finding's stage is
// too small to be critical or to be the verdict.
const DefaultMinShare = 0.2

// Evaluate runs every enabled rule on the evidence: first the rules that read
// evidence only, then those that read the verdict of the first.
func (s *Set) Evaluate(e *evidence.Evidence, cfg *Config) []Result {
	if cfg == nil {
		cfg = &Config{}
	}
	env := newEnv(&e.Values)
	var machine vm.VM
	var out []Result
	var unchecked []Missing
	for pass := 0; pass < 2; pass++ {
		if pass == 1 {
			env.Verdict = verdict(out, cfg.MinShareOrDefault())
			unchecked = uncheckedCritical(out)
		}
		for _, r := range s.Rules {
			if r.usesVerdict != (pass == 1) || !cfg.Enabled(r.ID) {
				continue
			}
			var res Result
			if need := missingNeed(r, e, cfg); need != "" {
				res = Result{Rule: r, Severity: cfg.severity(r), Outcome: Skipped,
					Missing: []Missing{{Path: need, Why: "absent", How: NeedSources[need].How}}}
			} else if r.usesVerdict && len(unchecked) > 0 {
				// A judgement of the whole diagnosis needs the rules that decide it.
				res = Result{Rule: r, Severity: cfg.severity(r), Outcome: Insufficient, Missing: unchecked}
			} else {
				res = s.evalOne(r, e, env, cfg, &machine)
			}
			if res.Outcome == Fired {
				res.Suppressed = cfg.suppressed(r.ID, e.Target)
			}
			out = append(out, res)
		}
	}
	return out
}

// missingNeed returns the first source r needs that the evidence lacks; the
// checklist sets KeepNeeds, so there an absent source is "cannot check".
func missingNeed(r *Rule, e *evidence.Evidence, cfg *Config) string {
	if cfg.KeepNeeds {
		return ""
	}
	for _, n := range r.Needs {
		f, _ := evidence.Lookup(NeedSources[n].Present)
		if !evidence.Present(e.Values.Get(f)) {
			return n
		}
	}
	return ""
}

// Deciding reports whether a result is one the verdict depends on: a
// critical rule about the server, not about how it was measured.
func Deciding(r Result) bool {
	return r.Severity == Critical && r.Rule.Bottleneck != "measurement" && r.Rule.Bottleneck != "client"
}

func uncheckedCritical(rs []Result) []Missing {
	var out []Missing
	for _, r := range rs {
		if r.Outcome == Insufficient && Deciding(r) {
			out = append(out, Missing{Path: r.Rule.ID, Why: "could not run", How: "see that rule's gap"})
		}
	}
	return out
}

func verdict(rs []Result, minShare float64) Verdict {
	var v Verdict
	bn := map[string]bool{}
	for _, r := range rs {
		if r.Outcome != Fired || r.Suppressed != "" {
			continue
		}
		switch CapSeverity(r.Severity, causeMax(r, rs), minShare) {
		case Critical:
			v.Critical++
		case Warning:
			v.Warning++
		case Info:
			v.Info++
		}
		bn[r.Rule.Bottleneck] = true
		if evidence.Present(r.Impact) {
			v.TopImpact = math.Max(v.TopImpact, r.Impact)
		}
	}
	v.Bottlenecks = float64(len(bn))
	return v
}

// causeMax is a finding's impact bound raised to those of the findings it
// explains, as the advisor weighs a cause; an effect without a bound leaves
// the cause unbounded.
func causeMax(r Result, rs []Result) float64 {
	m := r.ImpactMax
	if r.Severity < Warning {
		return m // an info finding explains nothing
	}
	for _, o := range rs {
		if o.Outcome != Fired || o.Suppressed != "" || o.Rule == r.Rule || !slices.Contains(r.Explains, o.Rule.Bottleneck) {
			continue
		}
		if !evidence.Present(o.ImpactMax) {
			return math.NaN()
		}
		if evidence.Present(m) {
			m = math.Max(m, o.ImpactMax)
		}
	}
	return m
}

// CapSeverity lowers a critical finding whose stage holds less than
// minShare of the latency to a warning. Its upper bound decides where the
// impact is unknown; with neither known, nothing is capped.
func CapSeverity(s Severity, impactMax, minShare float64) Severity {
	if s == Critical && Capped(impactMax, minShare) {
		return Warning
	}
	return s
}

// Capped reports whether a finding whose impact is at most impactMax is too
// small to be critical or the verdict.
func Capped(impactMax, minShare float64) bool {
	return evidence.Present(impactMax) && impactMax < minShare
}

func (s *Set) evalOne(r *Rule, e *evidence.Evidence, env *Env, cfg *Config, machine *vm.VM) Result {
	res := Result{Rule: r, Severity: cfg.severity(r), Stage: r.Stage, Impact: math.NaN(), ImpactMax: math.NaN()}
	env.Params = cfg.params(r)
	if r.applies != nil {
		if res.Missing = missing(r.appliesReads, e, cfg); len(res.Missing) > 0 {
			res.Outcome = Insufficient
			return res
		}
		if ok, err := machine.Run(r.applies, env); err == nil && ok == false {
			res.Outcome = Quiet
			res.Evidence = r.passCites(e, r.appliesReads)
			return res
		}
	}
	res.Missing = missing(r.reads, e, cfg)
	if len(res.Missing) > 0 {
		res.Outcome = Insufficient
		if why, reads := r.bounded(e, env, cfg, machine); why != "" {
			res.Outcome, res.Bound = Quiet, why
			res.Evidence = r.passCites(e, r.reads, reads)
		}
		return res
	}
	out, err := machine.Run(r.when, env)
	if err != nil {
		res.Outcome = Insufficient
		res.Missing = []Missing{{Path: r.ID, Why: "condition failed: " + oneLine(err)}}
		return res
	}
	if fired, _ := out.(bool); !fired {
		res.Outcome = Quiet
		res.Evidence = r.passCites(e, r.reads)
		return res
	}
	res.Outcome = Fired
	res.Evidence = map[string]float64{}
	for _, f := range r.reads {
		res.Evidence[f.Path] = e.Values.Get(f)
	}
	for _, name := range r.verdictReads {
		res.Evidence["verdict."+name] = verdictByName[name](env.Verdict)
	}
	switch {
	case r.impact != nil:
		if v, err := machine.Run(r.impact, env); err == nil {
			if x, ok := v.(float64); ok && evidence.Present(x) {
				res.Impact = math.Max(0, math.Min(1, x))
			}
		}
	case r.share != nil:
		if x := e.Values.Get(*r.share); evidence.Present(x) && e.Inconsistent(r.share.Path) == "" {
			res.Impact = math.Max(0, math.Min(1, x))
		}
		if x := e.Values.Get(*r.shareMax); evidence.Present(x) {
			res.ImpactMax = math.Max(0, math.Min(1, x))
		}
	}
	if evidence.Present(res.Impact) {
		res.ImpactMax = res.Impact
	}
	res.Explains = append([]string(nil), r.Explains...)
	for _, b := range slices.Sorted(maps.Keys(r.explainsIf)) {
		c := r.explainsIf[b]
		if len(missing(c.reads, e, cfg)) > 0 {
			continue // unknown: explain nothing on a guess
		}
		if ok, err := machine.Run(c.cond, env); err == nil && ok == true {
			res.Explains = append(res.Explains, b)
		}
	}
	msg, err := r.render(&e.Values, e.Text, env.Params, env.Verdict)
	if err != nil {
		msg = r.Title
	}
	res.Message = msg
	return res
}

// passCites is what a quiet result cites: nothing for a rule without a
// passing message (diagnosis rules, whose quiet results nobody shows, so a
// diagnosis of a thousand targets does not build maps for them).
func (r *Rule) passCites(e *evidence.Evidence, fieldSets ...[]evidence.Field) map[string]float64 {
	if r.ok == nil {
		return nil
	}
	return cited(e, append(fieldSets, r.okReads)...)
}

// cited collects the values of the given fields that are present, by path:
// what a result cites. NaN has no JSON form and cites nothing.
func cited(e *evidence.Evidence, fieldSets ...[]evidence.Field) map[string]float64 {
	out := map[string]float64{}
	for _, fs := range fieldSets {
		for _, f := range fs {
			if x := e.Values.Get(f); evidence.Present(x) {
				out[f.Path] = x
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// bounded returns why a rule whose inputs are partly missing cannot fire
// (a bound of its own holds, or a part of its condition that can be judged
// alone is false) and the fields that reason reads. "" when neither.
func (r *Rule) bounded(e *evidence.Evidence, env *Env, cfg *Config, machine *vm.VM) (string, []evidence.Field) {
	if r.usesVerdict {
		return "", nil
	}
	judge := func(b bound, want bool) (string, bool) {
		if len(missing(b.reads, e, cfg)) > 0 {
			return "", false
		}
		out, err := machine.Run(b.cond, env)
		if v, ok := out.(bool); err != nil || !ok || v != want {
			return "", false
		}
		why, err := b.render(&e.Values, env.Params)
		return why, err == nil
	}
	for _, b := range r.bounds {
		if why, ok := judge(b, true); ok {
			return why, b.reads
		}
	}
	for _, b := range r.conjuncts {
		if why, ok := judge(b, false); ok {
			return why, b.reads
		}
	}
	return "", nil
}

// missing lists the fields that are absent, withheld as inconsistent, or
// summaries too thin to judge.
func missing(reads []evidence.Field, e *evidence.Evidence, cfg *Config) []Missing {
	minSamples, minGauge := cfg.minSamples(), cfg.minGaugeSamples()
	var out []Missing
	checked := map[string]bool{}
	for _, f := range reads {
		x := e.Values.Get(f)
		if note := e.Inconsistent(f.Path); note != "" {
			if node := evidence.Node(f.Path); !checked[node] {
				checked[node] = true
				out = append(out, Missing{Path: node, Why: "inconsistent: " + note, How: e.How(f.Path)})
			}
			continue
		}
		if f.Series != "" && !checked[f.Series] {
			// A missing sample count is hand-made evidence; collectors set it.
			sf, _ := evidence.Lookup(f.Series + ".samples")
			if n := e.Values.Get(sf); evidence.Present(n) && n < minGauge {
				checked[f.Series] = true
				out = append(out, Missing{Path: f.Series,
					Why: fmt.Sprintf("only %s samples in the window (need %s)", units.Number(n), units.Number(minGauge)), How: e.How(f.Path)})
				continue
			}
		}
		if !evidence.Present(x) {
			// Name the distribution or gauge once, not each of its fields.
			if node := evidence.Node(f.Path); !checked[node] {
				checked[node] = true
				out = append(out, Missing{Path: node, Why: "missing", How: e.How(f.Path)})
			}
			continue
		}
		if f.Dist != "" && f.Path != f.Dist+".count" && !checked[f.Dist] {
			checked[f.Dist] = true
			cf, _ := evidence.Lookup(f.Dist + ".count")
			if n := e.Values.Get(cf); !evidence.Present(n) || n < minSamples {
				out = append(out, Missing{Path: f.Dist,
					Why: fmt.Sprintf("only %s samples in the window (need %s)", units.Number(n), units.Number(minSamples)), How: e.How(f.Path)})
			}
		}
	}
	return out
}

// Config holds per-rule overrides and suppressions (llmdoctor.yaml).
type Config struct {
	MinSamples float64 `yaml:"min_samples"`
	// MinGaugeSamples is the fewest samples a gauge summary needs.
	MinGaugeSamples float64 `yaml:"min_gauge_samples"`
	// MinShare is the share of latency a finding's stage must hold to be
	// critical or the verdict.
	MinShare float64 `yaml:"min_share"`
	// Models gives facts about served models that metrics do not carry.
	Models map[string]ModelConfig `yaml:"models"`
	// GPUs overrides the peak-bandwidth table by dcgm-exporter modelName.
	GPUs     map[string]GPUConfig `yaml:"gpus"`
	Rules    map[string]Override  `yaml:"rules"`
	Suppress []Suppression        `yaml:"suppress"`
	// Now is the time suppressions expire against (zero: time.Now()).
	Now time.Time `yaml:"-"`
	// KeepNeeds evaluates rules even when a source they need is absent (the
	// checklist: there, absent evidence is "cannot check").
	KeepNeeds bool `yaml:"-"`
}

// ModelConfig describes one served model.
type ModelConfig struct {
	// WeightBytes is the size of the weights as loaded (after quantization).
	WeightBytes float64 `yaml:"weight_bytes"`
}

// GPUConfig describes one GPU model.
type GPUConfig struct {
	// PeakBandwidth is HBM bandwidth in bytes/s.
	PeakBandwidth float64 `yaml:"peak_bandwidth"`
}

// PeakBandwidths returns the configured GPU bandwidths by modelName.
func (c *Config) PeakBandwidths() map[string]float64 {
	return positive(c.GPUs, func(g GPUConfig) float64 { return g.PeakBandwidth })
}

// WeightBytes returns the configured model sizes by served name.
func (c *Config) WeightBytes() map[string]float64 {
	return positive(c.Models, func(m ModelConfig) float64 { return m.WeightBytes })
}

// positive keeps the entries whose value is set.
func positive[T any](m map[string]T, value func(T) float64) map[string]float64 {
	out := map[string]float64{}
	for name, x := range m {
		if v := value(x); v > 0 {
			out[name] = v
		}
	}
	return out
}

// Override changes one rule.
type Override struct {
	Enabled  *bool              `yaml:"enabled"`
	Severity string             `yaml:"severity"`
	Params   map[string]float64 `yaml:"params"`
}

// Suppression silences a rule, optionally for one model, until a date.
type Suppression struct {
	Rule   string `yaml:"rule"`
	Model  string `yaml:"model"`
	Reason string `yaml:"reason"`
	Until  string `yaml:"until"`
	until  time.Time
}

// Enabled reports whether the config leaves a rule on.
func (c *Config) Enabled(id string) bool {
	o, ok := c.Rules[id]
	return !ok || o.Enabled == nil || *o.Enabled
}

func (c *Config) severity(r *Rule) Severity {
	if o, ok := c.Rules[r.ID]; ok && o.Severity != "" {
		if s, err := ParseSeverity(o.Severity); err == nil {
			return s
		}
	}
	return r.Sev
}

func (c *Config) params(r *Rule) map[string]float64 {
	o, ok := c.Rules[r.ID]
	if !ok || len(o.Params) == 0 {
		return r.Params
	}
	p := make(map[string]float64, len(r.Params))
	for k, v := range r.Params {
		p[k] = v
	}
	for k, v := range o.Params {
		p[k] = v
	}
	return p
}

func (c *Config) minGaugeSamples() float64 {
	if c.MinGaugeSamples > 0 {
		return c.MinGaugeSamples
	}
	return DefaultMinGaugeSamples
}

// MinShareOrDefault is the configured minimum share, or the default.
func (c *Config) MinShareOrDefault() float64 {
	if c != nil && c.MinShare > 0 {
		return c.MinShare
	}
	return DefaultMinShare
}

func (c *Config) minSamples() float64 {
	if c.MinSamples > 0 {
		return c.MinSamples
	}
	return DefaultMinSamples
}

func (c *Config) suppressed(id string, t evidence.Target) string {
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	for _, s := range c.Suppress {
		if s.Rule != id || (s.Model != "" && s.Model != t.Model) {
			continue
		}
		if !s.until.IsZero() && now.After(s.until) {
			continue
		}
		return s.Reason
	}
	return ""
}

// Validate checks the config against the rules a run knows (diagnosis
// rules, checklist items): unknown rule ids and params, bad severities,
// numbers out of range, suppressions without a reason or with a bad date.
// Its errors are *ConfigError.
func (c *Config) Validate(sets ...*Set) error {
	find := func(id string) (*Rule, bool) {
		for _, s := range sets {
			if r, ok := s.Get(id); ok {
				return r, true
			}
		}
		return nil, false
	}
	for _, id := range slices.Sorted(maps.Keys(c.Rules)) {
		o := c.Rules[id]
		r, ok := find(id)
		if !ok {
			return &ConfigError{Key: "rules." + id, Kind: UnknownRule, Rule: id, Problem: "no such rule"}
		}
		if o.Severity != "" {
			if _, err := ParseSeverity(o.Severity); err != nil {
				return &ConfigError{Key: "rules." + id, Kind: BadSeverity, Rule: id, Problem: err.Error()}
			}
		}
		for _, p := range slices.Sorted(maps.Keys(o.Params)) {
			if _, ok := r.Params[p]; !ok {
				return &ConfigError{Key: "rules." + id + ".params." + p, Kind: UnknownParam, Rule: id,
					Problem: fmt.Sprintf("the rule has no such param (it has %v)", slices.Sorted(maps.Keys(r.Params)))}
			}
		}
	}
	if err := c.checkValues(find); err != nil {
		return err
	}
	for i := range c.Suppress {
		sp := &c.Suppress[i]
		key := fmt.Sprintf("suppress[%d]", i)
		if _, ok := find(sp.Rule); !ok {
			return &ConfigError{Key: key, Kind: UnknownRule, Rule: sp.Rule, Problem: fmt.Sprintf("no such rule %q", sp.Rule)}
		}
		if sp.Reason == "" {
			return &ConfigError{Key: key + " (" + sp.Rule + ")", Kind: NoReason, Rule: sp.Rule, Problem: "a suppression needs a reason"}
		}
		if sp.Until != "" {
			t, err := time.Parse("2006-01-02", sp.Until)
			if err != nil {
				return &ConfigError{Key: key + " (" + sp.Rule + ")", Kind: BadDate, Rule: sp.Rule, Problem: "until must be a date like 2026-12-31"}
			}
			sp.until = t.Add(24*time.Hour - time.Nanosecond)
		}
	}
	return nil
}

// Expired lists suppressions whose date has passed, so a report can say so.
func (c *Config) Expired() []Suppression {
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	var out []Suppression
	for _, s := range c.Suppress {
		if !s.until.IsZero() && now.After(s.until) {
			out = append(out, s)
		}
	}
	return out
}
