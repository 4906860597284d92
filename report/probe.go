package report

import (
	"fmt"
	"io"

	"github.com/charmbracelet/lipgloss"

	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/view"
)

// ProbeText writes a probe for people: the capacity and the verdict first,
// then the sweep, the ladder and the diagnosis of the load that decides.
func ProbeText(w io.Writer, r *probe.Result, o Options) error {
	width := o.Width
	if width <= 0 {
		width = 80
	}
	st := newStyles(w, ColorOn(o.Color, o.IsTerminal))
	p := &printer{w: w, width: width, st: st, details: o.Details}
	v := view.ProbeOf(r)
	p.pair(st.head.Render("llmdoctor probe"), v.Target)
	p.blank()
	mark := p.sevStyle(v.CapacitySeverity).Render(v.CapacityMark + " " + v.CapacityWord)
	p.wrap("", mark+"  "+v.Capacity)
	if v.Band != "" {
		p.wrap("  ", v.Band)
	}
	if v.Breaks != "" {
		p.wrap("  ", "breaks "+v.Breaks)
	}
	if v.Verdict != nil {
		vd := v.Verdict
		p.wrap("", p.sevStyle(vd.Severity).Render(vd.Mark+" "+vd.Word)+"  at "+v.DiagnosedLoad+": "+vd.Names)
		if vd.Summary != "" {
			p.wrap("  ", vd.Summary)
		}
	}
	if v.Stopped != "" {
		p.wrap("", st.warn.Render("! ")+v.Stopped)
	}
	if v.Prefill != "" || v.Decode != "" {
		p.section("Alone (concurrency 1)")
		for _, l := range []string{v.Prefill, v.Decode} {
			if l != "" {
				p.wrap("  ", l)
			}
		}
	}
	if len(v.Steps) > 0 {
		p.section("Load ladder")
		head := fmt.Sprintf("  %6s %5s %6s %8s %8s %7s %7s %8s  %s", "load", "done", "req/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "E2E p99", "SLO")
		p.fit(st.dim.Render(head))
		var notes []string
		for _, s := range v.Steps {
			tag := ""
			switch {
			case s.Capacity:
				tag = " ← capacity"
			case s.Diagnosed && !s.Meets:
				tag = " ← breaks"
			}
			if s.Knee && !s.Capacity {
				tag += " ← knee"
			}
			if s.Note != "" {
				notes = append(notes, s.Load+": "+s.Note)
			}
			mark := st.ok.Render(s.Mark)
			if !s.Meets {
				mark = st.crit.Render(s.Mark)
			}
			p.fit(fmt.Sprintf("  %6s %5s %6s %8s %8s %7s %7s %8s  %s%s", s.Load, s.Requests, s.Throughput, s.TTFTP50, s.TTFTP99,
				s.ITLP50, s.ITLP99, s.E2EP99, mark, tag))
		}
		for _, n := range notes {
			p.wrap("  ", st.dim.Render("load "+n))
		}
		if v.Knee != "" {
			p.wrap("  ", v.Knee)
		}
		stages := false
		for _, s := range v.Steps {
			stages = stages || s.Queue != "" || s.Verdict != ""
		}
		if stages {
			p.blank()
			p.fit(st.dim.Render(fmt.Sprintf("  %6s %8s %8s %8s  %s", "load", "queue", "prefill", "decode", "diagnosis of the step")))
			for _, s := range v.Steps {
				p.fit(fmt.Sprintf("  %6s %8s %8s %8s  %s", s.Load, dash(s.Queue), dash(s.Prefill), dash(s.Decode), s.Verdict))
			}
		}
		if v.Stages != "" {
			p.wrap("  ", st.dim.Render(v.Stages))
		}
	}
	if v.Launch != "" {
		p.section("Pre-launch run")
		mark := st.ok.Render("✓")
		if !v.LaunchMeets {
			mark = st.crit.Render("✗")
		}
		p.wrap("  ", mark+" "+v.Launch)
	}
	p.section("Requests")
	p.wrap("  ", v.Sent)
	p.wrap("  ", "judged against "+v.SLO)
	for _, n := range v.Notes {
		p.wrap("  ", "note: "+n)
	}
	if v.Diagnosis != nil {
		p.blank()
		p.fit(st.head.Render("Diagnosis at " + v.DiagnosedLoad))
		p.target(*v.Diagnosis)
	}
	if p.held {
		p.blank()
		p.fit(p.st.dim.Render("--details: every finding with its evidence and sources, every check that could not run."))
	}
	return p.err
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// sevStyle is the style of a severity class.
func (p *printer) sevStyle(sev string) lipgloss.Style {
	switch sev {
	case view.Critical:
		return p.st.crit
	case view.Warning, view.Inconclusive:
		return p.st.warn
	case view.Healthy:
		return p.st.ok
	}
	return p.st.info
}

// ProbeJSON writes the probe as llmdoctor.probe/v1.
func ProbeJSON(w io.Writer, r *probe.Result) error {
	return writeJSON(w, r)
}

// ProbePlanText writes what a probe will send, before it sends anything.
func ProbePlanText(w io.Writer, p probe.Plan) error {
	pr := &printer{w: w, width: 80, st: newStyles(w, false)}
	pr.pair("llmdoctor probe plan", p.Target)
	pr.wrap("  ", view.ProbePlanLine(p))
	for _, l := range view.ProbePlanLimits(p) {
		pr.wrap("  ", l)
	}
	return pr.err
}
