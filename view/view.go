// Package view decides what a person reads of a diagnosis, a checklist and
// a comparison: the verdict in words and its severity, the names of
// targets, which findings and next steps come first and how many the first
// screen shows, what could not be checked and how many, the text when
// nothing was found, the checklist's gate and a comparison's rows. Every
// renderer in report prints a view and decides none of it again, so that
// the text report, Slack, HTML, Markdown and JUnit cannot disagree.
package view

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// Severities, as every format names them: the class of a verdict, a
// finding or a message's colour bar.
const (
	Critical     = "critical"
	Warning      = "warning"
	Info         = "info"
	Healthy      = "healthy"
	Inconclusive = "inconclusive"
)

// Verdict statuses (advisor.Primary.Status).
const (
	Found        = "found"
	Tentative    = "tentative"
	StatusOK     = "healthy"
	Suppressed   = "suppressed"
	Undetermined = "inconclusive"
)

// NoTargets is what a diagnosis says when no source gave a target.
const NoTargets = "No serving-engine metrics found in the sources: nothing to diagnose."

// NoTargetsChecklist is what a checklist says when no source gave a target.
const NoTargetsChecklist = "No serving-engine metrics or request files found in the sources: nothing was checked."

// First-screen sizes: how many findings (not counting those another one
// explains) and how many next steps, cheapest first, a report shows before
// it sends the reader to the details.
const (
	FirstFindings = 3
	FirstSteps    = 5
)

// Diagnosis is a diagnosis as people read it.
type Diagnosis struct {
	// Empty is the "nothing to diagnose" text when there is no target.
	Empty   string
	Targets []Target
}

// Target is one target's diagnosis as people read it.
type Target struct {
	// Name names the target ("model m, instance i").
	Name    string
	Verdict Verdict
	// Findings are the findings no other one explains, in the advisor's
	// order, each with those it explains; First of them make the first
	// screen.
	Findings []Finding
	// Steps are the next steps, cheapest first; FirstSteps of them make
	// the first screen.
	Steps []advisor.Step
	// Gaps say what could not be checked.
	Gaps Gaps
	// Checks is the line counting rule outcomes.
	Checks string
	// Report is the target as the advisor gave it, for the numbers a
	// renderer draws (latency map, curves, members).
	Report *advisor.TargetReport
}

// Verdict is a target's verdict in words.
type Verdict struct {
	// Status is found, tentative, healthy, suppressed or inconclusive;
	// Bottleneck the advisor's ("none" when healthy, "unknown").
	Status, Bottleneck string
	// Names is what the verdict names: the bottleneck, "healthy" or
	// "inconclusive".
	Names string
	// Tentative: the verdict rests on a few readings, not a window.
	Tentative bool
	// Severity is critical, warning, info, healthy or inconclusive: the
	// class and colour of the verdict; a suppressed root cause is a warning.
	Severity string
	// Mark and Word say the severity in a symbol and a word
	// (✗ CRITICAL, ! WARNING, i INFO, ✓ HEALTHY, ~ SUPPRESSED, ? INCONCLUSIVE).
	Mark, Word string
	// Summary is the advisor's line; Impact the share of latency the
	// verdict's stage holds ("" when unknown).
	Summary, Impact string
	// Lines qualifying the verdict, in order: what a tentative verdict
	// rests on, what else kept the target from healthy, what it was judged
	// against.
	TentativeLine string
	Against       []string
	JudgedLine    string
	// Unchecked are deciding rules that could not run, for a verdict that
	// names a bottleneck; Bounded deciding rules quiet by a bound.
	Unchecked []string
	Bounded   []string
	// SuppressedRules are the findings the configuration suppressed.
	SuppressedRules []string
}

// Finding is a finding with those it explains.
type Finding struct {
	advisor.Finding
	// Severity names: Mark and Word as a verdict's.
	Mark, Word string
	// Impact is its share of latency in words ("" when unknown or
	// explained by another).
	Impact    string
	Explained []advisor.Finding
}

