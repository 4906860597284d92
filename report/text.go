package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/internal/wrap"
	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/view"
)

func init() { Register(textRenderer{}) }

// textRenderer writes reports for people, at a terminal or in a file.
type textRenderer struct{}

func (textRenderer) Name() string { return "text" }
func (textRenderer) Describe() string {
	return "the report for people: fits the width, colour at a terminal (the default)"
}
func (textRenderer) Renders(Document) bool { return true }
func (textRenderer) Diagnosis(w io.Writer, d *advisor.Diagnosis, o Options) error {
	return Text(w, d, o)
}
func (textRenderer) Probe(w io.Writer, r *probe.Result, o Options) error { return ProbeText(w, r, o) }

func (textRenderer) Checklist(w io.Writer, c *advisor.Checklist, o Options) error {
	return ChecklistText(w, c, o)
}

// ColorOn decides colour: NO_COLOR (any value) turns it off, then
// CLICOLOR_FORCE turns it on, then TERM=dumb or a non-terminal turns it off.
func ColorOn(mode string, isTerminal bool) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	if v := os.Getenv("CLICOLOR_FORCE"); v != "" && v != "0" {
		return true
	}
	return isTerminal && os.Getenv("TERM") != "dumb"
}

type styles struct {
	head, crit, warn, info, ok, dim, bold lipgloss.Style
}

