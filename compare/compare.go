// Package compare sets two diagnoses side by side: first whether they saw
// the same traffic, then what changed in each stage of latency by more
// than the measurement can tell apart, the bottleneck before and after,
// and the findings that appeared or cleared.
package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// Schema names the JSON form of a Comparison.
const Schema = "llmdoctor.comparison/v1"

// Verdicts of a target.
const (
	NoChange      = "no-change"
	Changed       = "changed"
	NotComparable = "not-comparable"
	// Inconclusive: nothing moved beyond a known band, but some figure's
	// band is unknown (or no figure is on both sides).
	Inconclusive = "inconclusive"
)

// Comparison is two diagnoses of the same deployment, before and after.
type Comparison struct {
	Schema string `json:"schema"`
	// Before and After name where each diagnosis came from.
	Before  Side     `json:"before"`
	After   Side     `json:"after"`
	Targets []Target `json:"targets"`
	// Unmatched are targets only one side has.
	Unmatched []Unmatched `json:"unmatched,omitempty"`
	// Regressions are the --fail-on-regression gates that failed;
	// Unevaluated, those no target could judge (a figure missing, its band
	// unknown, or the runs not comparable): a gate never passes unjudged.
	Regressions []Regression `json:"regressions,omitempty"`
	Unevaluated []string     `json:"unevaluated,omitempty"`
	// Notes say how targets were paired when they could not be by name.
	Notes []string `json:"notes,omitempty"`
}

// Side is one of the two diagnoses, as the report names it.
type Side struct {
	Name    string           `json:"name"`
	Sources []advisor.Source `json:"sources"`
	Window  advisor.Window   `json:"window"`
}

// Unmatched is a target one side has and the other does not.
type Unmatched struct {
	Target evidence.Target `json:"target"`
	Side   string          `json:"side"` // before or after
}

// Target is one target in both diagnoses.
type Target struct {
	Target evidence.Target `json:"target"`
	// Verdict is no-change, changed or not-comparable; Why says it in a line.
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
	// Conditions are the request conditions and configuration side by side.
	Conditions []Condition `json:"conditions"`
	// Settings are settings that changed and are not numbers: the serving
	// engine.
	Settings []string `json:"settings_changed,omitempty"`
	// Latency is each stage and latency figure before and after.
	Latency []Delta `json:"latency"`
	// Bottleneck is the verdict of each diagnosis.
	Bottleneck [2]string `json:"bottleneck"`
	// Appeared and Cleared are the findings (rule ids) only after, only before.
	Appeared []string `json:"appeared,omitempty"`
	Cleared  []string `json:"cleared,omitempty"`
}

// Condition is one request condition or setting on both sides.
type Condition struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Kind is workload (what was asked of the server: a change makes the
	// runs incomparable) or config (how it was set up: a change is what is
	// being compared).
	Kind   string   `json:"kind"`
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
	// Change is after over before, less one (relative), or after less
	// before for a share (absolute); Tolerance in the same terms.
	Change    *float64 `json:"change,omitempty"`
	Tolerance float64  `json:"tolerance"`
	Absolute  bool     `json:"absolute,omitempty"`
	// Beyond: the change exceeds the tolerance.
	Beyond bool `json:"beyond"`
}

// Delta is one latency figure on both sides, in seconds.
type Delta struct {
	Name   string   `json:"name"`
	Path   string   `json:"path"`
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
	// Change is after over before, less one.
	Change *float64 `json:"change,omitempty"`
	// Noise is the half-width of the band, relative to before, within
	// which a change cannot be told from sampling or resolution: from each
	// side's sample count and the spread of its distribution, and for a
	// quantile read from a histogram, half the width of its bucket.
	Noise *float64 `json:"noise,omitempty"`
	// Significant: the change is outside the noise band.
	Significant bool `json:"significant"`
}

// Regression is a --fail-on-regression gate that failed.
type Regression struct {
	Target evidence.Target `json:"target"`
	Gate   string          `json:"gate"`
	Delta  Delta           `json:"delta"`
	Limit  float64         `json:"limit"`
}

// Options are the tolerances of the request conditions, by key (as
// Tolerances lists them), over the defaults.
type Options struct {
	Tolerances map[string]float64
}

// condition is a request condition or setting compared.
type condition struct {
	key, name, path, kind string
	tolerance             float64
	absolute              bool
}