// Gaps are what could not be checked on a target.
type Gaps struct {
	// CouldNotRun is how many rules could not run (their inputs missing):
	// the count every format gives under that name. Bounded is how many
	// more lacked inputs but could not have fired.
	CouldNotRun, Bounded int
	// Open are the gaps of rules that could not run; BoundedGaps those
	// quiet by a bound.
	Open, BoundedGaps []advisor.Gap
	// Engine names the rules that could not run for want of the serving
	// engine's metrics when no source gave them (named on one line); Rest
	// are the other gaps, bounded ones included, listed one by one.
	Engine []string
	Rest   []advisor.Gap
	// Skipped say which rules were skipped because a whole source is
	// absent: "7 dcgm rules skipped: no dcgm data".
	Skipped []Skipped
}

// Skipped is the rules skipped for want of one source.
type Skipped struct {
	Source, How string
	Rules       []string
	// Line says it: "7 dcgm rules skipped: no dcgm data".
	Line string
}

// Of builds the view of a diagnosis.
func Of(d *advisor.Diagnosis) Diagnosis {
	var v Diagnosis
	if len(d.Targets) == 0 {
		v.Empty = NoTargets
	}
	for i := range d.Targets {
		v.Targets = append(v.Targets, TargetOf(&d.Targets[i]))
	}
	return v
}

// TargetOf builds the view of one target.
func TargetOf(t *advisor.TargetReport) Target {
	v := Target{Name: Name(t.Target), Verdict: VerdictOf(t), Steps: t.Next, Report: t}
	for _, f := range t.Findings {
		if f.ExplainedBy != "" {
			continue
		}
		vf := FindingOf(f)
		for _, g := range t.Findings {
			if g.ExplainedBy == f.Rule {
				vf.Explained = append(vf.Explained, g)
			}
		}
		v.Findings = append(v.Findings, vf)
	}
	v.Gaps = GapsOf(t)
	v.Checks = ChecksLine(t.Checks)
	return v
}

// FirstFindings are the findings the first screen shows.
func (t Target) FirstFindings() []Finding { return t.Findings[:min(len(t.Findings), FirstFindings)] }

// MoreFindings are the findings the first screen leaves for the details.
func (t Target) MoreFindings() []Finding { return t.Findings[min(len(t.Findings), FirstFindings):] }

// FirstSteps are the next steps the first screen shows.
func (t Target) FirstSteps() []advisor.Step { return t.Steps[:min(len(t.Steps), FirstSteps)] }

// FindingOf names a finding's severity and impact.
func FindingOf(f advisor.Finding) Finding {
	vf := Finding{Finding: f}
	vf.Mark, vf.Word = SeverityMark(f.Severity)
	if f.Impact != nil && f.ExplainedBy == "" {
		vf.Impact = units.WholePercent(*f.Impact) + " of " + StageLatency(f.Stage)
	}
	return vf
}

// SeverityMark is a finding's severity as a symbol and a word: the
// meaning never rests on colour alone.
func SeverityMark(sev string) (mark, word string) {
	switch sev {
	case Critical:
		return "✗", "CRITICAL"
	case Warning:
		return "!", "WARNING"
	}
	return "i", "INFO"
}

// VerdictOf decides a target's verdict in words.
func VerdictOf(t *advisor.TargetReport) Verdict {
	p := t.Primary
	v := Verdict{Status: p.Status, Bottleneck: p.Bottleneck, Summary: p.Summary, Tentative: p.Status == Tentative,
		TentativeLine: p.TentativeLine(), JudgedLine: p.JudgedLine()}
	v.Names, v.Severity, v.Mark, v.Word = Classify(p.Status, p.Bottleneck, findingSeverity(t, p.Rule))
	if p.Impact != nil {
		v.Impact = units.WholePercent(*p.Impact) + " of the latency users wait"
		for _, f := range t.Findings {
			if f.Rule == p.Rule && f.Stage != "" {
				v.Impact = units.WholePercent(*p.Impact) + " of " + StageLatency(f.Stage)
			}
		}
	}
	for i, a := range p.Against {
		if i > 0 && p.Bottleneck == "unknown" {
			v.Against = append(v.Against, "also against healthy: "+a.Why)
		}
	}
	if p.Found() {
		v.Unchecked = p.Unchecked
	}
	for _, b := range p.Bounded {
		v.Bounded = append(v.Bounded, b.Rule+" lacked inputs, but "+b.Why+".")
	}
	for _, f := range t.Suppressed {
		v.SuppressedRules = append(v.SuppressedRules, f.Rule)
	}
	return v
}

