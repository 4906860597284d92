package view

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/probe"
)

// Probe is a probe as people read it: the verdict and the capacity first,
// then what the sweep and the ladder measured, each a line every format
// prints as it is.
type Probe struct {
	// Target names the server and model probed.
	Target string
	// Capacity is the headline: the highest load that met the SLO, or
	// that none did. CapacitySeverity is healthy when some load met it,
	// critical when none did, inconclusive when nothing was measured.
	Capacity         string
	CapacitySeverity string
	CapacityMark     string
	CapacityWord     string
	// Band says how sure the capacity is: its throughput's band from the
	// step's size, and whether the p99s' bands also meet the SLO.
	Band string
	// Breaks says what the next load up missed.
	Breaks string
	// Verdict is the diagnosis of DiagnosedLoad; nil when none was made.
	// When that load met the SLO (no load broke it), the verdict names
	// what limits first as load rises, not a failure: its mark, word and
	// severity say so (i FIRST LIMIT, info). Diagnosis keeps the step's
	// own verdict.
	Verdict       *Verdict
	DiagnosedLoad string
	// Diagnosis is the diagnosed step's target, for its findings and steps.
	Diagnosis *Target
	// Prefill and Decode are the sweep's fit and the decode floor.
	Prefill, Decode string
	Knee            string
	// Steps are the ladder's rows, by load.
	Steps []ProbeStep
	// Launch is the pre-launch run in one line (its rate, what it met and
	// its verdict); empty when it did not run. LaunchMeets says whether
	// it met the SLO.
	Launch      string
	LaunchMeets bool
	// Stages says whether the steps are split by the engine's metrics.
	Stages string
	// Sent counts requests; Stopped says why the probe ended early.
	Sent, Stopped string
	SLO           string
	Notes         []string
}

// ProbeStep is one row of the ladder.
type ProbeStep struct {
	Load                            string
	Requests                        string
	Throughput, Goodput             string
	TTFTP50, TTFTP99, ITLP50        string
	ITLP99, TPOTP50, E2EP99         string
	Meets                           bool
	Mark                            string
	Misses                          string
	Queue, Prefill, Decode, Verdict string
	Note                            string
	Capacity, Knee, Diagnosed       bool
}

