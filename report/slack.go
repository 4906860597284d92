package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/slackkit"
	"github.com/llmdoctor/llmdoctor/view"
)

func init() { Register(slackRenderer{}) }

// slackRenderer writes the Slack messages a post would send, as JSON.
type slackRenderer struct{}

func (slackRenderer) Name() string { return "slack" }
func (slackRenderer) Describe() string {
	return "Slack Block Kit messages as JSON, one per target with its thread replies: what a Slack post sends"
}
func (slackRenderer) Renders(Document) bool { return true }
func (slackRenderer) Diagnosis(w io.Writer, d *advisor.Diagnosis, _ Options) error {
	return writeSlack(w, SlackDiagnosis(d, SlackOptions{}))
}
func (slackRenderer) Probe(w io.Writer, r *probe.Result, _ Options) error {
	return writeSlack(w, SlackProbe(r, SlackOptions{}))
}

func (slackRenderer) Checklist(w io.Writer, c *advisor.Checklist, _ Options) error {
	return writeSlack(w, SlackChecklist(c, SlackOptions{}))
}

// writeSlack writes the messages as a JSON array, with &, < and > as they
// are so that the mrkdwn reads as Slack receives it.
func writeSlack(w io.Writer, msgs []SlackMessage) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(msgs); err != nil {
		return err
	}
	_, err := w.Write(unescapeHTML(buf.Bytes()))
	return err
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes in JSON back
// into <, > and &: slack's block types marshal themselves with
// json.Marshal, which escapes them whatever the encoder says. In JSON
// every backslash starts an escape, so escapes are read pairwise.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			if c, ok := map[string]byte{"003c": '<', "003e": '>', "0026": '&'}[string(b[i+2:i+6])]; ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// SlackOptions are the links a Slack message carries.
type SlackOptions struct {
	// ReportURL links to the full report; "" for none.
	ReportURL string
	// GraphURL is a Prometheus graph or Grafana explore link for the
	// window; "" for none.
	GraphURL string
}

// SlackMessage is one target's message: Main is posted; Details are thread
// replies when posting with a bot token (a webhook posts Main only).
type SlackMessage = slackkit.Message

// Severities of a Slack message.
const (
	SlackCritical     = "critical"
	SlackWarning      = "warning"
	SlackHealthy      = "healthy"
	SlackInconclusive = "inconclusive"
)

// slackColors are the colour bars by severity. Besides their hue they
// differ in lightness (CIE L* 35, 82, 51, 65), so that they stay apart
// for readers who do not tell red from green; the header says the
// verdict in words as well.
var slackColors = map[string]string{
	SlackCritical:     "#A50F15",
	SlackWarning:      "#FFC20A",
	SlackHealthy:      "#238B45",
	SlackInconclusive: "#9E9E9E",
}

// Slack's limits, kept in slackBlocks and nowhere else.
const (
	slackHeaderMax = slackkit.HeaderMax
	slackTextMax   = slackkit.TextMax
	slackBlocksMax = slackkit.BlocksMax
	slackCharsMax  = slackkit.CharsMax
	slackContextN  = slackkit.ContextElementsMax
	// slackURLMax is the longest link shown as a link.
	slackURLMax = 1500
	// slackMoreMax is the room kept for the closing "+N more" line.
	slackMoreMax = 400
	// slackThreadMax is how many thread replies one target gets at most.
	slackThreadMax = 5
)

// SlackDiagnosis renders a diagnosis as one message per target (one saying
// there was nothing to diagnose when there is no target).
func SlackDiagnosis(d *advisor.Diagnosis, o SlackOptions) []SlackMessage {
	if d == nil {
		return nil
	}
	if len(d.Targets) == 0 {
		b := newSlackBlocks(o)
		b.held(slackContextBlock(slackContextTexts(o, d.Window, "", d.Sources, nil)))
		b.add(slackHeader("? INCONCLUSIVE · no target"))
		b.add(slackSection(view.NoTargets))
		b.lines("", mrkdwnNotes(d.Notes), "note")
		text := "llmdoctor: INCONCLUSIVE, no target: no serving-engine metrics found in the sources"
		return []SlackMessage{{Severity: SlackInconclusive, Main: b.main(text, SlackInconclusive)}}
	}
	out := make([]SlackMessage, 0, len(d.Targets))
	for _, t := range view.Of(d).Targets {
		out = append(out, slackTarget(d, t, o))
	}
	return out
}

