package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmdoctor/llmdoctor/compare"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/view"
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
	v := view.ComparisonOf(c)
	st := newStyles(w, ColorOn(o.Color, o.IsTerminal))
	p := &printer{w: w, width: width, st: st, details: true}
	p.fit(st.head.Render("llmdoctor comparison"))
	p.wrap("  ", "before: "+c.Before.Name+" "+sideWindow(c.Before))
	p.wrap("  ", "after:  "+c.After.Name+" "+sideWindow(c.After))
	for _, u := range c.Unmatched {
		p.wrap("  ", fmt.Sprintf("%s %s is in the %s diagnosis only", st.warn.Render("?"), view.Name(u.Target), u.Side))
	}
	for _, n := range c.Notes {
		p.wrap("  ", "note: "+n)
	}
	if v.Empty != "" {
		p.blank()
		p.wrap("", v.Empty)
	}
	for _, t := range v.Targets {
		p.blank()
		p.fit(st.head.Render("── " + t.Name))
		mark := t.Mark + " " + t.Word
		switch t.Severity {
		case view.Healthy:
			mark = st.ok.Render(mark)
		case view.Warning:
			mark = st.bold.Render(mark)
		default:
			mark = st.warn.Render(mark)
		}
		p.wrap("", mark+"  "+t.Why)
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
		row := func(r view.Row, flag string) {
			mark := " "
			if r.Flag {
				mark = flag
			}
			p.line(fmt.Sprintf("%s %s %9s %9s %7s  %s", mark, name(r.Name), r.Before, r.After, r.Change, r.Band))
		}
		for _, r := range t.Conditions {
			row(r, st.warn.Render("!"))
		}
		p.blank()
		p.line(fmt.Sprintf("  %s %9s %9s %7s  %s", name("Latency"), "before", "after", "change", "noise (95%)"))
		for _, r := range t.Latency {
			row(r, st.bold.Render("Δ"))
		}
	}
	if v.WideBand != "" {
		p.blank()
		p.wrap("", st.dim.Render(v.WideBand+"."))
	}
	if len(v.Regressions) > 0 {
		p.blank()
		for _, r := range v.Regressions {
			p.wrap("", st.crit.Render("✗ REGRESSION")+" "+r)
		}
	}
	if v.Unjudged != "" {
		p.blank()
		p.wrap("", st.crit.Render("✗ NOT JUDGED")+" "+v.Unjudged)
	}
	return p.err
}

func sideWindow(s compare.Side) string {
	if s.Window.Seconds > 0 {
		return "(" + units.Duration(s.Window.Seconds) + " window)"
	}
	return ""
}