func newStyles(w io.Writer, color bool) styles {
	r := lipgloss.NewRenderer(w)
	if color {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return styles{
		head: r.NewStyle().Bold(true),
		crit: r.NewStyle().Foreground(lipgloss.Color("9")).Bold(true),
		warn: r.NewStyle().Foreground(lipgloss.Color("11")).Bold(true),
		info: r.NewStyle().Foreground(lipgloss.Color("12")),
		ok:   r.NewStyle().Foreground(lipgloss.Color("10")).Bold(true),
		dim:  r.NewStyle().Faint(true),
		bold: r.NewStyle().Bold(true),
	}
}

// Text writes the diagnosis for people: fits the width, keeps meaning in words
// and symbols (✗ critical, ! warning, i info, ? could not check) as well as colour.
func Text(w io.Writer, d *advisor.Diagnosis, o Options) error {
	width := o.Width
	if width <= 0 {
		width = 80
	}
	st := newStyles(w, ColorOn(o.Color, o.IsTerminal))
	p := &printer{w: w, width: width, st: st, details: o.Details}
	p.pair(st.head.Render("llmdoctor diagnosis"), windowText(d))
	for _, s := range d.Sources {
		p.wrap("  ", sourceLine(s))
	}
	if d.Config != "" {
		p.wrap("  ", "config "+d.Config)
	}
	for _, n := range d.Notes {
		p.wrap("  ", "note: "+n)
	}
	v := view.Of(d)
	if v.Empty != "" {
		p.blank()
		p.wrap("", v.Empty)
	}
	for _, t := range v.Targets {
		p.target(t)
	}
	if p.held {
		p.blank()
		p.fit(p.st.dim.Render("--details: every finding with its evidence and sources, every check that could not run, the curves."))
	}
	return p.err
}

// ChecklistText writes the checklist for people.
func ChecklistText(w io.Writer, c *advisor.Checklist, o Options) error {
	width := o.Width
	if width <= 0 {
		width = 80
	}
	st := newStyles(w, ColorOn(o.Color, o.IsTerminal))
	p := &printer{w: w, width: width, st: st, details: o.Details}
	v := view.ChecklistOf(c)
	verdict := v.Verdict
	switch v.Severity {
	case view.Healthy:
		verdict = st.ok.Render(verdict)
	case view.Critical:
		verdict = st.crit.Render(verdict)
	default:
		verdict = st.warn.Render(verdict)
	}
	p.pair(st.head.Render("llmdoctor pre-launch checklist"), verdict)
	if v.Unverified != "" {
		p.wrap("  ", st.warn.Render("!")+" "+v.Unverified)
	}
	for _, s := range c.Sources {
		p.wrap("  ", sourceLine(s))
	}
	if c.Config != "" {
		p.wrap("  ", "config "+c.Config)
	}
	for _, n := range c.Notes {
		p.wrap("  ", "note: "+n)
	}
	if v.Empty != "" {
		p.blank()
		p.wrap("", v.Empty)
	}
	held := false
	for _, t := range v.Targets {
		p.blank()
		p.fit(st.head.Render("── " + t.Name))
		items, engine, passed := t.Items, []string(nil), []string(nil)
		if !o.Details {
			items, engine, passed = t.FirstScreen()
			held = held || len(engine)+len(passed) > 0
		}
		if len(engine) > 0 {
			p.wrap("  ", fmt.Sprintf("%s %d item%s need the serving engine's metrics, which no source here gives (add --prom URL, or --target URL for its /metrics): %s",
				st.warn.Render("?"), len(engine), plural(len(engine)), strings.Join(engine, ", ")))
		}
		for _, it := range items {
			p.item(it)
		}
		if len(passed) > 0 {
			p.wrap("  ", fmt.Sprintf("%s %d more passed: %s", st.ok.Render("✓"), len(passed), strings.Join(passed, ", ")))
		}
		p.blank()
		p.fit(st.dim.Render(t.Counts))
	}
	if held {
		p.blank()
		p.fit(st.dim.Render("--details: every item with its message, and what each unchecked one needs."))
	}
	return p.err
}

// item writes one checklist item whole: its mark and title, message, fixes
// and how to check it.
func (p *printer) item(it view.Item) {
	st := p.st
	mark := it.Mark
	switch it.Outcome {
	case view.ItemPasses:
		mark = st.ok.Render(mark)
	case view.ItemFails:
		mark = st.crit.Render(mark)
	default:
		mark = st.warn.Render(mark)
	}
	advisory := ""
	if !it.Blocking {
		advisory = " (advisory)"
	}
	p.wrap("  ", mark+" "+it.Title+advisory)
	if it.Message != "" {
		p.wrap("      ", it.Message)
	}
	for _, f := range it.Fix {
		p.wrap("      ", st.dim.Render(fmt.Sprintf("fix [%s]: %s", f.Cost, f.Do)))
	}
	if it.How != "" {
		p.wrap("      ", st.dim.Render("how: "+it.How))
	}
}

// sourceLine: ✓ read, ! read with rows left out, ✗ not read; notes follow.
func sourceLine(s advisor.Source) string {
	mark := "✓"
	where := s.URL + s.Path
	if len(s.Skipped) > 0 {
		mark = "!"
	}
	if !s.OK {
		mark = "✗"
		where += ": " + s.Error
	}
	if detail := append(append([]string{}, s.Notes...), scopeTexts(s.Scopes)...); len(detail) > 0 {
		where += ": " + strings.Join(detail, "; ")
	}
	return fmt.Sprintf("%s %s %s", mark, s.Kind, where)
}

// scopeTexts say how a selector reached each family of a source's series:
// "vllm by model_name="m"", "dcgm joined to model_name="m" through pod",
// "dcgm left out: …".
func scopeTexts(ss []advisor.Scope) []string {
	var out []string
	for _, s := range ss {
		var t string
		switch {
		case !s.Read:
			t = s.Families + " left out"
			if s.Note != "" {
				t += ": " + s.Note
			}
			out = append(out, t)
			continue
		case len(s.JoinedTo) == 0:
			t = s.Families + " by " + strings.Join(s.Matched, ",")
		default:
			t = s.Families + " joined to " + strings.Join(s.JoinedTo, ",") + " through " + s.Through
			if len(s.Matched) > 0 {
				t += ", by " + strings.Join(s.Matched, ",")
			}
		}
		if s.Note != "" {
			t += " (" + s.Note + ")"
		}
		out = append(out, t)
	}
	return out
}

func windowText(d *advisor.Diagnosis) string {
	if s := view.Window(d.Window); s != "" {
		return "· " + s
	}
	return ""
}

type printer struct {
	w     io.Writer
	width int
	st    styles
	err   error
	// details: the whole report; else the first screen, and held says
	// whether it left anything out.
	details, held bool
}

func (p *printer) line(s string) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, s)
	}
}

func (p *printer) blank() { p.line("") }

// pair writes a title and what follows it on one line when they fit, else
// the rest indented on the lines below.
func (p *printer) pair(title, rest string) {
	if rest == "" || ansi.StringWidth(title)+2+ansi.StringWidth(rest) > p.width {
		p.fit(title)
		if rest != "" {
			p.wrap("  ", rest)
		}
		return
	}
	p.line(title + "  " + rest)
}

// fit writes s as one line when it fits the width, else wrapped.
func (p *printer) fit(s string) {
	if ansi.StringWidth(s) <= p.width {
		p.line(s)
		return
	}
	p.wrap("", s)
}