// ProbeOf builds the view of a probe.
func ProbeOf(r *probe.Result) Probe {
	v := Probe{Target: r.Target, SLO: sloWords(r.Plan.SLO), Stages: "", Notes: r.Notes}
	if r.Model != "" {
		v.Target += " · " + r.Model
	}
	noun := "concurrency"
	if r.Plan.OpenLoop {
		noun = "rate"
	}
	load := func(x float64) string {
		if r.Plan.OpenLoop {
			return units.Number(x) + "/s"
		}
		return units.Number(x)
	}
	c := r.Capacity
	switch {
	case c != nil:
		v.CapacitySeverity, v.CapacityMark, v.CapacityWord = Healthy, "✓", "CAPACITY"
		at := ""
		if c.AtLeast {
			at = "at least "
		}
		v.Capacity = fmt.Sprintf("%s%s %s, %s req/s (%s output tokens/s) within %s", at, noun, load(c.Load),
			rate(c.Throughput), units.Number(c.OutputTokens), v.SLO)
		v.Band = fmt.Sprintf("throughput %s–%s req/s (95%%, %d requests); goodput %s req/s", rate(c.Low), rate(c.High),
			r.Steps[c.Step].Completed, rate(c.Goodput))
		if !c.Surely {
			v.Band += "; the p99s' bands reach past the SLO: more requests per step would settle it"
		}
		if c.Broke >= 0 {
			b := r.Steps[c.Broke]
			v.Breaks = fmt.Sprintf("at %s %s: %s", noun, load(b.Load), strings.Join(b.Misses, ", "))
			if b.TooManyErrors {
				v.Breaks = fmt.Sprintf("at %s %s: %d of %d requests failed", noun, load(b.Load), b.Failed, b.Sent)
			}
		} else {
			v.Breaks = "no load measured missed the SLO: the ladder ended at its limit first"
		}
	case len(r.Steps) > 0:
		v.CapacitySeverity, v.CapacityMark, v.CapacityWord = Critical, "✗", "NO CAPACITY"
		b := r.Steps[0]
		v.Capacity = fmt.Sprintf("no load met %s; the lowest, %s %s, missed it", v.SLO, noun, load(b.Load))
		v.Breaks = strings.Join(b.Misses, ", ")
		if b.TooManyErrors {
			v.Breaks = fmt.Sprintf("%d of %d requests failed", b.Failed, b.Sent)
		}
	default:
		v.CapacitySeverity, v.CapacityMark, v.CapacityWord = Inconclusive, "?", "NOT MEASURED"
		v.Capacity = "the load ladder did not run"
		if r.Stopped != "" {
			v.Capacity += ": " + r.Stopped
		}
	}
	if r.Diagnosis != nil && r.DiagnosedStep >= 0 && r.DiagnosedStep < len(r.Steps) {
		for i := range r.Diagnosis.Targets {
			t := TargetOf(&r.Diagnosis.Targets[i])
			if i == 0 || r.Diagnosis.Targets[i].Target.Model == r.Model {
				v.Diagnosis = &t
			}
		}
		if v.Diagnosis != nil {
			v.Verdict = &v.Diagnosis.Verdict
			s := r.Steps[r.DiagnosedStep]
			v.DiagnosedLoad = fmt.Sprintf("%s %s", noun, load(s.Load))
			if s.MeetsSLO {
				v.DiagnosedLoad += " (the highest load measured, within the SLO)"
				if v.Verdict.Severity != Healthy && v.Verdict.Severity != Inconclusive {
					first := *v.Verdict
					first.Mark, first.Word, first.Severity = "i", "FIRST LIMIT", Info
					v.Verdict = &first
				}
			} else {
				v.DiagnosedLoad += " (the first load past the SLO)"
			}
		}
	}
	if f := r.Sweep.Fit; f != nil {
		v.Prefill = fmt.Sprintf("prefill %s per 1k prompt tokens (± %s), %s with no prompt; R² %.2f over %d requests of %s–%s tokens",
			units.Duration(f.PerKToken), units.Duration(f.PerKTokenErr), units.Duration(f.Intercept), f.R2, f.Points,
			units.Tokens(float64(f.MinTokens)), units.Tokens(float64(f.MaxTokens)))
	} else if r.Sweep.FitNote != "" {
		v.Prefill = "no prefill fit: " + r.Sweep.FitNote
	}
	if r.ITL != nil {
		v.Decode = fmt.Sprintf("inter-token latency alone %s (p50), %s (p99) over %d gaps", units.Duration(r.ITL.P50),
			units.Duration(r.ITL.P99), r.ITL.N)
	}
	if k := r.Knee; k != nil {
		v.Knee = fmt.Sprintf("past %s %s latency rises faster than throughput (%.1f× as fast)", noun, load(k.Load), k.Elasticity)
	}
	if r.Metrics != "" {
		v.Stages = "queue, prefill and decode from the engine's metrics at " + r.Metrics
	} else if r.MetricsNote != "" {
		v.Stages = "engine metrics " + r.MetricsNote
	}
	for i, s := range r.Steps {
		ps := ProbeStep{Load: load(s.Load), Requests: fmt.Sprint(s.Completed), Throughput: rate(s.Throughput),
			Goodput: rate(s.Goodput), TTFTP50: dur(s.TTFT.P50, s.TTFT.N), TTFTP99: dur(s.TTFT.P99, s.TTFT.N),
			ITLP50: dur(s.ITL.P50, s.ITL.N), ITLP99: dur(s.ITL.P99, s.ITL.N), TPOTP50: dur(s.TPOT.P50, s.TPOT.N),
			E2EP99: dur(s.E2E.P99, s.E2E.N), Meets: s.MeetsSLO, Misses: strings.Join(s.Misses, ", "), Verdict: s.Verdict,
			Capacity: c != nil && c.Step == i, Knee: r.Knee != nil && r.Knee.Step == i, Diagnosed: r.DiagnosedStep == i}
		if s.Failed > 0 {
			ps.Requests += fmt.Sprintf(" (%d failed)", s.Failed)
		}
		ps.Mark = "✓"
		if !s.MeetsSLO {
			ps.Mark = "✗"
		}
		if st := s.Stages; st != nil {
			ps.Queue, ps.Prefill, ps.Decode = ptrDur(st.Queue), ptrDur(st.Prefill), ptrDur(st.Decode)
		}
		var notes []string
		if s.Refined {
			notes = append(notes, "refined")
		}
		if s.ClientLimited {
			notes = append(notes, "held by the probe's limits")
		}
		if s.TooManyErrors {
			notes = append(notes, "too many errors")
		}
		ps.Note = strings.Join(notes, ", ")
		v.Steps = append(v.Steps, ps)
	}
	v.Steps = orderSteps(v.Steps, r)
	if l := r.Launch; l != nil {
		v.Launch, v.LaunchMeets = launchLine(r), l.MeetsSLO
	}
	took := r.Seconds
	if took >= 60 {
		took = math.Round(took)
	}
	v.Sent = fmt.Sprintf("%d request%s sent in %s (limit %d)", r.Sent, Plural(r.Sent), units.Duration(took),
		r.Plan.Limits.Requests)
	if r.Failed > 0 {
		v.Sent += fmt.Sprintf(", %d failed", r.Failed)
	}
	if r.Refused > 0 {
		v.Sent += fmt.Sprintf(" (%d refused with 429/503 and backed off)", r.Refused)
	}
	if r.Stopped != "" {
		v.Stopped = "stopped early: " + r.Stopped + "; everything above is what was measured before"
	}
	return v
}