// SlackChecklist renders a checklist as one message per target.
func SlackChecklist(c *advisor.Checklist, o SlackOptions) []SlackMessage {
	if c == nil {
		return nil
	}
	if len(c.Targets) == 0 {
		b := newSlackBlocks(o)
		b.held(slackContextBlock(slackContextTexts(o, c.Window, "", c.Sources, nil)))
		b.add(slackHeader("? NOT VERIFIED · no target"))
		b.add(slackSection(view.NoTargetsChecklist))
		b.lines("", mrkdwnNotes(c.Notes), "note")
		text := "llmdoctor checklist: NOT VERIFIED, no target: nothing was checked"
		return []SlackMessage{{Severity: SlackInconclusive, Main: b.main(text, SlackInconclusive)}}
	}
	out := make([]SlackMessage, 0, len(c.Targets))
	for _, t := range view.ChecklistOf(c).Targets {
		out = append(out, slackChecklistTarget(c, t, o))
	}
	return out
}

// slackTarget is one target's diagnosis.
func slackTarget(d *advisor.Diagnosis, v view.Target, o SlackOptions) SlackMessage {
	t := *v.Report
	name := slackLine(v.Name)
	sev, verdict := slackVerdict(v.Verdict)
	b := newSlackBlocks(o)

	// The footer first: the room it needs is held while the rest is laid out.
	var gapsLine string
	if len(t.Gaps) > 0 || len(t.Skipped) > 0 {
		gapsLine = slackGapsLine(v)
	}
	extra := []string{v.Checks}
	if n := len(t.Suppressed); n > 0 {
		extra = append(extra, fmt.Sprintf("%d finding%s suppressed by configuration", n, plural(n)))
	}
	if gapsLine != "" {
		b.held(slackSection(gapsLine))
	}
	b.held(slackContextBlock(slackContextTexts(o, d.Window, t.Target.ServedBy, d.Sources, extra)))

	b.add(slackHeader(verdict + " · " + name))
	b.add(slackSection(slackSummary(v)))
	b.add(slackSection(slackLatency(t.LatencyMap)))

	// The first screen's findings; the rest, and those they explain, in
	// the thread in the advisor's order.
	shown := map[string]bool{}
	if len(v.Findings) > 0 {
		b.add(slack.NewDividerBlock())
		for _, f := range v.FirstFindings() {
			if b.add(slackSection(slackFinding(t, f.Finding))) {
				shown[f.Rule] = true
			}
		}
	}
	var rest []advisor.Finding
	for _, f := range t.Findings {
		if !shown[f.Rule] {
			b.omit("finding", 1)
			rest = append(rest, f)
		}
	}
	var steps []string
	for i, s := range v.Steps {
		line := fmt.Sprintf("%d. [%s] %s", i+1, esc(s.Cost), esc(s.Do))
		if s.Effect != nil {
			line += "\n    _" + esc(EffectText(s.Effect)) + "_"
		}
		steps = append(steps, line)
	}
	first := len(v.FirstSteps())
	nshown := b.lines("*Next steps, cheapest first*", steps[:first], "step")
	b.omit("step", len(steps)-first)
	b.release()

	th := newSlackThread(o, "llmdoctor details for "+name, slackSection("*Details* · "+esc(name)))
	for _, f := range rest {
		th.add(slackSection(slackFinding(t, f)), "finding", 1)
	}
	th.lines("*Next steps, continued*", steps[nshown:], "step")
	var left []string
	for _, l := range t.NextLeftOut {
		left = append(left, "_"+esc(LeftOutText(l))+"_")
	}
	th.lines("*Next steps left out*", left, "step")
	var gaps []string
	for _, g := range t.Gaps {
		gaps = append(gaps, slackGap(g))
	}
	for _, sk := range v.Gaps.Skipped {
		gaps = append(gaps, "– "+esc(sk.Line)+". _how:_ "+esc(sk.How))
	}
	th.lines("*Could not check, and how to close each gap*", gaps, "gap")
	var incons []string
	for _, in := range t.Inconsistencies {
		incons = append(incons, "! "+esc(in.Note))
	}
	th.lines("*Evidence withheld* (it contradicts itself or cannot be placed)", incons, "note")
	var sup []string
	for _, f := range t.Suppressed {
		sup = append(sup, fmt.Sprintf("– %s: %s", code(f.Rule), esc(f.Suppressed)))
	}
	th.lines("*Suppressed*", sup, "suppressed finding")
	if len(t.Members) > 1 {
		th.table("*Per instance / engine*", slackMembers(t.Members), "member")
	}
	th.lines("*Notes*", mrkdwnNotes(d.Notes), "note")

	text := fmt.Sprintf("llmdoctor: %s on %s: %s", verdict, name, slackLine(v.Verdict.Summary))
	return SlackMessage{Target: name, Severity: sev, Main: b.main(text, sev), Details: th.messages()}
}