// wrap writes text wrapped at spaces to the width, every line indented and
// continuation lines indented two more.
func (p *printer) wrap(indent, s string) {
	limit := p.width - ansi.StringWidth(indent)
	for i, l := range wrap.Lines(s, limit, limit-2) {
		if i == 1 {
			indent += "  "
		}
		p.line(strings.TrimRight(indent+l, " "))
	}
}

func (p *printer) section(name string) {
	p.blank()
	p.fit(p.st.bold.Render(name))
}

func (p *printer) target(v view.Target) {
	t := v.Report
	p.blank()
	name := v.Name
	if t.Target.ServedBy != "" {
		// Which engine's metrics these are: one Prometheus may hold both.
		name += " · " + t.Target.ServedBy
	}
	if n := ansi.StringWidth(name); n+7 <= p.width {
		p.line(p.st.head.Render("── " + name + " " + strings.Repeat("─", p.width-n-4)))
	} else {
		p.wrap("", p.st.head.Render("── "+name))
	}

	vd := v.Verdict
	head := " VERDICT "
	if vd.Tentative {
		head = " TENTATIVE VERDICT "
	}
	switch vd.Severity {
	case view.Healthy:
		p.wrap("", p.st.ok.Render(vd.Mark+head+vd.Names)+": "+vd.Summary)
	case view.Inconclusive:
		p.wrap("", p.st.warn.Render(vd.Mark+head+vd.Names)+": "+vd.Summary)
	default:
		if vd.Status == view.Suppressed {
			p.wrap("", p.st.warn.Render(vd.Mark+head)+p.st.bold.Render(vd.Names)+p.st.warn.Render(", suppressed")+": "+vd.Summary)
			break
		}
		p.wrap("", p.sevMark(vd.Severity)+head+p.st.bold.Render(vd.Names)+": "+vd.Summary)
	}
	if vd.TentativeLine != "" {
		p.wrap("  ", vd.TentativeLine)
	}
	see := "see Suppressed"
	if !p.details {
		see = "--details says why"
	}
	if line := vd.SuppressedLine(see); line != "" {
		p.wrap("  ", p.st.warn.Render("! ")+line)
	}
	for _, a := range vd.Against {
		p.wrap("  ", p.st.warn.Render("! ")+a)
	}
	if vd.JudgedLine != "" {
		p.wrap("  ", p.st.dim.Render(vd.JudgedLine))
	}
	if len(vd.Unchecked) > 0 {
		see := "see Could not check"
		if !p.details {
			see = "--details says what each needs"
		}
		p.wrap("  ", "Could not check: "+strings.Join(vd.Unchecked, ", ")+" ("+see+").")
	}
	if p.details {
		for _, b := range vd.Bounded {
			p.wrap("  ", p.st.dim.Render("bounded: "+b))
		}
	}
	if len(t.Inconsistencies) > 0 {
		p.section("Evidence withheld (it contradicts itself or cannot be placed)")
		for _, in := range t.Inconsistencies {
			p.wrap("  ", p.st.warn.Render("! ")+in.Note)
		}
	}

	if c := conditionsText(t.Conditions); c != "" && p.details {
		p.section("Request conditions")
		p.wrap("  ", c)
	}
	p.latency(t.LatencyMap)
	p.percentiles(t.Evidence)
	if p.details {
		p.overWindow(t.Curves)
		p.curve(t.Curves["prompt_ttft"], t.Conditions)
	}
	p.findings(v)
	if len(v.Steps) > 0 {
		p.section("Next steps, cheapest first")
		steps := v.Steps
		if !p.details {
			steps = v.FirstSteps()
		}
		for i, s := range steps {
			p.wrap("  ", fmt.Sprintf("%d. [%s] %s", i+1, s.Cost, s.Do))
			if s.Effect != nil {
				p.wrap("     ", p.st.dim.Render(EffectText(s.Effect)))
			}
		}
		if n := len(v.Steps) - len(steps); n > 0 {
			p.wrap("  ", p.st.dim.Render(fmt.Sprintf("+ %d more step%s, costlier", n, plural(n))))
		}
		for _, l := range t.NextLeftOut {
			p.wrap("  ", p.st.dim.Render(LeftOutText(l)))
		}
	}
	if !p.details {
		p.held = p.held || len(t.Gaps) > 0 || len(t.Skipped) > 0 || len(t.Suppressed) > 0 || len(t.Members) > 0 ||
			len(t.Findings) > 0 || conditionsText(t.Conditions) != "" || len(vd.Bounded) > 0
		p.summary(v)
		return
	}
	if len(t.Gaps) > 0 {
		p.section("Could not check")
		if line := v.Gaps.EngineLine(); line != "" {
			p.wrap("  ", "? "+line)
		}
		for _, g := range v.Gaps.Rest {
			p.wrap("  ", fmt.Sprintf("? %s: needs %s", g.Rule, strings.Join(view.Needs(g), ", ")))
			if g.Bounded != "" {
				p.wrap("      ", p.st.dim.Render("could not have fired: "+g.Bounded))
			}
			if g.How != "" {
				p.wrap("      ", p.st.dim.Render("how: "+g.How))
			}
		}
	}
	for _, sk := range v.Gaps.Skipped {
		p.blank()
		p.wrap("  ", p.st.dim.Render(sk.Line+" ("+sk.How+")"))
	}
	if len(t.Suppressed) > 0 {
		p.section("Suppressed")
		for _, f := range t.Suppressed {
			p.wrap("  ", fmt.Sprintf("- %s: %s", f.Rule, f.Suppressed))
		}
	}
	if len(t.Members) > 0 {
		p.section("Per instance / engine")
		for _, m := range t.Members {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(m.Evidence)) {
				parts = append(parts, k+"="+formatValue(k, m.Evidence[k]))
			}
			p.wrap("  ", memberName(m.Target)+": "+strings.Join(parts, " "))
		}
	}
	p.blank()
	p.fit(p.st.dim.Render(v.Checks))
}