// Conditions compared, in the order shown. Workload tolerances: lengths and
// rate within 20% are the same traffic to a batching server; a share within
// ten points. Settings must be equal.
var conditions = []condition{
	{"prompt_mean", "prompt tokens mean", "cond.prompt_tokens.mean", "workload", 0.2, false},
	{"prompt_p90", "prompt tokens p90", "cond.prompt_tokens.p90", "workload", 0.2, false},
	{"output_mean", "output tokens mean", "cond.output_tokens.mean", "workload", 0.2, false},
	{"output_p90", "output tokens p90", "cond.output_tokens.p90", "workload", 0.2, false},
	{"rate", "arrival rate (req/s)", "service.request_rate", "workload", 0.2, false},
	{"concurrency", "client concurrency (max)", "cond.max_concurrency", "workload", 0, false},
	{"streaming", "streamed share", "service.streaming_share", "workload", 0.1, true},
	{"prefix_hit", "prefix cache hit rate", "resource.prefix_hit_rate", "workload", 0.1, true},
	{"engines", "engines", "cond.engines", "config", 0, false},
	{"gpus", "GPUs", "resource.gpus", "config", 0, false},
	{"block_size", "KV block size", "cond.block_size", "config", 0, false},
	{"gpu_blocks", "KV cache blocks", "cond.gpu_blocks", "config", 0, false},
	{"gpu_memory_utilization", "gpu-memory-utilization", "cond.gpu_memory_utilization", "config", 0, false},
	{"prefix_caching", "prefix caching", "cond.prefix_caching", "config", 0, false},
	{"weight_bytes", "weight bytes", "cond.weight_bytes", "config", 0, false},
}

// Tolerances lists the keys --tolerance takes and their defaults.
func Tolerances() map[string]float64 {
	out := map[string]float64{}
	for _, c := range conditions {
		if c.kind == "workload" {
			out[c.key] = c.tolerance
		}
	}
	return out
}

// latency figures compared: the server's where it has them, else what
// clients measured.
var latency = []struct{ name, path, client, dist string }{
	{"queue mean", "stage.queue.mean", "", "stage.queue"},
	{"prefill mean", "stage.prefill.mean", "", "stage.prefill"},
	{"decode mean", "stage.decode.mean", "", "stage.decode"},
	{"TTFT mean", "stage.ttft.mean", "service.client_ttft.mean", ""},
	{"TTFT p99", "stage.ttft.p99", "service.client_ttft.p99", ""},
	{"ITL mean", "stage.itl.mean", "service.client_itl.mean", ""},
	{"ITL p99", "stage.itl.p99", "service.client_itl.p99", ""},
	{"E2E mean", "service.e2e.mean", "service.client_e2e.mean", ""},
	{"E2E p99", "service.e2e.p99", "service.client_e2e.p99", ""},
}

// Gates lists the names --fail-on-regression takes, each a latency figure.
func Gates() map[string]string {
	out := map[string]string{}
	for _, l := range latency {
		stage, stat, _ := strings.Cut(l.path, ".")
		parts := strings.Split(stat, ".")
		if stage == "stage" || stage == "service" {
			out[parts[0]+"_"+parts[len(parts)-1]] = l.name
		}
	}
	return out
}

// Compare sets after beside before.
func Compare(before, after *advisor.Diagnosis, beforeName, afterName string, opt Options) *Comparison {
	c := &Comparison{Schema: Schema,
		Before: Side{Name: beforeName, Sources: before.Sources, Window: before.Window},
		After:  Side{Name: afterName, Sources: after.Sources, Window: after.Window}}
	used := map[int]bool{}
	// Two request files name their targets by file: one target a side is
	// the same deployment, said so.
	if len(before.Targets) == 1 && len(after.Targets) == 1 && !SameTarget(before.Targets[0].Target, after.Targets[0].Target) {
		c.Notes = append(c.Notes, fmt.Sprintf("each side has one target, compared as one: %s before, %s after",
			name(before.Targets[0].Target), name(after.Targets[0].Target)))
		c.Targets = append(c.Targets, compareTarget(before.Targets[0], after.Targets[0], opt))
		return c
	}
	for _, b := range before.Targets {
		j := slices.IndexFunc(after.Targets, func(a advisor.TargetReport) bool { return SameTarget(a.Target, b.Target) })
		for j >= 0 && used[j] {
			k := slices.IndexFunc(after.Targets[j+1:], func(a advisor.TargetReport) bool { return SameTarget(a.Target, b.Target) })
			if k < 0 {
				j = -1
			} else {
				j += 1 + k
			}
		}
		if j < 0 {
			c.Unmatched = append(c.Unmatched, Unmatched{Target: b.Target, Side: "before"})
			continue
		}
		used[j] = true
		c.Targets = append(c.Targets, compareTarget(b, after.Targets[j], opt))
	}
	for j, a := range after.Targets {
		if !used[j] {
			c.Unmatched = append(c.Unmatched, Unmatched{Target: a.Target, Side: "after"})
		}
	}
	return c
}