// slackVerdict is a verdict's colour and its headline: "✗ CRITICAL:
// queueing", "! WARNING (tentative): kv-capacity", "✓ HEALTHY".
func slackVerdict(v view.Verdict) (sev, verdict string) {
	sev = map[string]string{view.Critical: SlackCritical, view.Warning: SlackWarning, view.Info: SlackWarning,
		view.Healthy: SlackHealthy}[v.Severity]
	if sev == "" {
		sev = SlackInconclusive
	}
	verdict = v.Mark + " " + v.Word
	if v.Tentative {
		verdict += " (tentative)"
	}
	if v.Severity != view.Healthy && v.Severity != view.Inconclusive {
		verdict += ": " + v.Names
	}
	return sev, verdict
}

func slackSummary(v view.Target) string {
	vd := v.Verdict
	s := esc(slackLine(vd.Summary))
	if v.Report.Primary.Found() && vd.Impact != "" {
		s += ": " + vd.Impact
	}
	if vd.TentativeLine != "" {
		s += "\n_" + esc(vd.TentativeLine) + "_"
	}
	for _, a := range vd.Against {
		s += "\n! " + esc(slackLine(a))
	}
	if vd.JudgedLine != "" {
		s += "\n_" + esc(vd.JudgedLine) + "_"
	}
	s = cutMrkdwn(s, 1000)
	incons := v.Report.Inconsistencies
	for i, in := range incons {
		if i == 2 {
			s += fmt.Sprintf("\n! and %d more contradiction%s in the evidence", len(incons)-2, plural(len(incons)-2))
			break
		}
		s += "\n! " + cutMrkdwn(esc(slackLine(in.Note)), 400)
	}
	return s
}

// slackLatency is the latency map as a compact bar per part of TTFT, then
// decode's share of end-to-end.
func slackLatency(m advisor.LatencyMap) string {
	const width = 20
	bar := func(share float64) string {
		n := min(max(int(share*width+0.5), 0), width)
		return strings.Repeat("█", n) + strings.Repeat("░", width-n)
	}
	var client string
	if m.ClientTTFT != nil {
		client = "\nclients saw mean TTFT " + units.Duration(*m.ClientTTFT)
		if m.NetworkShare != nil {
			client += fmt.Sprintf(", %s of it outside the server", units.WholePercent(*m.NetworkShare))
		}
	}
	if m.TTFT == nil {
		var parts []string
		for _, x := range []struct {
			name string
			v    *float64
		}{{"queue", m.Queue}, {"prefill", m.Prefill}, {"decode", m.Decode}, {"end-to-end", m.E2E}} {
			if x.v != nil {
				parts = append(parts, x.name+" "+units.Duration(*x.v))
			}
		}
		if b := m.BudgetLine(); b != "" {
			client = "\n" + b + client
		}
		switch {
		case len(parts) > 0:
			return "*Latency map*: TTFT withheld (the evidence contradicts itself), so no shares; mean " + strings.Join(parts, " · ") + client
		case client != "":
			return "*Latency*" + client
		}
		return "*Latency map*: no TTFT in the sources"
	}
	title := "*Latency map* · mean TTFT " + units.Duration(*m.TTFT)
	if m.TTFTExcludesQueue {
		title += " (queue + the server's TTFT, which leaves queue out)"
	}
	var rows []string
	type part struct {
		name string
		v    *float64
	}
	parts := []part{{"queue", m.Queue}, {"prefill", m.Prefill}, {"front", m.Front}}
	if m.Transfer != nil {
		parts = slices.Insert(parts, 2, part{"transfer", m.Transfer})
	}
	if m.Upstream != nil {
		parts = slices.Insert(parts, 0, part{"upstream", m.Upstream})
	}
	for _, x := range parts {
		if x.v == nil {
			rows = append(rows, fmt.Sprintf("%-8s %7s       not exported", x.name, "?"))
			continue
		}
		share := 0.0
		if *m.TTFT > 0 {
			share = *x.v / *m.TTFT
		}
		rows = append(rows, fmt.Sprintf("%-8s %7s %4s %s", x.name, units.Duration(*x.v), units.WholePercent(share), bar(share)))
	}
	if m.Decode != nil && m.E2E != nil && *m.E2E > 0 {
		share := *m.Decode / *m.E2E
		rows = append(rows, fmt.Sprintf("%-8s %7s %4s %s of end-to-end %s", "decode", units.Duration(*m.Decode), units.WholePercent(share),
			bar(share), units.Duration(*m.E2E)))
	}
	if b := m.BudgetLine(); b != "" {
		client = "\n" + b + client
	}
	return title + "\n```" + strings.Join(rows, "\n") + "```" + client
}

