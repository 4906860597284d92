package view

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmdoctor/llmdoctor/compare"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// MaxBand is the widest noise band shown as a number: past ±100% the band
// reaches below zero latency, so it says only that the figure's samples
// (or its histogram's buckets) are too few or too coarse to place it.
const MaxBand = 1.0

// WideBand is how a band wider than MaxBand is shown.
const WideBand = "> ±100%"

// WideBandNote says why a band is shown as WideBand.
const WideBandNote = "a noise band past ±100% is shown as > ±100%: wider than the figure itself, it says only that the figure's samples (or its histogram's buckets) are too few or too coarse to place it; a change still counts (Δ) when it is past the band"

// Comparison is a comparison as people read it.
type Comparison struct {
	// Empty is the "nothing to compare" text when no target is in both.
	Empty   string
	Targets []Compared
	// Regressions are the gates that failed, a line each.
	Regressions []string
	// Unjudged says which gates could not be judged and why, "" when every
	// gate was judged.
	Unjudged string
	// WideBand is WideBandNote when a row shows WideBand.
	WideBand string
}

// Compared is one target on both sides.
type Compared struct {
	Name string
	// Verdict is compare's (no-change, changed, not-comparable,
	// inconclusive); Severity healthy, warning, inconclusive or critical
	// (a gate failed or went unjudged); Mark and Word say the verdict
	// ("= NO CHANGE", "Δ CHANGED", "? NOT COMPARABLE", "? INCONCLUSIVE").
	Verdict, Severity, Mark, Word string
	// Regressed: a gate failed on this target.
	Regressed bool
	// Why is compare's line without the verdict it starts with.
	Why                 string
	Bottleneck          [2]string
	Appeared, Cleared   []string
	Latency, Conditions []Row
	Report              *compare.Target
}

// Row is a figure or a condition on both sides.
type Row struct {
	Name, Path, Kind, Before, After, Change string
	// Band is the noise band of a figure or the tolerance of a condition.
	Band string
	// Flag: a figure moved past its band, a condition past its tolerance.
	Flag bool
}

// ComparisonOf builds the view of a comparison.
func ComparisonOf(c *compare.Comparison) Comparison {
	var v Comparison
	if len(c.Targets) == 0 {
		v.Empty = "No target is in both diagnoses: nothing to compare."
	}
	for i := range c.Targets {
		t := &c.Targets[i]
		ct := Compared{Name: Name(t.Target), Verdict: t.Verdict, Bottleneck: t.Bottleneck, Appeared: t.Appeared,
			Cleared: t.Cleared, Report: t, Why: strings.TrimPrefix(t.Why, strings.ReplaceAll(t.Verdict, "-", " ")+": ")}
		switch t.Verdict {
		case compare.NoChange:
			ct.Severity, ct.Mark, ct.Word = Healthy, "=", "NO CHANGE"
		case compare.Changed:
			ct.Severity, ct.Mark, ct.Word = Warning, "Δ", "CHANGED"
		case compare.NotComparable:
			ct.Severity, ct.Mark, ct.Word = Inconclusive, "?", "NOT COMPARABLE"
		default:
			ct.Severity, ct.Mark, ct.Word = Inconclusive, "?", "INCONCLUSIVE"
		}
		for _, r := range c.Regressions {
			if compare.SameTarget(r.Target, t.Target) {
				ct.Regressed = true
			}
		}
		ct.Latency, ct.Conditions = rows(*t)
		for _, r := range ct.Latency {
			if r.Band == WideBand {
				v.WideBand = WideBandNote
			}
		}
		v.Targets = append(v.Targets, ct)
	}
	for _, r := range c.Regressions {
		v.Regressions = append(v.Regressions, fmt.Sprintf("%s: %s %s → %s (%s, limit +%s)", Name(r.Target), r.Gate,
			Seconds(r.Delta.Before), Seconds(r.Delta.After), changePtr(r.Delta.Change, false), Limit(r.Limit)))
	}
	v.Unjudged = unjudged(c)
	return v
}

