package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/report/chart"
	"github.com/llmdoctor/llmdoctor/view"
)

// probeCSS is the probe page's own rules, added after the shared sheet so
// that the other pages stay as they are.
//
//go:embed html_probe.css
var probeCSS string

// pageProbe is what the probe block draws: every line from view.ProbeOf,
// and the charts drawn from the result's numbers.
type pageProbe struct {
	Target                        string
	CapClass, CapMark, CapWord    string
	Capacity, Band, Breaks        string
	VerdictClass, VerdictWord     string
	VerdictMark, VerdictNames     string
	VerdictSummary, DiagnosedLoad string
	Stopped                       string
	Charts                        []pageChart
	NoCharts                      []string
	Alone                         []string
	Knee, Stages                  string
	Steps                         []pageProbeStep
	HasStages, HasVerdicts        bool
	Sent, SLO                     string
	Launch, LaunchClass           string
	LaunchMeets                   bool
	Notes                         []string
	Diagnosis                     *pageTarget
	DiagnosisHeading              string
	LoadWord                      string
}

// pageProbeStep is one row of the ladder's table.
type pageProbeStep struct {
	view.ProbeStep
	// Class colours the row: ok for the capacity, critical for the load
	// that breaks; Tags name them in words.
	Class string
	Tags  string
}

// ProbeHTML writes a probe as one self-contained page, with the look and
// the Content-Security-Policy of the diagnosis page: the capacity and the
// verdict first, then TTFT against prompt length with the sweep's fit,
// latency and throughput against load with the SLO, the knee and the
// capacity marked, the ladder as a table, and the diagnosis of the load
// that decides, drawn as a diagnosis page draws a target.
func ProbeHTML(w io.Writer, r *probe.Result, o Options) error {
	if r == nil {
		return fmt.Errorf("html: no probe result to render")
	}
	v := view.ProbeOf(r)
	target := v.Target
	if o.TargetName != "" {
		target = o.TargetName
	}
	p := newPage(strings.TrimSpace(v.CapacityWord+" · "+target)+" · llmdoctor probe", "llmdoctor probe", o)
	pp := &pageProbe{Target: target, Capacity: v.Capacity, Band: v.Band, Breaks: v.Breaks, Stopped: v.Stopped,
		Knee: v.Knee, Stages: v.Stages, Sent: v.Sent, SLO: v.SLO, Notes: v.Notes, LoadWord: "concurrency",
		Launch: v.Launch, LaunchMeets: v.LaunchMeets, LaunchClass: "critical"}
	if v.LaunchMeets {
		pp.LaunchClass = "ok"
	}
	if r.Plan.OpenLoop {
		pp.LoadWord = "rate"
	}
	pp.CapClass, pp.CapMark, pp.CapWord = probeClass(v.CapacitySeverity), v.CapacityMark, strings.ToLower(v.CapacityWord)
	if vd := v.Verdict; vd != nil {
		pp.VerdictClass, pp.VerdictWord, pp.VerdictMark = pageVerdict(*vd)
		pp.VerdictNames, pp.VerdictSummary, pp.DiagnosedLoad = vd.Names, vd.Summary, v.DiagnosedLoad
	}
	for _, l := range []string{v.Prefill, v.Decode} {
		if l != "" {
			pp.Alone = append(pp.Alone, l)
		}
	}
	for _, s := range v.Steps {
		ps := pageProbeStep{ProbeStep: s}
		var tags []string
		switch {
		case s.Capacity:
			ps.Class = "ok"
			tags = append(tags, "capacity")
		case s.Diagnosed && !s.Meets:
			ps.Class = "critical"
			tags = append(tags, "breaks")
		}
		if s.Knee {
			tags = append(tags, "knee")
		}
		if s.Diagnosed {
			tags = append(tags, "diagnosed below")
		}
		ps.Tags = strings.Join(tags, ", ")
		pp.HasStages = pp.HasStages || s.Queue != "" || s.Prefill != "" || s.Decode != ""
		pp.HasVerdicts = pp.HasVerdicts || s.Verdict != ""
		pp.Steps = append(pp.Steps, ps)
	}
	pp.Charts, pp.NoCharts = probeCharts(r)
	if v.Diagnosis != nil && r.Diagnosis != nil {
		pt := targetPage(0, *v.Diagnosis, r.Diagnosis.Window)
		pp.Diagnosis = &pt
		pp.DiagnosisHeading = "Diagnosis at " + v.DiagnosedLoad
	}
	p.Probe = pp
	p.CSS += template.CSS(probeCSS)
	return pages.ExecuteTemplate(w, "page", p)
}

// probeClass is the CSS class of a view severity.
func probeClass(sev string) string {
	switch sev {
	case view.Healthy:
		return "ok"
	case view.Inconclusive, "":
		return "unknown"
	}
	return sev
}