// slackFinding is a finding with its cited numbers and where they came from.
func slackFinding(t advisor.TargetReport, f advisor.Finding) string {
	var b strings.Builder
	mark, word := view.SeverityMark(f.Severity)
	fmt.Fprintf(&b, "*%s %s* %s", mark, word, code(f.Rule))
	if f.Impact != nil && f.ExplainedBy == "" {
		fmt.Fprintf(&b, " · %s", view.FindingOf(f).Impact)
	}
	b.WriteString("\n*" + cutMrkdwn(esc(slackLine(f.Title)), 300) + "*")
	if f.Message != "" {
		b.WriteString("\n" + cutMrkdwn(esc(slackLine(f.Message)), 1200))
	}
	if f.ExplainedBy != "" {
		b.WriteString("\n↳ explained by " + code(f.ExplainedBy))
	} else {
		n := 0
		for _, g := range t.Findings {
			if g.ExplainedBy == f.Rule {
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(&b, "\n↳ explains %d other finding%s", n, plural(n))
		}
	}
	if f.Capped != "" {
		b.WriteString("\n_not the verdict:_ " + cutMrkdwn(esc(f.Capped), 300))
	}
	if nums := slackNumbers(f.Evidence); nums != "" {
		b.WriteString("\n_numbers:_ " + cutMrkdwn(nums, 700))
	}
	var src []string
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(f.Sources)) {
		if s := f.Sources[k]; !seen[s] {
			seen[s] = true
			src = append(src, code(s))
		}
	}
	if len(src) > 0 {
		b.WriteString("\n_from:_ " + cutMrkdwn(strings.Join(src, ", "), 500))
	}
	return b.String()
}

// slackNumbers formats cited values in their catalogue units, as the text
// report does.
func slackNumbers(ev map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(ev)) {
		parts = append(parts, esc(k)+" = "+formatValue(k, ev[k]))
	}
	return strings.Join(parts, " · ")
}

// slackGapsLine names the checks that could not run, in one line.
func slackGapsLine(v view.Target) string {
	var open []string
	for _, g := range v.Gaps.Open {
		open = append(open, code(g.Rule))
	}
	var parts []string
	if len(open) > 0 {
		parts = append(parts, strings.Join(open, ", "))
	}
	if n := v.Gaps.Bounded; n > 0 {
		more := ""
		if len(open) > 0 {
			more = " more"
		}
		parts = append(parts, fmt.Sprintf("%d%s lacked inputs but could not have fired", n, more))
	}
	for _, sk := range v.Gaps.Skipped {
		parts = append(parts, fmt.Sprintf("%d rule%s that need%s %s data, not given", len(sk.Rules), plural(len(sk.Rules)),
			map[bool]string{true: "s", false: ""}[len(sk.Rules) == 1], esc(sk.Source)))
	}
	s := "*Could not check:* " + strings.Join(parts, "; ")
	if u := v.Verdict.Unchecked; len(u) > 0 {
		var ids []string
		for _, r := range u {
			ids = append(ids, code(r))
		}
		s += " (could decide the verdict: " + strings.Join(ids, ", ") + ")"
	}
	return cutMrkdwn(s, 1000)
}

func slackGap(g advisor.Gap) string {
	var miss []string
	for _, m := range g.Details {
		if m.Why == "missing" || m.Why == "" {
			miss = append(miss, code(m.Path))
		} else {
			miss = append(miss, code(m.Path)+" ("+esc(m.Why)+")")
		}
	}
	s := fmt.Sprintf("? %s needs %s", code(g.Rule), strings.Join(miss, ", "))
	if g.Bounded != "" {
		s += "\n      _could not have fired:_ " + esc(g.Bounded)
	}
	if g.How != "" {
		s += "\n      _how:_ " + esc(g.How)
	}
	return s
}

