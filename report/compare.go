package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmdoctor/llmdoctor/compare"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// ComparisonText writes a comparison for people: per target the verdict in
// a line, the conditions side by side (changes beyond tolerance marked),
// each latency figure before and after with its noise band, the
// bottleneck, the findings that appeared or cleared.
func ComparisonText(w io.Writer, c *compare.Comparison, o Options) error {
	width := o.Width
	if width <= 0 {
		width = 80
	}
	st := newStyles(w, ColorOn(o.Color, o.IsTerminal))
	p := &printer{w: w, width: width, st: st, details: true}
	p.fit(st.head.Render("llmdoctor comparison"))
	p.wrap("  ", "before: "+c.Before.Name+" "+sideWindow(c.Before))
	p.wrap("  ", "after:  "+c.After.Name+" "+sideWindow(c.After))
	for _, u := range c.Unmatched {
		p.wrap("  ", fmt.Sprintf("%s %s is in the %s diagnosis only", st.warn.Render("?"), targetName(u.Target), u.Side))
	}
	for _, n := range c.Notes {
		p.wrap("  ", "note: "+n)
	}
	for _, t := range c.Targets {
		p.blank()
		p.fit(st.head.Render("── " + targetName(t.Target)))
		mark := st.ok.Render("= NO CHANGE")
		switch t.Verdict {
		case compare.NotComparable:
			mark = st.warn.Render("? NOT COMPARABLE")
		case compare.Changed:
			mark = st.bold.Render("Δ CHANGED")
		}
		p.wrap("", mark+"  "+whyText(t))
		if t.Bottleneck[0] != t.Bottleneck[1] {
			p.wrap("  ", fmt.Sprintf("bottleneck: %s → %s", t.Bottleneck[0], t.Bottleneck[1]))
		} else {
			p.wrap("  ", "bottleneck: "+t.Bottleneck[0]+", both")
		}
		if len(t.Appeared) > 0 {
			p.wrap("  ", "findings appeared: "+strings.Join(t.Appeared, ", "))
		}
		if len(t.Cleared) > 0 {
			p.wrap("  ", "findings cleared: "+strings.Join(t.Cleared, ", "))
		}
		// The name column takes what the numbers leave, up to 26.
		nw := max(8, min(26, width-43))
		name := func(s string) string {
			s = ansi.Truncate(s, nw, "…")
			return s + strings.Repeat(" ", nw-ansi.StringWidth(s))
		}
		p.blank()
		p.line(fmt.Sprintf("  %s %9s %9s %7s  %s", name("Conditions"), "before", "after", "change", "tolerance"))
		latency, conds := comparedRows(t)
		row := func(r pageRow, flag string) {
			mark := " "
			if r.Flag {
				mark = flag
			}
			p.line(fmt.Sprintf("%s %s %9s %9s %7s  %s", mark, name(r.Name), r.Before, r.After, r.Change, r.Band))
		}
		for _, r := range conds {
			row(r, st.warn.Render("!"))
		}
		p.blank()
		p.line(fmt.Sprintf("  %s %9s %9s %7s  %s", name("Latency"), "before", "after", "change", "noise (95%)"))
		for _, r := range latency {
			row(r, st.bold.Render("Δ"))
		}
	}
	if len(c.Regressions) > 0 {
		p.blank()
		for _, r := range c.Regressions {
			p.wrap("", fmt.Sprintf("%s %s: %s %s → %s (%s, limit +%s)", st.crit.Render("✗ REGRESSION"), targetName(r.Target), r.Gate,
				fmtSeconds(r.Delta.Before), fmtSeconds(r.Delta.After), fmtChangePtr(r.Delta.Change, false), fmtLimit(r.Limit)))
		}
	}
	if len(c.Unevaluated) > 0 {
		p.blank()
		p.wrap("", st.crit.Render("✗ NOT JUDGED")+" "+unevaluatedText(c))
	}
	return p.err
}

func sideWindow(s compare.Side) string {
	if s.Window.Seconds > 0 {
		return "(" + units.Duration(s.Window.Seconds) + " window)"
	}
	return ""
}