// probeCharts draws the sweep and the ladder, and names the charts that
// have nothing to draw with the reason.
func probeCharts(r *probe.Result) (charts []pageChart, none []string) {
	add := func(ch interface {
		SVG() string
		Alt() string
	}, id, title, caption string) bool {
		svg := ch.SVG()
		if svg == "" {
			return false
		}
		charts = append(charts, pageChart{ID: id, Title: title, SVG: svg, Alt: ch.Alt(), Caption: caption})
		return true
	}

	// The sweep: each completed request at concurrency 1.
	var pts [][2]float64
	for _, s := range r.Sweep.Samples {
		if !s.OK() {
			continue
		}
		x := s.Asked
		if s.Usage {
			x = s.Prompt
		}
		if x > 0 {
			pts = append(pts, [2]float64{float64(x), s.TTFT})
		}
	}
	sc := chart.Scatter{ID: "probe-prompt", Title: "TTFT against prompt length",
		X: chart.Axis{Label: "prompt tokens", Unit: chart.Tokens}, Y: chart.Axis{Label: "TTFT", Unit: chart.Seconds}, Points: pts}
	caption := "each dot one request of the sweep, at concurrency 1"
	if !r.Tokens.Usage {
		caption += "; prompt lengths are the planned ones: the server reported no token counts"
	}
	if f := r.Sweep.Fit; f != nil {
		sc.Fit = &chart.Fit{Slope: f.PerKToken / 1000, Intercept: f.Intercept,
			Label: fmt.Sprintf("TTFT ≈ %s + %s per 1k tokens", units.Duration(f.Intercept), units.Duration(f.PerKToken))}
		caption += fmt.Sprintf("; fitted line R² %.2f", f.R2)
	} else if r.Sweep.FitNote != "" {
		caption += "; no fitted line: " + r.Sweep.FitNote
	}
	if !add(sc, sc.ID, sc.Title, caption) {
		none = append(none, "TTFT against prompt length: no request of the sweep completed")
	}

	// The ladder, in load order; a step that completed nothing is a gap.
	order := probe.ByLoad(r.Steps)
	x := chart.Axis{Label: "concurrency", Unit: chart.Count}
	noun := "concurrency"
	if r.Plan.OpenLoop {
		x.Label, noun = "offered requests/s", "rate"
	}
	var marks []chart.Mark
	if k := r.Knee; k != nil {
		marks = append(marks, chart.Mark{X: k.Load, Label: "knee"})
	}
	if c := r.Capacity; c != nil {
		marks = append(marks, chart.Mark{X: c.Load, Label: "capacity"})
	}
	series := func(name string, f func(s *probe.Step) (float64, bool)) chart.Series {
		out := chart.Series{Name: name}
		for _, i := range order {
			y, ok := f(&r.Steps[i])
			if !ok {
				y = math.NaN()
			}
			out.Points = append(out.Points, [2]float64{r.Steps[i].Load, y})
		}
		return out
	}
	pct := func(name string, get func(s *probe.Step) probe.Percentiles, q func(p probe.Percentiles) float64) chart.Series {
		return series(name, func(s *probe.Step) (float64, bool) {
			p := get(s)
			return q(p), p.N > 0
		})
	}
	p99 := func(p probe.Percentiles) float64 { return p.P99 }
	p50 := func(p probe.Percentiles) float64 { return p.P50 }
	ttft := func(s *probe.Step) probe.Percentiles { return s.TTFT }
	itl := func(s *probe.Step) probe.Percentiles { return s.ITL }
	tpot := func(s *probe.Step) probe.Percentiles { return s.TPOT }
	e2e := func(s *probe.Step) probe.Percentiles { return s.E2E }
	slo := r.Plan.SLO
	ref := func(name string, d time.Duration) []chart.Ref {
		if d <= 0 {
			return nil
		}
		return []chart.Ref{{Y: d.Seconds(), Label: "SLO " + name + " ≤ " + units.ShortDuration(d)}}
	}
	loadCaption := "each step's percentiles over its completed requests, by " + noun
	if len(r.Steps) == 0 {
		none = append(none, "latency and throughput against load: the load ladder did not run")
		return charts, none
	}
	// TTFT and the decode figures differ a hundredfold: each has its own
	// axis, so that neither is a flat line at the bottom of the other's.
	lat := chart.Line{ID: "probe-ttft", Title: "TTFT against load", X: x, Y: chart.Axis{Label: "TTFT", Unit: chart.Seconds},
		Series: []chart.Series{pct("TTFT p99", ttft, p99), pct("TTFT p50", ttft, p50)},
		Refs:   ref("TTFT p99", slo.TTFTP99), Marks: marks}
	if !add(lat, lat.ID, lat.Title, loadCaption) {
		none = append(none, "TTFT against load: no step completed a request")
	}
	dec := chart.Line{ID: "probe-itl", Title: "Inter-token latency against load", X: x, Y: chart.Axis{Label: "time between tokens", Unit: chart.Seconds},
		Series: []chart.Series{pct("ITL p99", itl, p99), pct("TPOT p50", tpot, p50)},
		Refs:   append(ref("ITL p99", slo.ITLP99), ref("TPOT p50", slo.TPOTP50)...), Marks: marks}
	if !add(dec, dec.ID, dec.Title, loadCaption) {
		none = append(none, "inter-token latency against load: no step streamed two tokens")
	}
	if slo.E2EP99 > 0 {
		end := chart.Line{ID: "probe-e2e", Title: "End-to-end latency against load", X: x, Y: chart.Axis{Label: "end-to-end", Unit: chart.Seconds},
			Series: []chart.Series{pct("end-to-end p99", e2e, p99)}, Refs: ref("end-to-end p99", slo.E2EP99), Marks: marks}
		add(end, end.ID, end.Title, loadCaption)
	}
	done := func(s *probe.Step) bool { return s.Seconds > 0 }
	thr := chart.Line{ID: "probe-throughput", Title: "Throughput and goodput against load", X: x,
		Y: chart.Axis{Label: "requests/s", Unit: chart.Count},
		Series: []chart.Series{
			series("throughput", func(s *probe.Step) (float64, bool) { return s.Throughput, done(s) }),
			series("goodput (met the SLO)", func(s *probe.Step) (float64, bool) { return s.Goodput, done(s) }),
		}, Marks: marks}
	if !add(thr, thr.ID, thr.Title, "completed requests per second, and those that met the SLO each on its own") {
		none = append(none, "throughput against load: no step ran")
	}
	return charts, none
}
