package rules

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// lit echoes a number as the user wrote it.
func lit(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// ConfigKind says what is wrong with a config entry.
type ConfigKind int

// Kinds of config problem.
const (
	// BadValue: a value out of its range or in the wrong unit.
	BadValue ConfigKind = iota
	// UnknownRule: an id no loaded rule or checklist item has.
	UnknownRule
	// UnknownParam: a param the rule does not declare.
	UnknownParam
	// BadSeverity: not info, warning or critical.
	BadSeverity
	// NoReason: a suppression without a reason.
	NoReason
	// BadDate: an until that is not a date.
	BadDate
)

// ConfigError is one problem in llmdoctor.yaml: Key is where it sits, as a
// path of keys (rules.decode/tpot-high.params.tpot_slow, suppress[0]).
type ConfigError struct {
	// File names the config; empty when it was not read from a file.
	File string
	// Line is the line of the value in the file, 0 when unknown.
	Line    int
	Key     string
	Kind    ConfigKind
	Problem string
	// Rule is the rule id concerned, when there is one.
	Rule string
}

func (e *ConfigError) Error() string {
	f := e.File
	if f == "" {
		f = "config"
	}
	if e.Line > 0 {
		f += ":" + strconv.Itoa(e.Line)
	}
	return f + ": " + e.Key + ": " + e.Problem
}

// line is the line of the value at keys in the YAML the config was parsed
// from, 0 when unknown.
func (c *Config) line(keys ...string) int {
	if len(c.src) == 0 {
		return 0
	}
	b := (&yaml.PathBuilder{}).Root()
	for _, k := range keys {
		b = b.Child(k)
	}
	n, err := b.Build().ReadNode(bytes.NewReader(c.src))
	if err != nil || n == nil || n.GetToken() == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

type knob struct {
	key  string
	v    *float64
	want string
}

// knobs are the config's top-level numbers; 0 means "the default".
func (c *Config) knobs() []knob {
	return []knob{
		{"min_samples", &c.MinSamples, "observations a distribution needs, at least 1 (default 20)"},
		{"min_gauge_samples", &c.MinGaugeSamples, "samples a gauge summary needs, at least 1 (default 2)"},
		{"min_share", &c.MinShare, "a share of latency above 0 and at most 1 (default 0.2)"},
	}
}

// Smallest plausible values: anything less was written in another unit
// (TB/s for bytes/s, GB for bytes) and would silently skew every bound.
const (
	minPeakBandwidth = 1e9 // 1 GB/s
	minWeightBytes   = 1e6 // 1 MB
)

// checkValues refuses numbers out of range: the top-level knobs, rule params
// whose rule expects a positive value, GPU bandwidths and model sizes.
func (c *Config) checkValues(find func(string) (*Rule, bool)) error {
	bad := func(key, problem string, at ...string) error {
		return &ConfigError{Key: key, Kind: BadValue, Problem: problem, Line: c.line(at...)}
	}
	for _, k := range c.knobs() {
		x := *k.v
		if math.IsNaN(x) || x < 0 || (k.key != "min_share" && x > 0 && x < 1) || (k.key == "min_share" && x > 1) {
			return bad(k.key, fmt.Sprintf("%s is out of range: want %s", lit(x), k.want), k.key)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.Rules)) {
		r, ok := find(id)
		if !ok {
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(c.Rules[id].Params)) {
			def, declared := r.Params[p]
			x := c.Rules[id].Params[p]
			at := c.line("rules", id, "params", p)
			switch {
			// A param whose default is above 0 is a threshold: 0 or below
			// would fire the rule on anything or never.
			case declared && def > 0 && !(x > 0):
				return &ConfigError{Key: "rules." + id + ".params." + p, Kind: BadValue, Rule: id, Line: at,
					Problem: fmt.Sprintf("%s is not above 0 (the rule's default is %s)", lit(x), lit(def))}
			// A share's threshold is a share: above 1 (a percent written
			// as 90, say) the rule could never fire, or always would.
			case declared && r.shares[p] && (x < 0 || x > 1):
				return &ConfigError{Key: "rules." + id + ".params." + p, Kind: BadValue, Rule: id, Line: at,
					Problem: fmt.Sprintf("%s is out of range: %s is a share, within 0 and 1 (the rule's default is %s)", lit(x), p, lit(def))}
			}
		}
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"slo.ttft_p99", c.SLO.TTFTP99}, {"slo.tpot_p50", c.SLO.TPOT}, {"slo.e2e_p99", c.SLO.E2EP99}} {
		if t.d < 0 || (t.d > 0 && t.d < time.Millisecond) {
			return bad(t.key, fmt.Sprintf("%v is out of range: want a duration like 2s or 50ms", t.d), strings.Split(t.key, ".")...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.GPUs)) {
		key := "gpus." + name + ".peak_bandwidth"
		if name == "" {
			return bad("gpus", "a GPU needs its dcgm-exporter modelName, e.g. NVIDIA H100 80GB HBM3")
		}
		switch x := c.GPUs[name].PeakBandwidth; {
		case !(x > 0):
			return bad(key, "missing or not above 0: want the GPU's peak HBM bandwidth in bytes per second, e.g. 3.35e12", "gpus", name)
		case x < minPeakBandwidth:
			return bad(key, fmt.Sprintf("%s is in bytes per second: write %se12 for %s TB/s", lit(x), lit(x), lit(x)), "gpus", name, "peak_bandwidth")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		key := "models." + name + ".weight_bytes"
		if name == "" {
			return bad("models", "a model needs its served name, e.g. meta-llama/Llama-3.1-8B-Instruct")
		}
		switch x := c.Models[name].WeightBytes; {
		case x == 0 && c.Models[name].MoE != nil:
			// An entry may say only whether the model is a mixture of experts.
		case !(x > 0):
			return bad(key, "missing or not above 0: want the size of the weights as loaded, in bytes, e.g. 16e9", "models", name)
		case x < minWeightBytes:
			return bad(key, fmt.Sprintf("%s is in bytes: write %se9 for %s GB", lit(x), lit(x), lit(x)), "models", name, "weight_bytes")
		}
	}
	return nil
}