func fmtSeconds(x *float64) string {
	if x == nil {
		return "—"
	}
	return units.Duration(*x)
}

func fmtValue(path string, x *float64) string {
	if x == nil {
		return "—"
	}
	switch {
	case strings.Contains(path, "share") || strings.Contains(path, "hit_rate") || strings.Contains(path, "utilization"):
		return units.WholePercent(*x)
	case strings.HasSuffix(path, "_bytes"):
		return fmt.Sprintf("%.1f GB", *x/1e9)
	}
	return units.Number(*x)
}

func fmtChangePtr(x *float64, absolute bool) string {
	if x == nil {
		return "—"
	}
	return fmtChange(*x, absolute)
}

// comparedRows are a target's latency figures and conditions as every
// format prints them: values, change, and the noise band or tolerance;
// Flag marks a figure past its band, a condition past its tolerance.
func comparedRows(t compare.Target) (latency, conds []pageRow) {
	for _, d := range t.Latency {
		band := "unknown"
		if d.Noise != nil {
			band = fmtBand(*d.Noise)
		}
		latency = append(latency, pageRow{Name: d.Name, Path: d.Path, Before: fmtSeconds(d.Before), After: fmtSeconds(d.After),
			Change: fmtChangePtr(d.Change, false), Band: band, Flag: d.Significant})
	}
	for _, cd := range t.Conditions {
		tol := "equal"
		if cd.Tolerance > 0 {
			tol = "±" + strings.TrimPrefix(fmtChange(cd.Tolerance, cd.Absolute), "+")
		}
		conds = append(conds, pageRow{Name: cd.Name, Path: cd.Path, Before: fmtValue(cd.Path, cd.Before), After: fmtValue(cd.Path, cd.After),
			Change: fmtChangePtr(cd.Change, cd.Absolute), Band: tol, Flag: cd.Beyond})
	}
	return latency, conds
}

// whyText is a target's why without the verdict it starts with, for a
// line that says the verdict already.
func whyText(t compare.Target) string {
	return strings.TrimPrefix(t.Why, strings.ReplaceAll(t.Verdict, "-", " ")+": ")
}

// fmtLimit is a gate's limit as a growth: 10%.
func fmtLimit(x float64) string { return strings.TrimPrefix(fmtChange(x, false), "+") }

// fmtBand is a noise band's half-width, relative: ±12%, ±0.8%.
func fmtBand(x float64) string {
	if x < 0.095 {
		return fmt.Sprintf("±%.1f%%", x*100)
	}
	return fmt.Sprintf("±%.0f%%", x*100)
}

// fmtChange is compare.FormatChange.
func fmtChange(x float64, absolute bool) string { return compare.FormatChange(x, absolute) }