// findings lists a target's findings, each with those it explains under
// it; on the first screen the top few, without evidence lines.
func (p *printer) findings(v view.Target) {
	if len(v.Findings) == 0 {
		return
	}
	p.section("Findings")
	shown := v.Findings
	if !p.details {
		shown = v.FirstFindings()
	}
	for _, f := range shown {
		p.finding(f.Finding, "  ")
		if p.details {
			for _, g := range f.Explained {
				p.wrap("    ", p.st.dim.Render("↳ explained by the finding above:"))
				p.finding(g, "      ")
			}
			continue
		}
		switch len(f.Explained) {
		case 0:
		case 1:
			g := f.Explained[0]
			p.wrap("    ", p.st.dim.Render("↳ explains "+g.Rule+": "+g.Title))
		default:
			ids := make([]string, len(f.Explained))
			for i, g := range f.Explained {
				ids[i] = g.Rule
			}
			p.wrap("    ", p.st.dim.Render(fmt.Sprintf("↳ explains %d findings: %s", len(ids), strings.Join(ids, ", "))))
		}
	}
	if rest := v.Findings[len(shown):]; len(rest) > 0 {
		ids := make([]string, len(rest))
		for i, f := range rest {
			ids[i] = f.Rule
		}
		p.wrap("  ", p.st.dim.Render(fmt.Sprintf("+ %d more finding%s: %s", len(rest), plural(len(rest)), strings.Join(ids, ", "))))
	}
}

// summary is the first screen's last word on a target: one line for what
// could not be checked, one for the replicas or engines behind it, then the
// count of checks.
func (p *printer) summary(v view.Target) {
	t := v.Report
	var parts []string
	if s := v.Gaps.CouldNotRunLine(); s != "" {
		parts = append(parts, s)
	}
	for _, sk := range v.Gaps.Skipped {
		parts = append(parts, sk.Line)
	}
	if len(parts) > 0 || len(t.Members) > 0 {
		p.blank()
	}
	if len(parts) > 0 {
		p.wrap("  ", "? "+strings.Join(parts, " · "))
	}
	if n := len(t.Members); n > 0 {
		p.wrap("  ", p.st.dim.Render(fmt.Sprintf("%d %s behind this target, each with its own numbers under --details", n, membersNoun(t.Members))))
	}
	p.blank()
	p.fit(p.st.dim.Render(v.Checks))
}

// membersNoun names what a target's members are: the engines of one model,
// or its instances.
func membersNoun(ms []advisor.Member) string {
	noun := "instance"
	if ms[0].Target.Engine != "" {
		noun = "engine"
	}
	if len(ms) > 1 {
		noun += "s"
	}
	return noun
}