// rows are a target's latency figures and conditions as every format
// prints them.
func rows(t compare.Target) (latency, conds []Row) {
	for _, d := range t.Latency {
		latency = append(latency, Row{Name: d.Name, Path: d.Path, Kind: "latency", Before: Seconds(d.Before), After: Seconds(d.After),
			Change: changePtr(d.Change, false), Band: Band(d.Noise), Flag: d.Significant})
	}
	for _, cd := range t.Conditions {
		tol := "equal"
		if cd.Tolerance > 0 {
			tol = "±" + strings.TrimPrefix(compare.FormatChange(cd.Tolerance, cd.Absolute), "+")
		}
		r := Row{Name: cd.Name, Path: cd.Path, Kind: cd.Kind, Before: condValue(cd.Path, cd.Before), After: condValue(cd.Path, cd.After),
			Change: changePtr(cd.Change, cd.Absolute), Band: tol, Flag: cd.Beyond}
		if onOff(cd.Path) {
			r.Change = "—"
			if cd.Before != nil && cd.After != nil {
				r.Change = map[bool]string{true: "same", false: "changed"}[*cd.Before == *cd.After]
			}
		}
		conds = append(conds, r)
	}
	return latency, conds
}

// Band is a noise band's half-width, relative: ±12%, ±0.8%; "unknown"
// when there is none, WideBand past MaxBand.
func Band(x *float64) string {
	switch {
	case x == nil:
		return "unknown"
	case *x > MaxBand:
		return WideBand
	case *x < 0.095:
		return fmt.Sprintf("±%.1f%%", *x*100)
	}
	return fmt.Sprintf("±%.0f%%", *x*100)
}

// Seconds is a latency figure, "—" when a side lacks it.
func Seconds(x *float64) string {
	if x == nil {
		return "—"
	}
	return units.Duration(*x)
}

// Limit is a gate's limit as a growth: 10%.
func Limit(x float64) string { return strings.TrimPrefix(compare.FormatChange(x, false), "+") }

// Change is a change as compare writes it, "—" when unknown.
func Change(x *float64, absolute bool) string { return changePtr(x, absolute) }

func changePtr(x *float64, absolute bool) string {
	if x == nil {
		return "—"
	}
	return compare.FormatChange(*x, absolute)
}

// onOff says whether a condition is a switch (1 on, 0 off).
func onOff(path string) bool { return path == "cond.prefix_caching" }

// condValue is a condition's value in its unit: a share as a percent,
// bytes in GB, a switch as on or off.
func condValue(path string, x *float64) string {
	if x == nil {
		return "—"
	}
	switch {
	case onOff(path):
		return map[bool]string{true: "on", false: "off"}[*x != 0]
	case strings.Contains(path, "share") || strings.Contains(path, "hit_rate") || strings.Contains(path, "utilization"):
		return units.WholePercent(*x)
	case strings.HasSuffix(path, "_bytes"):
		return fmt.Sprintf("%.1f GB", *x/1e9)
	}
	return units.Number(*x)
}

// unjudged says which gates no target could judge, each with why, and
// that a gate does not pass unjudged; "" when every gate was judged.
func unjudged(c *compare.Comparison) string {
	if len(c.Unevaluated) == 0 {
		return ""
	}
	names := compare.Gates()
	// Gates that went unjudged for the same reason are named together.
	var reasons []string
	gates := map[string][]string{}
	for _, k := range c.Unevaluated {
		why := gateWhy(c, names[k])
		if _, ok := gates[why]; !ok {
			reasons = append(reasons, why)
		}
		gates[why] = append(gates[why], k)
	}
	var parts []string
	for _, why := range reasons {
		g := gates[why]
		s := "the gate " + g[0]
		if len(g) > 1 {
			s = "the gates " + strings.Join(g, ", ")
		}
		parts = append(parts, s+": "+why)
	}
	return strings.Join(parts, "; ") + ". A gate does not pass unjudged."
}

// gateWhy says why no target judged the figure named.
func gateWhy(c *compare.Comparison, figure string) string {
	if len(c.Targets) == 0 {
		return "no target is in both diagnoses"
	}
	var why []string
	add := func(s string) {
		if !slices.Contains(why, s) {
			why = append(why, s)
		}
	}
	for _, t := range c.Targets {
		if t.Verdict == compare.NotComparable {
			add("the runs are not comparable (the traffic changed)")
			continue
		}
		found := false
		for _, d := range t.Latency {
			if d.Name != figure {
				continue
			}
			found = true
			switch {
			case d.Before == nil && d.After == nil:
				add(figure + " missing on both sides")
			case d.Before == nil:
				add(figure + " missing before")
			case d.After == nil:
				add(figure + " missing after")
			case d.Change == nil:
				add(figure + " is zero before, so it has no relative change")
			case d.Noise == nil:
				add(figure + "'s noise band is unknown (too few samples to bound it)")
			}
		}
		if !found {
			add(figure + " missing on both sides")
		}
	}
	if len(why) == 0 {
		return "no target could judge it"
	}
	return strings.Join(why, "; ")
}