// name is a target as a line names it.
func name(t evidence.Target) string {
	s := t.Model
	for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
		s += fmt.Sprintf(" %s=%s", k, t.Labels[k])
	}
	return s
}

// SameTarget: the same model with the same grouping labels. The instance
// and engine are left out: they come from the labels when they group.
func SameTarget(a, b evidence.Target) bool {
	if a.Model != b.Model || len(a.Labels) != len(b.Labels) {
		return false
	}
	for k, v := range a.Labels {
		if b.Labels[k] != v {
			return false
		}
	}
	return true
}

// value is the number at path in a target's evidence, nil when absent or
// withheld: a node an inconsistency names was never used by the diagnosis,
// and is not compared.
func value(t advisor.TargetReport, path string) *float64 {
	for _, in := range t.Inconsistencies {
		// A quantile misplaced within its bucket is still within the
		// band compare gives it (half the bucket's width on each side).
		if in.Check == "quantiles-out-of-order" {
			continue
		}
		for _, f := range in.Fields {
			if path == f || strings.HasPrefix(path, f+".") {
				return nil
			}
		}
	}
	return number(t.Evidence, path)
}

func compareTarget(b, a advisor.TargetReport, opt Options) Target {
	t := Target{Target: a.Target, Bottleneck: [2]string{b.Primary.Bottleneck, a.Primary.Bottleneck}}
	for _, c := range conditions {
		tol := c.tolerance
		if x, ok := opt.Tolerances[c.key]; ok {
			tol = x
		}
		cd := Condition{Name: c.name, Path: c.path, Kind: c.kind, Tolerance: tol, Absolute: c.absolute,
			Before: value(b, c.path), After: value(a, c.path)}
		if cd.Before == nil && cd.After == nil {
			continue
		}
		if cd.Before != nil && cd.After != nil {
			var ch float64
			switch {
			case c.absolute:
				ch = *cd.After - *cd.Before
			case *cd.Before == *cd.After:
				ch = 0
			case *cd.Before == 0:
				ch = math.Inf(1)
			default:
				ch = *cd.After / *cd.Before - 1
			}
			if !math.IsInf(ch, 0) {
				cd.Change = &ch
			}
			cd.Beyond = math.IsInf(ch, 0) || math.Abs(ch) > tol+1e-9
		} else {
			cd.Beyond = true // measured on one side only
		}
		t.Conditions = append(t.Conditions, cd)
	}
	for _, l := range latency {
		path := l.path
		if value(b, path) == nil || value(a, path) == nil {
			if l.client == "" {
				continue
			}
			path = l.client
		}
		d := Delta{Name: l.name, Path: path, Before: value(b, path), After: value(a, path)}
		if d.Before == nil || d.After == nil {
			continue
		}
		dist := l.dist
		if dist == "" {
			dist = path[:strings.LastIndex(path, ".")]
		}
		stat := path[strings.LastIndex(path, ".")+1:]
		nb, na := noise(b, dist, stat), noise(a, dist, stat)
		// A quantile read from a histogram is known to its bucket: half
		// its width is added to each side's band.
		if r, ok := b.Resolution[path]; ok {
			nb = math.Hypot(nb, (r[1]-r[0])/2)
		}
		if r, ok := a.Resolution[path]; ok {
			na = math.Hypot(na, (r[1]-r[0])/2)
		}
		if *d.Before > 0 {
			ch := *d.After / *d.Before - 1
			d.Change = &ch
			if !math.IsNaN(nb) && !math.IsNaN(na) {
				// Both sides' bands, added as independent errors.
				n := math.Hypot(nb, na) / *d.Before
				d.Noise = &n
				// A change under 1% is none, whatever the counts: it
				// would be no news to anyone.
				d.Significant = math.Abs(*d.After-*d.Before) > math.Hypot(nb, na) && math.Abs(ch) >= minChange
			}
		}
		t.Latency = append(t.Latency, d)
	}
	if sb, sa := b.Target.ServedBy, a.Target.ServedBy; sb != sa {
		t.Settings = append(t.Settings, fmt.Sprintf("serving engine %s → %s", orUnknown(sb), orUnknown(sa)))
	}
	t.Appeared, t.Cleared = findingsDiff(b.Findings, a.Findings)
	t.Verdict, t.Why = judge(t)
	return t
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// judge: not comparable when any part of the traffic moved beyond its
// tolerance, whatever the latency did: near saturation a few percent more
// arrivals can triple the queue, and longer outputs lengthen decode in
// proportion, so a latency change beside a traffic change cannot be put
// down to anything else. Else changed when a figure moved past its noise;
// else no change.
func judge(t Target) (string, string) {
	var moved []string
	for _, c := range t.Conditions {
		if c.Kind != "workload" || !c.Beyond {
			continue
		}
		switch {
		case c.Change == nil && c.Before != nil && c.After != nil:
			moved = append(moved, fmt.Sprintf("%s from %g to %g", c.Name, *c.Before, *c.After))
		case c.Change == nil:
			moved = append(moved, c.Name+" measured on one side only")
		case c.Absolute:
			moved = append(moved, c.Name+" "+FormatChange(*c.Change, true))
		default:
			moved = append(moved, c.Name+" "+FormatChange(*c.Change, false))
		}
	}
	var changed []string
	for _, d := range t.Latency {
		if d.Significant {
			changed = append(changed, d.Name+" "+FormatChange(*d.Change, false))
		}
	}
	settings := slices.Clone(t.Settings)
	for _, c := range t.Conditions {
		if c.Kind == "config" && c.Beyond {
			settings = append(settings, c.Name)
		}
	}
	var unknown []string
	for _, d := range t.Latency {
		if d.Noise == nil {
			unknown = append(unknown, d.Name)
		}
	}
	switch {
	case len(moved) > 0:
		return NotComparable, "not comparable: the traffic changed (" + strings.Join(moved, ", ") + "), so a latency change cannot be put down to anything else"
	case len(changed) > 0:
		why := "changed: " + strings.Join(changed, ", ")
		if len(settings) > 0 {
			why += "; settings changed: " + strings.Join(settings, ", ")
		}
		return Changed, why
	case len(t.Latency) == 0:
		return Inconclusive, "inconclusive: no latency figure is in both diagnoses"
	case len(unknown) > 0:
		return Inconclusive, "inconclusive: nothing moved beyond a known band, but the band of " + strings.Join(unknown, ", ") +
			" is unknown (a tail past p99 with no largest value, no request count, or a figure at zero before)"
	}
	return NoChange, "no change: every latency figure is within its noise band"
}

func findingsDiff(before, after []advisor.Finding) (appeared, cleared []string) {
	ids := func(fs []advisor.Finding) map[string]bool {
		m := map[string]bool{}
		for _, f := range fs {
			m[f.Rule] = true
		}
		return m
	}
	b, a := ids(before), ids(after)
	for id := range a {
		if !b[id] {
			appeared = append(appeared, id)
		}
	}
	for id := range b {
		if !a[id] {
			cleared = append(cleared, id)
		}
	}
	sort.Strings(appeared)
	sort.Strings(cleared)
	return appeared, cleared
}

// number is the value at a dotted path of the evidence tree; nil when absent
// or not a finite number.
func number(ev map[string]any, path string) *float64 {
	if x := evidence.TreeNumber(ev, path); evidence.Present(x) {
		return &x
	}
	return nil
}

// minChange is the smallest change reported, however tight the band.
const minChange = 0.01

// z is the normal quantile of a two-sided 95% band.
const z = 1.96

// noise is the half-width, in the statistic's unit, of the 95% band within
// which the statistic of a distribution (dist: a path such as stage.ttft)
// moves from sampling alone; NaN when the distribution does not say enough.
//
// n is the number of requests behind the distribution (of its own source:
// the server's finished requests, or the client's), not its count: the
// inter-token gaps of one request are alike. A quantile: its rank is
// p·n ± z·√(n·p·(1−p)); the band is where the distribution's own quantiles
// put those ranks, interpolated between p50, p90, p95, p99 and the largest
// value (max, or the top of the highest histogram bucket holding one).
// Past p99 without a largest value the tail is unknown, and so is the band.
// A mean: z·σ/√n, σ² the body's, ((p99 − p50)/2.326)², plus what the top 1%
// could add were it all at the largest value: no tail can make it wider.
func noise(t advisor.TargetReport, dist, stat string) float64 {
	get := func(k string) float64 {
		if v := value(t, dist+"."+k); v != nil {
			return *v
		}
		return math.NaN()
	}
	n := get("count")
	reqs := "service.finished"
	if strings.HasPrefix(dist, "service.client_") {
		reqs = "service.client_requests"
	}
	perToken := strings.HasSuffix(dist, "itl") || strings.HasSuffix(dist, "tpot")
	switch r := value(t, reqs); {
	case r != nil && *r >= 1:
		n = math.Min(n, *r)
	case perToken:
		return math.NaN() // tokens, not requests: no count of draws
	}
	if !(n >= 2) {
		return math.NaN()
	}
	pts := [][2]float64{{0.5, get("p50")}, {0.9, get("p90")}, {0.95, get("p95")}, {0.99, get("p99")}}
	for _, p := range pts {
		if math.IsNaN(p[1]) {
			return math.NaN()
		}
	}
	top := get("max")
	if r, ok := t.Resolution[dist+".max"]; ok && math.IsNaN(top) {
		top = r[1]
	}
	if !math.IsNaN(top) && !math.IsInf(top, 0) && top >= pts[3][1] {
		pts = append(pts, [2]float64{1, top})
	} else {
		top = math.NaN()
	}
	switch stat {
	case "mean":
		if math.IsNaN(top) {
			return math.NaN()
		}
		body := (pts[3][1] - pts[0][1]) / 2.326
		sigma := math.Sqrt(body*body + 0.01*(top-pts[0][1])*(top-pts[0][1]))
		return z * sigma / math.Sqrt(n)
	case "p50", "p90", "p95", "p99":
		p, _ := strconv.ParseFloat(stat[1:], 64) // one of the four above
		p /= 100
		// One rank more either way: a sample quantile is an order
		// statistic, and small samples move it by whole ranks.
		h := z*math.Sqrt(p*(1-p)/n) + 1/n
		if p+h > 0.99 && math.IsNaN(top) {
			return math.NaN()
		}
		v := at(pts, p)
		return math.Max(at(pts, math.Min(p+h, 1))-v, v-at(pts, math.Max(p-h, 0)))
	}
	return math.NaN()
}

// at interpolates the quantile curve through pts at p; before the first
// point and past the last it goes on at the slope of the nearest two.
func at(pts [][2]float64, p float64) float64 {
	i := 1
	for i < len(pts)-1 && p > pts[i][0] {
		i++
	}
	a, b := pts[i-1], pts[i]
	if b[0] == a[0] {
		return b[1]
	}
	v := a[1] + (b[1]-a[1])*(p-a[0])/(b[0]-a[0])
	return math.Max(v, 0)
}

// Gate checks the latency figures against limits (by Gates' names, a share
// of growth each): a figure fails when it grew past its limit and past its
// noise. A gate no target could judge — its figure missing, its band
// unknown, or the runs not comparable — is listed in Unevaluated: it does
// not pass. It reports whether any gate failed or went unjudged.
func (c *Comparison) Gate(limits map[string]float64) bool {
	names := Gates()
	keys := slices.Sorted(maps.Keys(limits))
	for _, k := range keys {
		judged := false
		for _, t := range c.Targets {
			if t.Verdict == NotComparable {
				continue
			}
			for _, d := range t.Latency {
				if d.Name != names[k] || d.Noise == nil || d.Change == nil {
					continue
				}
				judged = true
				if d.Significant && *d.Change > limits[k] {
					c.Regressions = append(c.Regressions, Regression{Target: t.Target, Gate: k, Delta: d, Limit: limits[k]})
				}
			}
		}
		if !judged {
			c.Unevaluated = append(c.Unevaluated, k)
		}
	}
	return len(c.Regressions)+len(c.Unevaluated) > 0
}

// FormatChange writes a relative change as a signed percent, a growth past
// double as a multiple (×21), a fall past 99% with the decimal it needs;
// an absolute one (of a share) in points.
func FormatChange(x float64, absolute bool) string {
	switch {
	case absolute:
		return fmt.Sprintf("%+.0f pt", x*100)
	case x >= 9:
		return fmt.Sprintf("×%.0f", x+1)
	case x >= 1:
		return fmt.Sprintf("×%.1f", x+1)
	case x <= -0.99:
		return fmt.Sprintf("%.2f%%", x*100)
	case math.Abs(x) < 0.095:
		return fmt.Sprintf("%+.1f%%", x*100)
	}
	return fmt.Sprintf("%+.0f%%", x*100)
}
