package probe

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/requests"
	"github.com/llmdoctor/llmdoctor/collectors/scrape"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/redact"
)

// scrapeInterval is the time between scrapes of the engine during a step.
const scrapeInterval = time.Second

// findMetrics decides which /metrics to scrape: the ones given, else the
// target's own when it answers with metrics.
func (r *runner) findMetrics(ctx context.Context) {
	if r.o.NoMetrics {
		r.res.MetricsNote = "not scraped (turned off): steps are not split into queue, prefill and decode"
		return
	}
	urls := r.o.Metrics
	if len(urls) == 0 {
		urls = []string{r.plan.Target + "/metrics"}
	}
	r.scrapeClient = &http.Client{Timeout: 10 * time.Second}
	if len(r.o.Header) > 0 {
		r.scrapeClient.Transport = headerTransport{http.DefaultTransport, r.o.Header}
	}
	var alive []string
	for _, u := range urls {
		u = scrape.MetricsURL(u)
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := scrape.Fetch(fctx, r.scrapeClient, u)
		cancel()
		if err != nil {
			r.note("engine metrics: %s", redact.String(err.Error()))
			continue
		}
		alive = append(alive, u)
	}
	if len(alive) == 0 {
		r.res.MetricsNote = "no engine /metrics answered: steps are not split into queue, prefill and decode, and the diagnosis rests on the probe's own timings"
		return
	}
	r.metrics = alive
	r.res.Metrics = redact.String(alive[0])
	for _, u := range r.o.GPUExporters {
		r.gpus = append(r.gpus, scrape.MetricsURL(u))
	}
}

type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.h {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// scrapeDuring scrapes the engine (and GPU exporters) from now until the
// returned function is called, which takes a last scrape and gives the
// window (nil when nothing is scraped or the scrape failed).
func (r *runner) scrapeDuring(ctx context.Context) func() *window.Window {
	if len(r.metrics) == 0 {
		return func() *window.Window { return nil }
	}
	until := make(chan struct{})
	done := make(chan *window.Window, 1)
	// The scrape outlives the step's own deadline by its last scrape.
	sctx := context.WithoutCancel(ctx)
	sctx, cancel := context.WithTimeout(sctx, r.o.StepTime+time.Minute)
	s := &scrape.Scraper{URLs: append(append([]string{}, r.metrics...), r.gpus...), Interval: scrapeInterval,
		Duration: r.o.StepTime + time.Minute, Client: r.scrapeClient, Until: until}
	go func() {
		w, err := s.Run(sctx)
		if err != nil {
			r.mu.Lock()
			r.note("engine metrics: %s", redact.String(err.Error()))
			r.mu.Unlock()
			w = nil
		}
		done <- w
	}()
	return func() *window.Window {
		close(until)
		w := <-done
		cancel()
		return w
	}
}

// diagnoseStep runs the pipeline over a step: the engine's window, when
// scraped, and the step's requests as the probe measured them. It sets the
// step's verdict and stages, and returns the diagnosis and its input.
func (r *runner) diagnoseStep(st *Step, w *window.Window) (*advisor.Diagnosis, *diagnosis.Input) {
	in := &diagnosis.Input{Window: w}
	from := fmt.Sprintf("probe: concurrency %g", st.Load)
	if st.OpenLoop {
		from = fmt.Sprintf("probe: %.3g requests/s", st.Load)
	}
	// A ladder step at a fixed concurrency is a closed loop by design: the
	// ladder itself finds where queueing starts, so the step does not
	// claim a request rate that rules would fault as a closed loop.
	run := requests.Run{RequestRate: st.Load, MaxConcurrency: float64(r.o.Limits.Concurrency)}
	if !st.OpenLoop {
		run = requests.Run{RequestRate: math.NaN(), MaxConcurrency: st.Load}
	}
	if acc, notes, err := requests.Collect(records(st.Requests), run, from); err == nil {
		in.Requests = append(in.Requests, diagnosis.Measured(from, acc))
		in.Sources = append(in.Sources, advisor.Source{Kind: diagnosis.KindRequests, Path: from, OK: true, Notes: notes})
	}
	if w != nil {
		in.Sources = append([]advisor.Source{{Kind: diagnosis.KindScrape, URL: r.res.Metrics, OK: true}}, in.Sources...)
	}
	if w == nil && len(in.Requests) == 0 {
		return nil, nil
	}
	d := in.Diagnose(r.set, r.cfg)
	t := r.pickTarget(d)
	if t == nil {
		return d, in
	}
	st.Verdict = t.Primary.Bottleneck
	if t.Primary.Status != "" && t.Primary.Status != "found" {
		st.Verdict += " (" + t.Primary.Status + ")"
	}
	if w != nil {
		lm := t.LatencyMap
		st.Stages = &Stages{Queue: lm.Queue, Prefill: lm.Prefill, Decode: lm.Decode, TTFT: lm.TTFT, E2E: lm.E2E,
			TTFTExcludesQueue: lm.TTFTExcludesQueue}
	}
	return d, in
}

type stepDiagnosis struct {
	step int
	d    *advisor.Diagnosis
	in   *diagnosis.Input
}

// pickTarget is the diagnosis's target for the probed model, else its first.
func (r *runner) pickTarget(d *advisor.Diagnosis) *advisor.TargetReport {
	if len(d.Targets) == 0 {
		return nil
	}
	for i := range d.Targets {
		if d.Targets[i].Target.Model == r.c.Model {
			return &d.Targets[i]
		}
	}
	return &d.Targets[0]
}