// ComparisonMarkdown writes a comparison as Markdown, for a pull request:
// per target the verdict, then a table of the latency figures and one of
// the conditions side by side.
func ComparisonMarkdown(w io.Writer, c *compare.Comparison) error {
	v := view.ComparisonOf(c)
	var b strings.Builder
	fmt.Fprintf(&b, "## llmdoctor comparison\n\nBefore: `%s` %s · after: `%s` %s\n", c.Before.Name, sideWindow(c.Before), c.After.Name, sideWindow(c.After))
	for _, u := range c.Unmatched {
		fmt.Fprintf(&b, "\n- %s is in the %s diagnosis only\n", view.Name(u.Target), u.Side)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "\n- note: %s\n", n)
	}
	if v.Empty != "" {
		fmt.Fprintf(&b, "\n%s\n", v.Empty)
	}
	for _, t := range v.Targets {
		fmt.Fprintf(&b, "\n### %s\n\n**%s %s** — %s. Bottleneck: %s → %s.\n\n", t.Name, t.Mark, strings.ToLower(t.Word),
			t.Why, t.Bottleneck[0], t.Bottleneck[1])
		table := func(head string, rows []view.Row) {
			b.WriteString(head + "\n|---|---:|---:|---:|---:|\n")
			for _, r := range rows {
				name := r.Name
				if r.Flag {
					name = "**" + name + "**"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, r.Before, r.After, r.Change, r.Band)
			}
		}
		table("| latency | before | after | change | noise (95%) |", t.Latency)
		b.WriteString("\n")
		table("| condition | before | after | change | tolerance |", t.Conditions)
	}
	if v.WideBand != "" {
		fmt.Fprintf(&b, "\n_%s._\n", v.WideBand)
	}
	if v.Unjudged != "" {
		fmt.Fprintf(&b, "\n**✗ not judged**: %s\n", v.Unjudged)
	}
	for _, r := range v.Regressions {
		fmt.Fprintf(&b, "\n**✗ regression** %s\n", r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type pageCompared struct {
	ID, Name, Verdict, Class, Word, Why, Bottleneck string
	Appeared, Cleared                               []string
	Latency, Conditions                             []view.Row
}

// ComparisonHTML writes a comparison as one self-contained page, in the
// diagnosis page's style.
func ComparisonHTML(w io.Writer, c *compare.Comparison, o Options) error {
	v := view.ComparisonOf(c)
	p := newPage("llmdoctor comparison", "llmdoctor comparison", o)
	p.Window = "before: " + c.Before.Name + " " + sideWindow(c.Before) + " · after: " + c.After.Name + " " + sideWindow(c.After)
	for _, u := range c.Unmatched {
		p.Notes = append(p.Notes, fmt.Sprintf("%s is in the %s diagnosis only", view.Name(u.Target), u.Side))
	}
	p.Notes = append(p.Notes, c.Notes...)
	if v.WideBand != "" {
		p.Notes = append(p.Notes, v.WideBand)
	}
	if v.Unjudged != "" {
		p.Notes = append(p.Notes, "✗ not judged: "+v.Unjudged)
	}
	p.Empty = v.Empty
	for i, t := range v.Targets {
		pc := pageCompared{ID: fmt.Sprintf("target-%d", i+1), Name: t.Name, Verdict: t.Verdict, Why: t.Report.Why,
			Appeared: t.Appeared, Cleared: t.Cleared, Bottleneck: t.Bottleneck[0] + " → " + t.Bottleneck[1],
			Word: t.Mark + " " + strings.ToLower(t.Word), Latency: t.Latency, Conditions: t.Conditions}
		pc.Class = map[string]string{view.Healthy: "ok", view.Warning: "warning"}[t.Severity]
		if pc.Class == "" {
			pc.Class = "unknown"
		}
		p.Compared = append(p.Compared, pc)
	}
	for _, r := range v.Regressions {
		p.Notes = append(p.Notes, "✗ regression "+r)
	}
	return pages.ExecuteTemplate(w, "page", p)
}

// SlackComparison renders a comparison as one message per target: the
// verdict in the header, why in a line, the figures that moved beyond
// their noise and the conditions that moved beyond their tolerance; the
// whole tables in the thread.
func SlackComparison(c *compare.Comparison, o SlackOptions) []SlackMessage {
	v := view.ComparisonOf(c)
	out := make([]SlackMessage, 0, len(v.Targets))
	for _, t := range v.Targets {
		name := slackLine(t.Name)
		sev := map[string]string{view.Healthy: SlackHealthy, view.Warning: SlackWarning}[t.Severity]
		if sev == "" {
			sev = SlackInconclusive
		}
		verdict := t.Mark + " " + t.Word
		if t.Regressed {
			sev, verdict = SlackCritical, "✗ REGRESSED"
		}
		if v.Unjudged != "" && sev != SlackCritical {
			sev = SlackCritical
			verdict += ", GATE NOT JUDGED"
		}
		b := newSlackBlocks(o)
		b.held(slackContextBlock([]string{"before: " + esc(c.Before.Name) + " " + esc(sideWindow(c.Before)),
			"after: " + esc(c.After.Name) + " " + esc(sideWindow(c.After))}))
		b.add(slackHeader(verdict + " · " + name))
		b.add(slackSection(cutMrkdwn(esc(t.Why), 1200) + "\nbottleneck: " + esc(t.Bottleneck[0]) + " → " + esc(t.Bottleneck[1])))
		// What moved: the traffic first (it decides whether the rest
		// means anything), then the settings, then the figures.
		var moved, all, conds []string
		for _, r := range t.Conditions {
			line := fmt.Sprintf("%s %s → %s (%s)", esc(r.Name), r.Before, r.After, r.Change)
			switch {
			case r.Flag && r.Kind == "workload":
				moved = append(moved, "! "+line+", beyond its tolerance")
			case r.Flag:
				moved = append(moved, "setting changed: "+line)
			}
			conds = append(conds, line)
		}
		for _, r := range t.Latency {
			line := fmt.Sprintf("%s %s → %s (%s, noise %s)", esc(r.Name), r.Before, r.After, r.Change, r.Band)
			all = append(all, line)
			if r.Flag {
				moved = append(moved, "Δ *"+line+"*")
			}
		}
		for _, r := range c.Regressions {
			if compare.SameTarget(r.Target, t.Report.Target) {
				moved = append(moved, fmt.Sprintf("✗ *%s* grew %s, limit +%s", code(r.Gate), view.Change(r.Delta.Change, false), view.Limit(r.Limit)))
			}
		}
		if v.Unjudged != "" {
			moved = append(moved, "✗ *not judged*: "+esc(v.Unjudged))
		}
		b.lines("", moved, "change")
		b.release()
		th := newSlackThread(o, "llmdoctor comparison details for "+name, slackSection("*Details* · "+esc(name)))
		th.lines("*Latency, before → after*", all, "figure")
		if v.WideBand != "" {
			th.lines("", []string{"_" + esc(v.WideBand) + "_"}, "line")
		}
		th.lines("*Conditions, before → after*", conds, "condition")
		if len(t.Appeared)+len(t.Cleared) > 0 {
			th.lines("*Findings*", []string{"appeared: " + esc(strings.Join(t.Appeared, ", ")), "cleared: " + esc(strings.Join(t.Cleared, ", "))}, "line")
		}
		text := fmt.Sprintf("llmdoctor comparison: %s on %s: %s", verdict, name, t.Why)
		out = append(out, SlackMessage{Target: name, Severity: sev, Main: b.main(text, sev), Details: th.messages()})
	}
	return out
}

// ComparisonSlack writes SlackComparison as the slack format writes its
// messages.
func ComparisonSlack(w io.Writer, c *compare.Comparison) error {
	return writeSlack(w, SlackComparison(c, SlackOptions{}))
}