// Classify words a verdict from its status, its bottleneck and the
// severity of the finding that names it: what the verdict names, its
// severity class, its symbol and its word. A verdict that names a
// bottleneck is as severe as its finding (info when that is neither
// critical nor a warning); a suppressed root cause is a warning.
func Classify(status, bottleneck, severity string) (names, sev, mark, word string) {
	switch {
	case status == Found || (status == Tentative && bottleneck != "none"):
		sev = severity
		if sev != Critical && sev != Warning {
			sev = Info
		}
		mark, word = SeverityMark(sev)
		return bottleneck, sev, mark, word
	case status == StatusOK || status == Tentative:
		return "healthy", Healthy, "✓", "HEALTHY"
	case status == Suppressed:
		return bottleneck, Warning, "~", "SUPPRESSED"
	}
	return "inconclusive", Inconclusive, "?", "INCONCLUSIVE"
}

// Headline is the verdict in words: "Verdict: queueing", "Tentative
// verdict: healthy", "Verdict: queueing, suppressed".
func (v Verdict) Headline() string {
	s := "Verdict: " + v.Names
	if v.Tentative {
		s = "Tentative verdict: " + v.Names
	}
	if v.Status == Suppressed {
		s += ", suppressed"
	}
	return s
}

// Title is the verdict as a page or a notification titles it:
// "queueing", "queueing (tentative)", "healthy", "inconclusive".
func (v Verdict) Title() string {
	if v.Tentative {
		return v.Names + " (tentative)"
	}
	return v.Names
}

// SuppressedLine says under a verdict which findings the configuration
// suppressed, and where to read why; "" when none was.
func (v Verdict) SuppressedLine(see string) string {
	n := len(v.SuppressedRules)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d finding%s suppressed by configuration: %s (%s).", n, Plural(n), strings.Join(v.SuppressedRules, ", "), see)
}

func findingSeverity(t *advisor.TargetReport, rule string) string {
	for _, f := range t.Findings {
		if f.Rule == rule {
			return f.Severity
		}
	}
	return ""
}

// GapsOf sorts what could not be checked on a target.
func GapsOf(t *advisor.TargetReport) Gaps {
	var g Gaps
	for _, gap := range t.Gaps {
		if gap.Bounded != "" {
			g.BoundedGaps = append(g.BoundedGaps, gap)
		} else {
			g.Open = append(g.Open, gap)
		}
	}
	g.CouldNotRun, g.Bounded = len(g.Open), len(g.BoundedGaps)
	g.Rest, g.Engine = engineGaps(t)
	for _, sk := range t.Skipped {
		g.Skipped = append(g.Skipped, Skipped{Source: sk.Source, How: sk.How, Rules: sk.Rules,
			Line: fmt.Sprintf("%d %s rule%s skipped: no %s data", len(sk.Rules), sk.Source, Plural(len(sk.Rules)), sk.Source)})
	}
	return g
}

// CouldNotRunLine is the first screen's count of what could not be
// checked: "3 checks could not run (2 for want of the engine's metrics)";
// "" when every rule ran.
func (g Gaps) CouldNotRunLine() string {
	n := g.CouldNotRun
	if n == 0 {
		return ""
	}
	s := fmt.Sprintf("%d check%s could not run", n, Plural(n))
	switch e := len(g.Engine); {
	case e > 0 && e < n:
		s += fmt.Sprintf(" (%d for want of the engine's metrics)", e)
	case e > 0:
		s += " for want of the engine's metrics"
	}
	return s
}

// EngineLine names on one line the checks that need the serving engine's
// metrics when no source gives them; "" when there are none.
func (g Gaps) EngineLine() string {
	n := len(g.Engine)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d check%s need the serving engine's metrics, which no source here gives (add --prom URL, or --target URL for its /metrics): %s",
		n, Plural(n), strings.Join(g.Engine, ", "))
}

// Needs lists what a gap's rule needs: "stage.queue, stage.ttft (too few samples)".
func Needs(g advisor.Gap) []string {
	var miss []string
	for _, m := range g.Details {
		if m.Why == "missing" || m.Why == "" {
			miss = append(miss, m.Path)
		} else {
			miss = append(miss, m.Path+" ("+m.Why+")")
		}
	}
	return miss
}