// slackMembers is the per-instance table: a header row, then a row each.
func slackMembers(ms []advisor.Member) []string {
	short := map[string]string{"stage.ttft.p99": "TTFT p99", "stage.queue.mean": "queue", "service.waiting.mean": "waiting",
		"service.running.mean": "running", "resource.kv_usage.mean": "KV", "service.preemptions": "preempt"}
	keys := map[string]bool{}
	for _, m := range ms {
		for k := range m.Evidence {
			keys[k] = true
		}
	}
	cols := slices.Sorted(maps.Keys(keys))
	rows := [][]string{{"member"}}
	for _, k := range cols {
		h := short[k]
		if h == "" {
			h = k
		}
		rows[0] = append(rows[0], h)
	}
	for _, m := range ms {
		row := []string{truncRunes(slackLine(memberName(m.Target)), 40)}
		for _, k := range cols {
			if x, ok := m.Evidence[k]; ok {
				row = append(row, formatValue(k, x))
			} else {
				row = append(row, "–")
			}
		}
		rows = append(rows, row)
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	out := make([]string, len(rows))
	for j, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			// Pad by what shows, then escape: &amp; shows as one character.
			b.WriteString(esc(c) + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
		out[j] = strings.TrimRight(b.String(), " ")
	}
	return out
}

// slackChecklistTarget is one target's checklist.
func slackChecklistTarget(c *advisor.Checklist, v view.ChecklistTarget, o SlackOptions) SlackMessage {
	t := *v.Report
	name := slackLine(v.Name)
	sev, verdict := map[string]string{view.Critical: SlackCritical, view.Warning: SlackWarning, view.Healthy: SlackHealthy}[v.Severity], v.Verdict
	if sev == "" {
		sev = SlackInconclusive
	}
	b := newSlackBlocks(o)
	var passed []string
	var failing, unchecked []advisor.Item
	// The view's order: blocking failures first.
	for _, it := range v.Items {
		switch it.Status {
		case advisor.Pass:
			passed = append(passed, it.Title)
		case advisor.Fail:
			failing = append(failing, it.Item)
		default:
			unchecked = append(unchecked, it.Item)
		}
	}

	var footer []string
	if len(passed) > 0 {
		footer = append(footer, cutMrkdwn(fmt.Sprintf("✓ *%d passed*: %s", len(passed), esc(strings.Join(passed, ", "))), 800))
	}
	var extra []string
	if c.Strict {
		extra = append(extra, "strict: an item that cannot be checked fails the gate")
	}
	if len(footer) > 0 {
		b.held(slackSection(footer[0]))
	}
	b.held(slackContextBlock(slackContextTexts(o, c.Window, t.Target.ServedBy, c.Sources, extra)))

	b.add(slackHeader(verdict + " · " + name))
	summary := fmt.Sprintf("%d failed · %d could not be checked · %d passed", t.Failed, t.CannotCheck, t.Passed)
	if c.Strict && t.CannotCheck > 0 {
		summary += " (strict: a blocking item that could not be checked fails)"
	}
	b.add(slackSection(summary))

	var restFailing []advisor.Item
	if len(failing) > 0 {
		b.add(slack.NewDividerBlock())
		for _, it := range failing {
			if !b.add(slackSection(slackItem(it))) {
				b.omit("failing item", 1)
				restFailing = append(restFailing, it)
			}
		}
	}
	var cc []string
	for _, it := range unchecked {
		cc = append(cc, slackUnchecked(it))
	}
	shown := b.lines("*Could not check*", cc, "unchecked item")
	b.release()

	th := newSlackThread(o, "llmdoctor checklist details for "+name, slackSection("*Details* · "+esc(name)))
	for _, it := range restFailing {
		th.add(slackSection(slackItem(it)), "failing item", 1)
	}
	th.lines("*Could not check, continued*", cc[shown:], "unchecked item")
	var pass []string
	for _, it := range t.Items {
		if it.Status == advisor.Pass {
			pass = append(pass, "✓ *"+esc(slackLine(it.Title))+"*: "+cutMrkdwn(esc(slackLine(it.Message)), 600))
		}
	}
	th.lines("*Passed*", pass, "passed item")
	th.lines("*Notes*", mrkdwnNotes(c.Notes), "note")

	text := fmt.Sprintf("llmdoctor checklist: %s on %s: %s", verdict, name, summary)
	return SlackMessage{Target: name, Severity: sev, Main: b.main(text, sev), Details: th.messages()}
}

func slackItem(it advisor.Item) string {
	var b strings.Builder
	b.WriteString("*✗ FAIL* *" + cutMrkdwn(esc(slackLine(it.Title)), 300) + "*")
	if !it.Blocking {
		b.WriteString(" _(advisory)_")
	}
	b.WriteString(" · " + code(it.ID))
	if it.Message != "" {
		b.WriteString("\n" + cutMrkdwn(esc(slackLine(it.Message)), 1200))
	}
	if nums := slackNumbers(it.Evidence); nums != "" {
		b.WriteString("\n_numbers:_ " + cutMrkdwn(nums, 700))
	}
	for _, f := range it.Fix {
		b.WriteString("\n_fix_ [" + esc(f.Cost) + "]: " + cutMrkdwn(esc(slackLine(f.Do)), 400))
	}
	return b.String()
}

func slackUnchecked(it advisor.Item) string {
	s := "? *" + esc(slackLine(it.Title)) + "*"
	if !it.Blocking {
		s += " _(advisory)_"
	}
	s += ": " + esc(slackLine(it.Message))
	if it.How != "" {
		s += " — _how:_ " + esc(slackLine(it.How))
	}
	return cutMrkdwn(s, 900)
}

// slackContextTexts are the context line's elements: links, the window,
// the engine, the sources, and what the caller adds.
func slackContextTexts(o SlackOptions, w advisor.Window, servedBy string, sources []advisor.Source, extra []string) []string {
	var out []string
	if o.ReportURL != "" {
		out = append(out, slackLink(o.ReportURL, "Full report"))
	}
	if o.GraphURL != "" {
		out = append(out, slackLink(o.GraphURL, "Graph of the window"))
	}
	if s := view.Window(w); s != "" {
		if !w.Cumulative && w.Start != nil && w.End != nil {
			s += ": " + slackDate(*w.Start) + " – " + slackDate(*w.End)
		}
		out = append(out, s)
	}
	if servedBy != "" {
		out = append(out, "served by "+esc(servedBy))
	}
	out = append(out, extra...)
	if len(sources) > 0 {
		var src []string
		for _, s := range sources {
			src = append(src, cutMrkdwn(esc(sourceLine(s)), 300))
		}
		out = append(out, cutMrkdwn("sources: "+strings.Join(src, " · "), 1000))
	}
	return out
}

// slackDate shows a time in the reader's time zone, UTC where a client
// cannot.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

func mrkdwnNotes(notes []string) []string {
	var out []string
	for _, n := range notes {
		out = append(out, "– "+cutMrkdwn(esc(slackLine(n)), 1000))
	}
	return out
}

// Text helpers. Text from data (model names, label values, messages) is
// escaped for mrkdwn; headers are plain text, shown as they are.

func esc(s string) string { return slackkit.Escape(s) }

// code is s as inline code: escaped, without backticks that would end it.
func code(s string) string { return "`" + esc(strings.ReplaceAll(slackLine(s), "`", "'")) + "`" }

// slackLink is a mrkdwn link; the URL is escaped and a | in it encoded,
// since | ends the URL. What Slack would not link (no http or https, or
// longer than a text may be) is shown as text.
func slackLink(url, label string) string {
	lower := strings.ToLower(url)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") || utf8.RuneCountInString(url) > slackURLMax {
		return esc(label) + ": " + cutMrkdwn(esc(url), 200)
	}
	url = strings.NewReplacer("|", "%7C", " ", "%20", "<", "%3C", ">", "%3E", "&", "&amp;").Replace(url)
	return "<" + url + "|" + esc(label) + ">"
}