// launchLine says what the pre-launch run measured: its open-loop rate
// (and its share of the capacity), its p99s against the SLO, and its
// verdict.
func launchLine(r *probe.Result) string {
	l := r.Launch
	share := ""
	if r.Plan.Launch < 0 {
		share = fmt.Sprintf(" (%s of the capacity's throughput)", units.WholePercent(-r.Plan.Launch))
	}
	s := fmt.Sprintf("open-loop %s/s%s, %d requests", rate(l.Load), share, l.Completed)
	if l.Failed > 0 {
		s += fmt.Sprintf(" (%d failed)", l.Failed)
	}
	s += fmt.Sprintf(": TTFT p99 %s, ITL p99 %s, end-to-end p99 %s, %s req/s", dur(l.TTFT.P99, l.TTFT.N),
		dur(l.ITL.P99, l.ITL.N), dur(l.E2E.P99, l.E2E.N), rate(l.Throughput))
	if l.MeetsSLO {
		s += "; within the SLO"
	} else {
		s += "; missed " + strings.Join(l.Misses, ", ")
		if l.TooManyErrors {
			s += fmt.Sprintf("; %d of %d requests failed", l.Failed, l.Sent)
		}
	}
	if l.Verdict != "" {
		s += "; engine verdict: " + l.Verdict
	}
	return s
}

// orderSteps puts the rows in load order (refined steps were run last).
func orderSteps(rows []ProbeStep, r *probe.Result) []ProbeStep {
	out := make([]ProbeStep, 0, len(rows))
	for _, i := range probe.ByLoad(r.Steps) {
		out = append(out, rows[i])
	}
	return out
}

func sloWords(s probe.SLO) string {
	var parts []string
	for _, x := range []struct {
		k string
		d time.Duration
	}{{"TTFT p99", s.TTFTP99}, {"ITL p99", s.ITLP99}, {"TPOT p50", s.TPOTP50}, {"end-to-end p99", s.E2EP99}} {
		if x.d > 0 {
			parts = append(parts, x.k+" ≤ "+units.ShortDuration(x.d))
		}
	}
	return strings.Join(parts, ", ")
}

func rate(x float64) string { return fmt.Sprintf("%.3g", x) }

func dur(x float64, n int) string {
	if n == 0 {
		return "—"
	}
	return units.Duration(x)
}

func ptrDur(x *float64) string {
	if x == nil {
		return "—"
	}
	return units.Duration(*x)
}

// ProbePlanLine says what a plan sends, in one paragraph.
func ProbePlanLine(p probe.Plan) string {
	var lens []string
	for _, n := range p.Lengths {
		lens = append(lens, fmt.Sprint(n))
	}
	var loads []string
	for i, l := range p.Loads {
		loads = append(loads, fmt.Sprintf("%s (%d)", units.Number(l), p.StepRequests[i]))
	}
	noun := "concurrency"
	if p.OpenLoop {
		noun = "open-loop rate per second"
	}
	s := fmt.Sprintf("%d requests at most: %d warm-up, then the sweep of %s-token prompts × %d at concurrency 1 (%d output tokens each), "+
		"then the ladder by %s %s with prompts of %d–%d tokens and %d output tokens, /v1/%s, streamed",
		p.Requests, p.Warmup, strings.Join(lens, ", "), p.Repeats, p.SweepOutput, noun, strings.Join(loads, ", "),
		p.PromptTokens[0], p.PromptTokens[1], p.OutputTokens, apiPath(p.API))
	if p.Refine && !p.OpenLoop {
		s += "; loads between the last that meets the SLO and the first that does not are added within the limits"
	}
	switch {
	case p.Launch < 0:
		s += fmt.Sprintf("; then the pre-launch run, open loop at %s of the capacity's throughput (%d requests)",
			units.WholePercent(-p.Launch), p.LaunchRequests)
	case p.Launch > 0:
		s += fmt.Sprintf("; then the pre-launch run, open loop at %s/s (%d requests)", units.Number(p.Launch), p.LaunchRequests)
	}
	return s + "."
}

func apiPath(api string) string {
	if api == "chat" {
		return "chat/completions"
	}
	return "completions"
}

// ProbePlanLimits are the limits a plan keeps, a line each.
func ProbePlanLimits(p probe.Plan) []string {
	l := p.Limits
	return []string{
		fmt.Sprintf("limits: %d requests, %s requests/s, %d in flight, %s in all, %d output tokens and %d prompt tokens a request, stop above %s failed",
			l.Requests, units.Number(l.Rate), l.Concurrency, units.ShortDuration(l.Duration), l.OutputTokens, l.PromptTokens, units.WholePercent(l.ErrorRate)),
		"judged against " + sloWords(p.SLO),
	}
}