func (p *printer) sevMark(sev string) string {
	mark, word := view.SeverityMark(sev)
	switch sev {
	case view.Critical:
		return p.st.crit.Render(mark + " " + word)
	case view.Warning:
		return p.st.warn.Render(mark + " " + word)
	}
	return p.st.info.Render(mark + " " + word)
}

func (p *printer) finding(f advisor.Finding, indent string) {
	p.wrap(indent, p.sevMark(f.Severity)+" "+f.Rule+": "+f.Title)
	p.wrap(indent+"  ", f.Message)
	if f.Impact != nil && f.ExplainedBy == "" {
		p.wrap(indent+"  ", p.st.dim.Render("impact: "+view.FindingOf(f).Impact))
	}
	if f.Capped != "" {
		p.wrap(indent+"  ", p.st.dim.Render("not the verdict: "+f.Capped))
	}
	if !p.details {
		return // the message cites its numbers; evidence, sources and docs follow with --details
	}
	var ev []string
	for _, k := range slices.Sorted(maps.Keys(f.Evidence)) {
		s := k + "=" + formatValue(k, f.Evidence[k])
		ev = append(ev, s)
	}
	if len(ev) > 0 {
		p.wrap(indent+"  ", p.st.dim.Render("evidence: "+strings.Join(ev, " ")))
	}
	var src []string
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(f.Sources)) {
		if s := f.Sources[k]; !seen[s] {
			seen[s] = true
			src = append(src, s)
		}
	}
	if len(src) > 0 {
		p.wrap(indent+"  ", p.st.dim.Render("from: "+strings.Join(src, ", ")))
	}
	p.wrap(indent+"  ", p.st.dim.Render("docs: "+f.Docs))
}

func (p *printer) latency(m advisor.LatencyMap) {
	if m.TTFT == nil {
		if m.Queue != nil || m.Prefill != nil {
			// TTFT withheld as inconsistent: the parts without shares.
			p.section("Latency map (TTFT withheld: see above)")
			var parts []string
			for _, x := range []struct {
				name string
				v    *float64
			}{{"queue", m.Queue}, {"prefill", m.Prefill}, {"decode", m.Decode}, {"end-to-end", m.E2E}} {
				if x.v != nil {
					parts = append(parts, x.name+" "+units.Duration(*x.v))
				}
			}
			p.wrap("  ", "mean "+strings.Join(parts, " · "))
			if b := m.BudgetLine(); b != "" {
				p.wrap("  ", b)
			}
		}
		if m.ClientTTFT != nil {
			p.section("Latency")
			p.clientLine(m)
		}
		return
	}
	if m.TTFTExcludesQueue {
		p.section(fmt.Sprintf("Latency map (mean TTFT %s: queue + the server's TTFT, which leaves queue out)", units.Duration(*m.TTFT)))
	} else {
		p.section(fmt.Sprintf("Latency map (mean TTFT %s)", units.Duration(*m.TTFT)))
	}
	parts := []struct {
		name string
		v    *float64
		hint string
	}{
		{"queue", m.Queue, "waiting for the scheduler"},
		{"prefill", m.Prefill, "computing the prompt"},
		{"front", m.Front, "before the engine saw the request (API server, tokenizer, hand-off)"},
	}
	if m.Transfer != nil {
		parts = slices.Insert(parts, 2, struct {
			name string
			v    *float64
			hint string
		}{"transfer", m.Transfer, "pulling the prompt's KV from the prefill instance"})
	}
	if m.Upstream != nil {
		// The prefill side's part, its KV push with it: the transfer row
		// is inside it.
		parts = slices.Insert(parts, 0, struct {
			name string
			v    *float64
			hint string
		}{"upstream", m.Upstream, "on the prefill instance: its front end, queue and prefill"})
	}
	// Bars take what the 80-column layout gives them (38) and scale with
	// the width; at least 10 columns, never past the line's end (25
	// columns of name, value and share come first).
	barWidth := max(0, min(p.width-25, max(p.width-42, 10)))
	for _, x := range parts {
		if x.v == nil {
			p.line(fmt.Sprintf("  %-8s %8s  %s", x.name, "?", p.st.dim.Render("not exported")))
			continue
		}
		share := 0.0
		if *m.TTFT > 0 {
			share = *x.v / *m.TTFT
		}
		n := int(share*float64(barWidth) + 0.5)
		n = min(max(n, 0), barWidth)
		bar := strings.Repeat("█", n) + strings.Repeat("·", barWidth-n)
		p.line(fmt.Sprintf("  %-8s %8s %4s %s", x.name, units.Duration(*x.v), units.WholePercent(share), bar))
	}
	if b := m.BudgetLine(); b != "" {
		p.wrap("  ", b)
	}
	if m.ClientTTFT != nil {
		p.clientLine(m)
	}
	// What each part is: "front" in particular is no stage a reader knows.
	var legend []string
	for _, x := range parts {
		if x.v != nil {
			legend = append(legend, x.name+": "+x.hint)
		}
	}
	p.wrap("  ", p.st.dim.Render(strings.Join(legend, " · ")))
}