// slackLine folds runs of white space, line breaks included, into one space.
func slackLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func truncRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// cutMrkdwn cuts mrkdwn to at most n characters, ending it with …: never
// inside an entity (&amp;) or a link or date (<…>), and closing a code
// block left open.
func cutMrkdwn(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	keep := n - 1
	for {
		cut := string(r[:keep])
		// Back off to before an entity or a <…> the cut leaves open.
		if i := strings.LastIndexByte(cut, '&'); i >= 0 && !strings.Contains(cut[i:], ";") {
			cut = cut[:i]
		}
		if i := strings.LastIndexByte(cut, '<'); i >= 0 && !strings.Contains(cut[i:], ">") {
			cut = cut[:i]
		}
		tail := "…"
		if strings.Count(cut, "```")%2 == 1 {
			tail = "…```"
		}
		if utf8.RuneCountInString(cut)+utf8.RuneCountInString(tail) <= n {
			return cut + tail
		}
		keep = utf8.RuneCountInString(cut) - 1
	}
}

// Blocks, each made within its own limit.

func slackHeader(s string) slack.Block {
	return slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncRunes(slackLine(s), slackHeaderMax), true, false))
}

func slackSection(s string) slack.Block {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, cutMrkdwn(s, slackTextMax), false, false), nil, nil)
}

