package report

import (
	"fmt"
	"strings"

	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/view"
)

// SlackProbe renders a probe as one message: the capacity in the header,
// the verdict at the load that breaks the SLO, the ladder as a table, the
// first next steps; the diagnosis's findings go in the thread.
func SlackProbe(r *probe.Result, o SlackOptions) []SlackMessage {
	if r == nil {
		return nil
	}
	v := view.ProbeOf(r)
	sev := map[string]string{view.Critical: SlackCritical, view.Healthy: SlackHealthy}[v.CapacitySeverity]
	if sev == "" {
		sev = SlackInconclusive
	}
	b := newSlackBlocks(o)
	ctx := []string{esc(v.Sent), "judged against " + esc(v.SLO)}
	if o.ReportURL != "" {
		ctx = append(ctx, slackLink(o.ReportURL, "full report"))
	}
	b.held(slackContextBlock(ctx))
	b.add(slackHeader(v.CapacityMark + " " + v.CapacityWord + " · " + slackLine(v.Target)))
	head := "*" + esc(slackLine(v.Capacity)) + "*"
	if v.Band != "" {
		head += "\n" + esc(v.Band)
	}
	if v.Breaks != "" {
		head += "\nbreaks " + esc(v.Breaks)
	}
	if v.Stopped != "" {
		head += "\n! " + esc(v.Stopped)
	}
	b.add(slackSection(cutMrkdwn(head, 1500)))
	if v.Verdict != nil {
		_, verdict := slackVerdict(*v.Verdict)
		s := "*" + esc(verdict) + "* at " + esc(v.DiagnosedLoad)
		if v.Verdict.Summary != "" {
			s += "\n" + esc(slackLine(v.Verdict.Summary))
		}
		b.add(slackSection(cutMrkdwn(s, 1500)))
	}
	if lines := []string{v.Prefill, v.Decode}; v.Prefill != "" || v.Decode != "" {
		var s []string
		for _, l := range lines {
			if l != "" {
				s = append(s, esc(l))
			}
		}
		b.add(slackSection(strings.Join(s, "\n")))
	}
	if len(v.Steps) > 0 {
		rows := []string{fmt.Sprintf("%6s %6s %8s %8s %7s %8s  %s", "load", "req/s", "TTFT p50", "TTFT p99", "ITL p99", "E2E p99", "SLO")}
		for _, s := range v.Steps {
			tag := ""
			if s.Capacity {
				tag = " ← capacity"
			} else if s.Diagnosed && !s.Meets {
				tag = " ← breaks"
			}
			rows = append(rows, fmt.Sprintf("%6s %6s %8s %8s %7s %8s  %s%s", s.Load, s.Throughput, s.TTFTP50, s.TTFTP99, s.ITLP99, s.E2EP99, s.Mark, tag))
		}
		b.add(slackSection(cutMrkdwn("```"+esc(strings.Join(rows, "\n"))+"```", 2900)))
	}
	if v.Launch != "" {
		mark := "✓"
		if !v.LaunchMeets {
			mark = "✗"
		}
		b.add(slackSection(cutMrkdwn("*Pre-launch run* "+mark+" "+esc(v.Launch), 1500)))
	}
	if v.Diagnosis != nil {
		var steps []string
		for i, s := range v.Diagnosis.FirstSteps() {
			steps = append(steps, fmt.Sprintf("%d. %s", i+1, esc(slackLine(s.Do))))
		}
		b.lines("*Next steps*", steps, "step")
	}
	text := fmt.Sprintf("llmdoctor probe: %s %s", v.CapacityWord, v.Capacity)
	msg := SlackMessage{Target: v.Target, Severity: sev, Main: b.main(text, sev)}
	if v.Diagnosis != nil && len(v.Diagnosis.Findings) > 0 {
		th := newSlackThread(o, text, slackSection("*Findings at "+esc(v.DiagnosedLoad)+"*"))
		for _, f := range v.Diagnosis.Findings {
			th.add(slackSection(slackFinding(*v.Diagnosis.Report, f.Finding)), "finding", 1)
		}
		msg.Details = th.messages()
	}
	return []SlackMessage{msg}
}