// percentileRows are the latency distributions the percentile table shows:
// what clients saw (request files, benchmarks) and, beside it, the
// engine's own where its metrics give it.
var percentileRows = []struct{ label, path string }{
	{"TTFT", "service.client_ttft"}, {"TTFT (server)", "stage.ttft"},
	{"ITL", "service.client_itl"}, {"ITL (server)", "stage.itl"},
	{"TPOT", "service.client_tpot"}, {"TPOT (server)", "stage.tpot"},
	{"E2E", "service.client_e2e"}, {"E2E (server)", "service.e2e"},
}

// percentiles writes p50, p90 and p99 of each latency clients saw, beside
// the server's, when a request-level source gave them.
func (p *printer) percentiles(ev map[string]any) {
	if math.IsNaN(evidence.TreeNumber(ev, "service.client_ttft.p50")) && math.IsNaN(evidence.TreeNumber(ev, "service.client_e2e.p50")) {
		return
	}
	p.section("Latency percentiles (clients; the server where its metrics say)")
	p.line(fmt.Sprintf("  %-14s %8s %8s %8s %9s", "", "p50", "p90", "p99", "requests"))
	for _, r := range percentileRows {
		p50 := evidence.TreeNumber(ev, r.path+".p50")
		if math.IsNaN(p50) {
			continue
		}
		n := evidence.TreeNumber(ev, r.path+".count")
		count := units.Number(n)
		if strings.Contains(r.path, "itl") {
			count = "" // gaps, not requests
		}
		p.line(strings.TrimRight(fmt.Sprintf("  %-14s %8s %8s %8s %9s", r.label, units.Duration(p50), units.Duration(evidence.TreeNumber(ev, r.path+".p90")),
			units.Duration(evidence.TreeNumber(ev, r.path+".p99")), count), " "))
	}
}

func (p *printer) clientLine(m advisor.LatencyMap) {
	line := fmt.Sprintf("clients saw mean TTFT %s", units.Duration(*m.ClientTTFT))
	if m.NetworkShare != nil {
		line += fmt.Sprintf(", %s of it outside the server (network, client)", units.WholePercent(*m.NetworkShare))
	}
	p.wrap("  ", line)
}

// windowSeries are the time series drawn as sparklines "Over the window",
// in this order: the curve key (x seconds from the window's start, y per
// step; NaN for a step without data), its label and its unit.
var windowSeries = []struct {
	key, label string
	format     func(float64) string
}{
	{"ttft_p99_steps", "TTFT p99", units.Duration},
	{"waiting", "waiting", units.Number},
}

// sparkMin is how many finite points a series needs to be drawn: fewer
// make no line worth reading.
const sparkMin = 3