func slackContextBlock(texts []string) slack.Block {
	var els []slack.MixedElement
	for _, t := range texts {
		if t == "" || len(els) == slackContextN {
			continue
		}
		els = append(els, slack.NewTextBlockObject(slack.MarkdownType, cutMrkdwn(t, slackTextMax), false, false))
	}
	if len(els) == 0 {
		els = append(els, slack.NewTextBlockObject(slack.MarkdownType, "llmdoctor", false, false))
	}
	return slack.NewContextBlock("", els...)
}

// SlackBlockChars counts the characters of the blocks' texts, as Slack does
// against its limit on a message (about 12,000): for code that adds blocks
// to a rendered message.
func SlackBlockChars(blocks []slack.Block) int {
	n := 0
	for _, b := range blocks {
		n += slackBlockChars(b)
	}
	return n
}

// slackBlockChars counts the characters of a block's texts, as Slack does
// against its limit on a message's blocks.
func slackBlockChars(b slack.Block) int { return slackkit.BlockChars(b) }

// slackBlocks lays out one message within Slack's limits on blocks and
// characters. Blocks that must come last (the context line) are held:
// their room is kept while the rest is added, and they are appended by
// release. Room for the closing "+N more" line is always kept.
type slackBlocks struct {
	o         SlackOptions
	blocks    []slack.Block
	chars     int
	hold      []slack.Block
	holdChars int
	more      []slackMore
	moreChars int
}

type slackMore struct {
	noun string
	n    int
}

func newSlackBlocks(o SlackOptions) *slackBlocks {
	return &slackBlocks{o: o, moreChars: slackMoreMax + utf8.RuneCountInString(slackLink(o.ReportURL, "the full report"))}
}

// room is the characters one more block may have.
func (b *slackBlocks) room() int {
	if len(b.blocks)+len(b.hold)+2 > slackBlocksMax {
		return 0
	}
	return slackCharsMax - b.chars - b.holdChars - b.moreChars
}

// add appends a block if it fits, and reports whether it did.
func (b *slackBlocks) add(blk slack.Block) bool {
	n := slackBlockChars(blk)
	if n > b.room() || (n == 0 && b.room() == 0) {
		return false
	}
	b.blocks = append(b.blocks, blk)
	b.chars += n
	return true
}

// held keeps room for a block appended by release.
func (b *slackBlocks) held(blk slack.Block) {
	b.hold = append(b.hold, blk)
	b.holdChars += slackBlockChars(blk)
}

func (b *slackBlocks) release() {
	for _, blk := range b.hold {
		b.blocks = append(b.blocks, blk)
		b.chars += slackBlockChars(blk)
	}
	b.hold, b.holdChars = nil, 0
}

func (b *slackBlocks) omit(noun string, n int) {
	if n <= 0 || noun == "" {
		return
	}
	for i := range b.more {
		if b.more[i].noun == noun {
			b.more[i].n += n
			return
		}
	}
	b.more = append(b.more, slackMore{noun, n})
}

// lines adds a section of a title and as many lines as fit, and counts the
// rest as omitted; it returns how many it added.
func (b *slackBlocks) lines(title string, lines []string, noun string) int {
	if len(lines) == 0 {
		return 0
	}
	limit := min(slackTextMax, b.room())
	text, shown := title, 0
	for _, l := range lines {
		l = cutMrkdwn(l, 1000)
		next := l
		if text != "" {
			next = text + "\n" + l
		}
		if utf8.RuneCountInString(next) > limit {
			break
		}
		text, shown = next, shown+1
	}
	if shown == 0 || !b.add(slackSection(text)) {
		shown = 0
	}
	b.omit(noun, len(lines)-shown)
	return shown
}