// ComparisonMarkdown writes a comparison as Markdown, for a pull request:
// per target the verdict, then a table of the latency figures and one of
// the conditions side by side.
func ComparisonMarkdown(w io.Writer, c *compare.Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## llmdoctor comparison\n\nBefore: `%s` %s · after: `%s` %s\n", c.Before.Name, sideWindow(c.Before), c.After.Name, sideWindow(c.After))
	for _, u := range c.Unmatched {
		fmt.Fprintf(&b, "\n- %s is in the %s diagnosis only\n", targetName(u.Target), u.Side)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "\n- note: %s\n", n)
	}
	for _, t := range c.Targets {
		verdict := map[string]string{compare.NoChange: "= no change", compare.Changed: "Δ changed", compare.NotComparable: "? not comparable"}[t.Verdict]
		fmt.Fprintf(&b, "\n### %s\n\n**%s** — %s. Bottleneck: %s → %s.\n\n", targetName(t.Target), verdict,
			whyText(t), t.Bottleneck[0], t.Bottleneck[1])
		latency, conds := comparedRows(t)
		table := func(head string, rows []pageRow) {
			b.WriteString(head + "\n|---|---:|---:|---:|---:|\n")
			for _, r := range rows {
				name := r.Name
				if r.Flag {
					name = "**" + name + "**"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, r.Before, r.After, r.Change, r.Band)
			}
		}
		table("| latency | before | after | change | noise (95%) |", latency)
		b.WriteString("\n")
		table("| condition | before | after | change | tolerance |", conds)
	}
	if len(c.Unevaluated) > 0 {
		fmt.Fprintf(&b, "\n**✗ not judged**: %s\n", unevaluatedText(c))
	}
	for _, r := range c.Regressions {
		fmt.Fprintf(&b, "\n**✗ regression** %s: `%s` %s → %s (%s, limit +%s)\n", targetName(r.Target), r.Gate, fmtSeconds(r.Delta.Before), fmtSeconds(r.Delta.After),
			fmtChangePtr(r.Delta.Change, false), fmtLimit(r.Limit))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type pageCompared struct {
	ID, Name, Verdict, Class, Word, Why, Bottleneck string
	Appeared, Cleared                               []string
	Latency, Conditions                             []pageRow
}

type pageRow struct {
	Name, Path, Before, After, Change, Band string
	Flag                                    bool
}

// ComparisonHTML writes a comparison as one self-contained page, in the
// diagnosis page's style.
func ComparisonHTML(w io.Writer, c *compare.Comparison, o Options) error {
	p := newPage("llmdoctor comparison", "llmdoctor comparison", o)
	p.Window = "before: " + c.Before.Name + " " + sideWindow(c.Before) + " · after: " + c.After.Name + " " + sideWindow(c.After)
	for _, u := range c.Unmatched {
		p.Notes = append(p.Notes, fmt.Sprintf("%s is in the %s diagnosis only", targetName(u.Target), u.Side))
	}
	p.Notes = append(p.Notes, c.Notes...)
	if len(c.Unevaluated) > 0 {
		p.Notes = append(p.Notes, "✗ not judged: "+unevaluatedText(c))
	}
	if len(c.Targets) == 0 {
		p.Empty = "No target is in both diagnoses: nothing to compare."
	}
	for i, t := range c.Targets {
		pc := pageCompared{ID: fmt.Sprintf("target-%d", i+1), Name: targetName(t.Target), Verdict: t.Verdict,
			Why: t.Why, Appeared: t.Appeared, Cleared: t.Cleared, Bottleneck: t.Bottleneck[0] + " → " + t.Bottleneck[1]}
		switch t.Verdict {
		case compare.NoChange:
			pc.Class, pc.Word = "ok", "= no change"
		case compare.Changed:
			pc.Class, pc.Word = "warning", "Δ changed"
		default:
			pc.Class, pc.Word = "unknown", "? not comparable"
		}
		pc.Latency, pc.Conditions = comparedRows(t)
		p.Compared = append(p.Compared, pc)
	}
	for _, r := range c.Regressions {
		p.Notes = append(p.Notes, fmt.Sprintf("✗ regression %s: %s %s → %s (%s, limit +%s)", targetName(r.Target), r.Gate,
			fmtSeconds(r.Delta.Before), fmtSeconds(r.Delta.After), fmtChangePtr(r.Delta.Change, false), fmtLimit(r.Limit)))
	}
	return pages.ExecuteTemplate(w, "page", p)
}

// SlackComparison renders a comparison as one message per target: the
// verdict in the header, why in a line, the figures that moved beyond
// their noise and the conditions that moved beyond their tolerance; the
// whole tables in the thread.
func SlackComparison(c *compare.Comparison, o SlackOptions) []SlackMessage {
	out := make([]SlackMessage, 0, len(c.Targets))
	for _, t := range c.Targets {
		name := slackTargetName(t.Target.Model, t.Target.Instance, t.Target.Engine, t.Target.Labels)
		sev, verdict := SlackHealthy, "= NO CHANGE"
		switch t.Verdict {
		case compare.NotComparable:
			sev, verdict = SlackInconclusive, "? NOT COMPARABLE"
		case compare.Changed:
			sev, verdict = SlackWarning, "Δ CHANGED"
		}
		for _, r := range c.Regressions {
			if sameTargetName(r.Target, t.Target) {
				sev, verdict = SlackCritical, "✗ REGRESSED"
			}
		}
		if len(c.Unevaluated) > 0 && sev != SlackCritical {
			sev = SlackCritical
			verdict += ", GATE NOT JUDGED"
		}
		b := newSlackBlocks(o)
		b.held(slackContextBlock([]string{"before: " + esc(c.Before.Name) + " " + esc(sideWindow(c.Before)),
			"after: " + esc(c.After.Name) + " " + esc(sideWindow(c.After))}))
		b.add(slackHeader(verdict + " · " + name))
		why := whyText(t)
		b.add(slackSection(cutMrkdwn(esc(why), 1200) + "\nbottleneck: " + esc(t.Bottleneck[0]) + " → " + esc(t.Bottleneck[1])))
		// What moved: the traffic first (it decides whether the rest
		// means anything), then the settings, then the figures.
		var moved, all, conds []string
		for _, cd := range t.Conditions {
			line := fmt.Sprintf("%s %s → %s (%s)", esc(cd.Name), fmtValue(cd.Path, cd.Before), fmtValue(cd.Path, cd.After), fmtChangePtr(cd.Change, cd.Absolute))
			switch {
			case cd.Beyond && cd.Kind == "workload":
				moved = append(moved, "! "+line+", beyond its tolerance")
			case cd.Beyond:
				moved = append(moved, "setting changed: "+line)
			}
			conds = append(conds, line)
		}
		for _, d := range t.Latency {
			line := fmt.Sprintf("%s %s → %s (%s, noise %s)", esc(d.Name), fmtSeconds(d.Before), fmtSeconds(d.After), fmtChangePtr(d.Change, false), noiseText(d.Noise))
			all = append(all, line)
			if d.Significant {
				moved = append(moved, "Δ *"+line+"*")
			}
		}
		for _, r := range c.Regressions {
			if sameTargetName(r.Target, t.Target) {
				moved = append(moved, fmt.Sprintf("✗ *%s* grew %s, limit +%s", code(r.Gate), fmtChangePtr(r.Delta.Change, false), fmtLimit(r.Limit)))
			}
		}
		if len(c.Unevaluated) > 0 {
			moved = append(moved, "✗ *not judged*: "+esc(unevaluatedText(c)))
		}
		b.lines("", moved, "change")
		b.release()
		th := newSlackThread(o, "llmdoctor comparison details for "+name, slackSection("*Details* · "+esc(name)))
		th.lines("*Latency, before → after*", all, "figure")
		th.lines("*Conditions, before → after*", conds, "condition")
		if len(t.Appeared)+len(t.Cleared) > 0 {
			th.lines("*Findings*", []string{"appeared: " + esc(strings.Join(t.Appeared, ", ")), "cleared: " + esc(strings.Join(t.Cleared, ", "))}, "line")
		}
		text := fmt.Sprintf("llmdoctor comparison: %s on %s: %s", verdict, name, why)
		out = append(out, SlackMessage{Target: name, Severity: sev, Main: b.main(text, sev), Details: th.messages()})
	}
	return out
}

// unevaluatedText says which gates no target could judge, and why a gate
// unjudged fails.
func unevaluatedText(c *compare.Comparison) string {
	return "the gate" + map[bool]string{true: "s ", false: " "}[len(c.Unevaluated) > 1] + strings.Join(c.Unevaluated, ", ") +
		" could not be judged (the figure missing on a side, its noise band unknown, or the runs not comparable): a gate does not pass unjudged"
}

func noiseText(x *float64) string {
	if x == nil {
		return "unknown"
	}
	return fmtBand(*x)
}

func sameTargetName(a, b evidence.Target) bool { return compare.SameTarget(a, b) }

// ComparisonSlack writes SlackComparison as the slack format writes its
// messages.
func ComparisonSlack(w io.Writer, c *compare.Comparison) error {
	return writeSlack(w, SlackComparison(c, SlackOptions{}))
}