// overWindow draws one sparkline per series in windowSeries that has
// enough points, with its first and last values and its maximum in words:
//
//	TTFT p99  ▂▂▃▅▇█▇  1.20s → 3.40s (max 3.60s)
//	waiting   ▁▁▄██▆▃  0 → 12 (max 316)
//
// The lines share one time axis, column for column, so that a spike in
// one lines up with the other. When the line is too narrow for the marks
// and the words, the words go on the line below.
func (p *printer) overWindow(curves map[string][][2]float64) {
	type row struct {
		label, words string
		pts          [][2]float64
		top          float64
	}
	var rows []row
	var all [][2]float64
	for _, s := range windowSeries {
		var pts [][2]float64
		for _, pt := range curves[s.key] {
			if !plottable(pt[0]) {
				continue
			}
			all = append(all, pt) // a step without data is still a step
			if plottable(pt[1]) {
				pts = append(pts, pt)
			}
		}
		if len(pts) < sparkMin {
			continue
		}
		slices.SortStableFunc(pts, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
		top := 0.0
		for _, pt := range pts {
			top = max(top, pt[1])
		}
		rows = append(rows, row{s.label, fmt.Sprintf("%s → %s (max %s)",
			s.format(pts[0][1]), s.format(pts[len(pts)-1][1]), s.format(top)), pts, top})
	}
	if len(rows) == 0 {
		return
	}
	// One grid for every series, the ones too sparse to draw included.
	x0, step, n := stepGrid(all)
	const lead = 12 // "  TTFT p99  "
	words := 0
	for _, r := range rows {
		words = max(words, ansi.StringWidth(r.words))
	}
	cols, below := p.width-lead-2-words, false
	if cols < min(n, 12) {
		cols, below = max(1, p.width-lead), true
	}
	p.section("Over the window (heights from 0; blank: no data)")
	for _, r := range rows {
		marks := sparkline(onGrid(r.pts, x0, step, n), cols, r.top)
		if below {
			p.line(fmt.Sprintf("  %-8s  %s", r.label, marks))
			p.wrap(strings.Repeat(" ", lead), r.words)
			continue
		}
		// Every line of marks is as long (one grid, one width): the
		// words line up.
		p.line(fmt.Sprintf("  %-8s  %s  %s", r.label, marks, r.words))
	}
}

// plottable says whether x can be drawn: not NaN, not infinite.
func plottable(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// stepGrid finds the regular grid points lie on: the first x, the step
// (the median gap between distinct xs, so that one late or doubled sample
// does not change it) and how many steps span the points, at most 10000.
func stepGrid(pts [][2]float64) (x0, step float64, n int) {
	xs := make([]float64, len(pts))
	for i, pt := range pts {
		xs[i] = pt[0]
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	if len(xs) < 2 {
		return xs[0], 1, 1
	}
	gaps := make([]float64, len(xs)-1)
	for i := range gaps {
		gaps[i] = xs[i+1] - xs[i]
	}
	slices.Sort(gaps)
	step = gaps[(len(gaps)-1)/2]
	n = int(math.Min((xs[len(xs)-1]-xs[0])/step+0.5, 9999)) + 1
	return xs[0], step, n
}

// onGrid places points on n steps of the grid from x0: a step's value is
// the largest that falls on it, NaN when none does.
func onGrid(pts [][2]float64, x0, step float64, n int) []float64 {
	ys := make([]float64, n)
	for i := range ys {
		ys[i] = math.NaN()
	}
	for _, pt := range pts {
		k := min(max(int((pt[0]-x0)/step+0.5), 0), n-1)
		if math.IsNaN(ys[k]) || pt[1] > ys[k] {
			ys[k] = pt[1]
		}
	}
	return ys
}

// sparkLevels are a sparkline's eight heights, lowest first.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// sparkline draws ys in at most cols characters, one per point while they
// fit. When there are more points than columns, each character stands for
// a run of consecutive points (the series are one point per step) and
// shows their maximum, so a one-step spike survives; a run with no finite
// point is a space, so a gap never reads as a low value.
//
// Heights are scaled from 0 to top, not from the smallest value: the
// block k of 8 stands for values in ((k-1)/8, k/8] of top, so a height is
// in proportion to the value and a series that only wiggles (a p99 between
// 1.9s and 2.1s) reads as flat, as it is, instead of as a cliff. Zero is the
// lowest block; the words beside the line give the values.
func sparkline(ys []float64, cols int, top float64) string {
	n := len(ys)
	if n == 0 || cols <= 0 {
		return ""
	}
	cols = min(cols, n)
	var b strings.Builder
	for i := range cols {
		peak := math.NaN()
		for _, y := range ys[i*n/cols : (i+1)*n/cols] {
			if plottable(y) && (math.IsNaN(peak) || y > peak) {
				peak = y
			}
		}
		if math.IsNaN(peak) {
			b.WriteByte(' ')
			continue
		}
		k := 0
		if top > 0 {
			k = int(math.Ceil(peak/top*float64(len(sparkLevels)))) - 1
		}
		b.WriteRune(sparkLevels[min(max(k, 0), len(sparkLevels)-1)])
	}
	return b.String()
}

// curve draws median TTFT against prompt length as a small chart.
func (p *printer) curve(pts [][2]float64, cond map[string]any) {
	if len(pts) < 3 {
		return
	}
	const rows = 7
	cols := min(len(pts), p.width-14)
	if cols < 3 {
		return
	}
	pts = pts[:cols] // the scale and the labels are those of what is drawn
	maxY, maxX := 0.0, 0.0
	for _, pt := range pts {
		maxY, maxX = max(maxY, pt[1]), max(maxX, pt[0])
	}
	if maxY <= 0 {
		return
	}
	p.section("Prompt length → TTFT (median per length band)")
	grid := make([][]rune, rows)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", cols))
	}
	for i, pt := range pts {
		r := rows - 1 - int(pt[1]/maxY*float64(rows-1)+0.5)
		grid[max(0, min(rows-1, r))][i] = '•'
	}
	for r, row := range grid {
		label := ""
		switch r {
		case 0:
			label = units.Duration(maxY)
		case rows - 1:
			label = "0"
		}
		p.line(fmt.Sprintf("  %8s │%s", label, string(row)))
	}
	p.line(fmt.Sprintf("  %8s └%s", "", strings.Repeat("─", cols)))
	p.line(fmt.Sprintf("  %8s  0 … %s prompt tokens", "", units.Tokens(maxX)))
	get := func(k string) float64 { return evidence.TreeNumber(cond, k) }
	p.wrap("  ", fmt.Sprintf("fit: TTFT ≈ %s + %s per 1k prompt tokens (R² %s)%s",
		units.Duration(get("prompt_ttft_intercept")), units.Duration(get("prompt_ttft_slope")), units.Number(get("prompt_ttft_r2")),
		fitReading(get("prompt_ttft_r2"))))
}

// fitReading says what the prompt-length fit means, as far as its R²
// allows: a fit that explains little is no measure of prefill cost.
func fitReading(r2 float64) string {
	switch {
	case r2 >= 0.5:
		return ": the slope is prefill cost, the intercept fixed overhead"
	case r2 >= 0.1:
		return ": a loose fit (queueing or batching adds to TTFT), so the slope is a rough prefill cost"
	case r2 >= 0:
		return ": TTFT does not follow prompt length here, so the slope is not the prefill cost"
	}
	return ""
}

func conditionsText(c map[string]any) string {
	var parts []string
	get := func(path ...string) (float64, bool) {
		x := evidence.TreeNumber(c, strings.Join(path, "."))
		return x, evidence.Present(x)
	}
	if m, ok := get("prompt_tokens", "mean"); ok {
		s := "prompt " + units.Tokens(m) + " tokens mean"
		if p90, ok := get("prompt_tokens", "p90"); ok {
			s += " (p90 " + units.Tokens(p90) + ")"
		}
		parts = append(parts, s)
	}
	if m, ok := get("output_tokens", "mean"); ok {
		parts = append(parts, "output "+units.Tokens(m)+" tokens mean")
	}
	if x, ok := get("kv_capacity_tokens"); ok {
		parts = append(parts, "KV cache "+units.Tokens(x)+" tokens")
	}
	if x, ok := get("prefix_caching"); ok {
		parts = append(parts, map[bool]string{true: "prefix caching on", false: "prefix caching off"}[x == 1])
	}
	if x, ok := get("gpu_memory_utilization"); ok {
		parts = append(parts, "gpu-memory-utilization "+units.Number(x))
	}
	if x, ok := get("speculative"); ok && x == 1 {
		s := "speculative decoding"
		if k, ok := get("spec_tokens"); ok {
			s += " (" + units.Number(k) + " draft tokens)"
		}
		parts = append(parts, s)
	}
	if x, ok := get("lora"); ok && x == 1 {
		s := "LoRA adapters"
		if k, ok := get("max_loras"); ok {
			s += " (" + units.Number(k) + " slot" + plural(int(k)) + ")"
		}
		parts = append(parts, s)
	}
	if x, ok := get("router"); ok && x == 1 {
		parts = append(parts, "a router picks the replicas")
	}
	if x, ok := get("disaggregated"); ok && x == 1 {
		side := "decode side"
		if p, ok := get("prefill_side"); ok && p == 1 {
			side = "prefill side"
		}
		parts = append(parts, "prefill and decode on separate instances ("+side+")")
	}
	if x, ok := get("engines"); ok {
		parts = append(parts, units.Number(x)+" engine"+plural(int(x)))
	}
	return strings.Join(parts, " · ")
}

// formatValue prints a value in its catalogue unit.
func formatValue(path string, x float64) string { return view.Value(path, x) }

func targetName(t evidence.Target) string { return view.Name(t) }

func memberName(t evidence.Target) string {
	if t.Engine != "" {
		return "engine " + t.Engine
	}
	return "instance " + t.Instance
}