func (b *slackBlocks) moreText(more []slackMore) string {
	var parts []string
	for _, m := range more {
		noun := m.noun
		if m.n != 1 {
			noun += "s"
		}
		parts = append(parts, fmt.Sprintf("+%d more %s", m.n, noun))
	}
	see := "see the full report"
	if b.o.ReportURL != "" {
		see = "see " + slackLink(b.o.ReportURL, "the full report")
	}
	return cutMrkdwn(strings.Join(parts, ", "), slackMoreMax-30) + " (" + see + ")"
}

// finish appends the held blocks and the "+N more" line when anything was
// left out.
func (b *slackBlocks) finish() []slack.Block {
	b.release()
	if len(b.more) > 0 {
		blk := slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, b.moreText(b.more), false, false))
		b.blocks = append(b.blocks, blk)
		b.chars += slackBlockChars(blk)
	}
	return b.blocks
}

// main is the posted message: the fallback text, and the blocks inside one
// attachment whose bar shows the severity.
func (b *slackBlocks) main(text, sev string) slack.WebhookMessage {
	text = cutMrkdwn(esc(slackLine(text)), 300)
	return slack.WebhookMessage{Text: text, Attachments: []slack.Attachment{{
		Color: slackColors[sev], Fallback: text, Blocks: slack.Blocks{BlockSet: b.finish()}}}}
}

// slackThread lays out thread replies, each within the limits, starting a
// new one when a block does not fit, up to slackThreadMax.
type slackThread struct {
	o    SlackOptions
	text string
	// head opens the first reply, once there is anything to reply.
	head slack.Block
	msgs []*slackBlocks
}

func newSlackThread(o SlackOptions, text string, head slack.Block) *slackThread {
	return &slackThread{o: o, text: text, head: head, msgs: []*slackBlocks{newSlackBlocks(o)}}
}

// add appends a block that counts as n of noun when it has to be left out.
func (t *slackThread) add(blk slack.Block, noun string, n int) {
	if t.head != nil {
		t.msgs[0].add(t.head)
		t.head = nil
	}
	cur := t.msgs[len(t.msgs)-1]
	if cur.add(blk) {
		return
	}
	if len(t.msgs) < slackThreadMax && len(cur.blocks) > 0 {
		next := newSlackBlocks(t.o)
		t.msgs = append(t.msgs, next)
		if next.add(blk) {
			return
		}
	}
	t.msgs[len(t.msgs)-1].omit(noun, n)
}

// lines adds sections of a title and lines, as many sections as they need.
func (t *slackThread) lines(title string, lines []string, noun string) {
	t.chunks(title, lines, noun, "", "")
}

// table adds rows as code blocks, the first row (the column names)
// repeated at the top of each.
func (t *slackThread) table(title string, rows []string, noun string) {
	if len(rows) < 2 {
		return
	}
	t.chunks(title+"\n```"+rows[0], rows[1:], noun, "```", rows[0])
}

func (t *slackThread) chunks(title string, lines []string, noun, close, repeat string) {
	if len(lines) == 0 {
		return
	}
	const limit = slackTextMax - 10
	text, n := title, 0
	flush := func() {
		if n > 0 {
			t.add(slackSection(text+close), noun, n)
		}
		text, n = strings.TrimSuffix(strings.SplitN(title, "\n", 2)[0], ":")+" (continued)", 0
		if repeat != "" {
			text += "\n```" + repeat
		}
	}
	for _, l := range lines {
		l = cutMrkdwn(l, 1000)
		if utf8.RuneCountInString(text)+1+utf8.RuneCountInString(l)+len(close) > limit {
			flush()
		}
		text += "\n" + l
		n++
	}
	flush()
}

func (t *slackThread) messages() []slack.WebhookMessage {
	var out []slack.WebhookMessage
	for i, m := range t.msgs {
		if len(m.blocks) == 0 && len(m.more) == 0 {
			continue
		}
		blocks := m.finish()
		text := t.text
		if len(t.msgs) > 1 {
			text += fmt.Sprintf(" (%d of %d)", i+1, len(t.msgs))
		}
		out = append(out, slack.WebhookMessage{Text: cutMrkdwn(esc(slackLine(text)), 300), Blocks: &slack.Blocks{BlockSet: blocks}})
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