// ChecksLine counts rule outcomes: "checks: 4 fired · 26 quiet (2 bounded) · 1 could not run".
func ChecksLine(c advisor.Checks) string {
	bounded := ""
	if c.Bounded > 0 {
		bounded = fmt.Sprintf(" (%d bounded)", c.Bounded)
	}
	return fmt.Sprintf("checks: %d fired · %d quiet%s · %d could not run", c.Fired, c.Quiet, bounded, c.Insufficient)
}

// engineGaps splits a target's gaps when no engine metrics were read for
// it (request files or a benchmark alone): the rules that need a number
// only the engine gives are named on one line instead of one gap each with
// the same advice. The rest, and every gap of a target with engine
// metrics, are listed as they are.
func engineGaps(t *advisor.TargetReport) (rest []advisor.Gap, engine []string) {
	if t.Target.ServedBy != "" {
		return t.Gaps, nil
	}
	grouped := map[string]bool{}
	for _, g := range t.Gaps {
		if g.Bounded != "" {
			continue // quiet by a bound: what it says stays in sight
		}
		for _, m := range g.Details {
			if AllEngine([]string{m.Path}) {
				grouped[g.Rule] = true
			}
		}
	}
	for _, g := range t.Gaps {
		// A judgement of the whole diagnosis waits on rules: grouped
		// with them when they all are.
		all := len(g.Details) > 0 && g.Bounded == ""
		for _, m := range g.Details {
			all = all && grouped[m.Path]
		}
		if all {
			grouped[g.Rule] = true
		}
		if grouped[g.Rule] {
			engine = append(engine, g.Rule)
		} else {
			rest = append(rest, g)
		}
	}
	return rest, engine
}

// AllEngine reports whether every path is one only the serving engine's
// metrics give (not a benchmark or request file, not dcgm-exporter).
func AllEngine(paths []string) bool {
	for _, path := range paths {
		how, ok := evidence.HowOf(path)
		if !ok || strings.Contains(how, "per-request") || strings.Contains(how, "benchmark result") ||
			strings.Contains(strings.ToLower(how), "dcgm") {
			return false
		}
	}
	return true
}

// StageLatency names the latency a stage's share is of.
func StageLatency(stage string) string {
	switch stage {
	case "queue", "prefill", "front":
		return "mean TTFT (" + stage + ")"
	case "decode":
		return "mean end-to-end (decode)"
	case "itl_tail":
		return "the slowest gaps between tokens"
	case "transfer":
		return "mean TTFT (KV transfer)"
	}
	return "latency"
}

// Name names a target as every report does: "model m, instance i", with
// the other labels it was grouped by.
func Name(t evidence.Target) string {
	parts := []string{}
	if t.Model != "" {
		parts = append(parts, "model "+t.Model)
	}
	if t.Instance != "" {
		parts = append(parts, "instance "+t.Instance)
	}
	if t.Engine != "" {
		parts = append(parts, "engine "+t.Engine)
	}
	// The other labels the target was grouped by (--group-by namespace):
	// two targets of one model differ only there.
	for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
		if v := t.Labels[k]; v != t.Model && v != t.Instance && v != t.Engine {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "all series"
	}
	return strings.Join(parts, ", ")
}

// Value prints an evidence value in its catalogue unit.
func Value(path string, x float64) string {
	f, ok := evidence.Lookup(path)
	if !ok {
		return units.Number(x)
	}
	switch f.Unit {
	case "s":
		return units.Duration(x)
	case "ratio":
		return units.WholePercent(x)
	case "multiple":
		return units.Number(x) + "×"
	case "tokens":
		return units.Tokens(x)
	case "bytes/s":
		return units.BytesPerSecond(x)
	}
	return units.Number(x)
}

// Window says what time the evidence covers: "15m00s window, 30
// samples", "one snapshot: totals since server start"; "" when unknown.
// Renderers add the dates in their own form.
func Window(w advisor.Window) string {
	switch {
	case w.Cumulative:
		return "one snapshot: totals since server start"
	case w.Seconds > 0:
		return fmt.Sprintf("%s, %d sample%s", w.Length(), w.Points, Plural(w.Points))
	}
	return ""
}

// Plural is "s" unless n is 1.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
