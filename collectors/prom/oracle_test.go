package prom

// The collector as it was before it summed targets on the server: every
// family read per member (instance, rank) and summed by the builder. Frozen
// here as the oracle the aggregating collector is compared with.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

func oldCollect(c *Collector, ctx context.Context) (*window.Window, error) {
	start, end := c.opt.End.Add(-c.opt.Window), c.opt.End
	w := window.New()
	w.Start, w.End = start, end
	w.From = c.url
	// A range query evaluates at start, start+step, … up to end: the last
	// point falls short of end when the step does not divide the window.
	w.Points = int(c.opt.Window/c.opt.Step) + 1
	w.Times = make([]time.Time, w.Points)
	for i := range w.Times {
		w.Times[i] = start.Add(time.Duration(i) * c.opt.Step)
	}

	names, err := c.discover(ctx, start, end)
	if err != nil {
		return nil, err
	}
	var jobs []func(context.Context) error
	var mu sync.Mutex
	haveEngine := false
	queried := map[string]bool{}
	for _, eng := range engine.Engines() {
		for _, m := range eng.Catalogue {
			// Every name present, not only the newest: targets may differ
			// (one model scraped directly, one through a gateway), and the
			// builder picks per target.
			for _, name := range pick(m, names) {
				if queried[name] {
					// One family under two keys (SGLang's prompt tokens are
					// also its prefix cache's lookups) is read once.
					continue
				}
				queried[name] = true
				haveEngine = true
				jobs = append(jobs, oldJob(c, w, &mu, m, name, c.copies(eng)))
			}
		}
	}
	if !haveEngine {
		return nil, &Error{Kind: NoMetrics, URL: c.url, Selector: c.opt.Selector, Start: start, End: end}
	}
	for _, x := range engine.Exporters() {
		for _, alt := range x.Gauges {
			for _, name := range alt {
				if !names[name] {
					continue
				}
				q := fmt.Sprintf("avg by (%s) (%s)", strings.Join(x.Keep, ", "), c.stepSamples(name))
				jobs = append(jobs, func(ctx context.Context) error { return oldGauge(c, ctx, w, &mu, name, q) })
				break
			}
		}
	}
	if err := c.run(ctx, jobs); err != nil {
		return nil, err
	}
	w.Notes = append(w.Notes, dedup(c.notes)...)
	return w, nil
}

func oldJob(c *Collector, w *window.Window, mu *sync.Mutex, m engine.Metric, name string, copies []string) func(context.Context) error {
	keep := c.keep(append(append([]string{}, m.Keep...), matchLabels(m)...)...)
	switch m.Kind {
	case engine.Counter:
		return func(ctx context.Context) error {
			v, err := oldInstant(c, ctx, fmt.Sprintf("sum by (%s) (%s)", keep, once(copies, fmt.Sprintf("increase(%s[%s])", c.sel(name, "", matchers(m)...), c.rng()))))
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range v {
				w.Counters[name] = append(w.Counters[name], window.Counter{Labels: labels(s.Metric), Increase: float64(s.Value)})
			}
			return nil
		}
	case engine.Histogram:
		return func(ctx context.Context) error {
			return oldHistogram(c, ctx, w, mu, name, keep, matchers(m), copies)
		}
	case engine.Gauge:
		return func(ctx context.Context) error {
			// Counts add up across the series a group folds together (gateway
			// workers); shares average, as the builder does; a page size is
			// one value.
			agg := "sum"
			switch {
			case m.Ratio():
				agg = "avg"
			case m.Key == engine.PageSize:
				agg = "max"
			}
			return oldGauge(c, ctx, w, mu, name, fmt.Sprintf("%s by (%s) (%s)", agg, keep, once(copies, c.stepSamples(name, matchers(m)...))))
		}
	default:
		return func(ctx context.Context) error {
			v, err := oldInstant(c, ctx, fmt.Sprintf("last_over_time(%s[%s])", c.sel(name, ""), c.rng()))
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range v {
				w.Infos[name] = append(w.Infos[name], window.Info{Labels: labels(s.Metric)})
			}
			return nil
		}
	}
}

func oldHistogram(c *Collector, ctx context.Context, w *window.Window, mu *sync.Mutex, name, keep string, match, copies []string) error {
	inc := func(part string, rng model.Duration) string {
		return once(copies, fmt.Sprintf("increase(%s[%s])", c.sel(name, part, match...), rng))
	}
	buckets, err := oldInstant(c, ctx, fmt.Sprintf("sum by (%s, le) (%s)", keep, inc("_bucket", model.Duration(c.opt.Window))))
	if err != nil {
		return err
	}
	var perStep model.Matrix
	if engine.StepFamily(name) {
		// Each step's increase, at the window's points: behaviour over time.
		c.sent.Add(1)
		q := fmt.Sprintf("sum by (%s, le) (%s)", keep, inc("_bucket", model.Duration(c.opt.Step)))
		val, warns, _, err := c.api.QueryRange(ctx, q, v1.Range{Start: w.Start, End: w.End, Step: c.opt.Step})
		if err != nil {
			return c.explain(err, q)
		}
		c.warn([]string(warns))
		perStep, _ = val.(model.Matrix)
	}
	sums, err := oldInstant(c, ctx, fmt.Sprintf("sum by (%s) (%s)", keep, inc("_sum", model.Duration(c.opt.Window))))
	if err != nil {
		return err
	}
	counts, err := oldInstant(c, ctx, fmt.Sprintf("sum by (%s) (%s)", keep, inc("_count", model.Duration(c.opt.Window))))
	if err != nil {
		return err
	}
	hs := map[string]*window.Histogram{}
	get := func(m model.Metric) *window.Histogram {
		l := labels(m)
		delete(l, "le")
		k := l.Key()
		if hs[k] == nil {
			hs[k] = &window.Histogram{Labels: l}
		}
		return hs[k]
	}
	for _, s := range buckets {
		le, err := parseLE(string(s.Metric["le"]))
		if err != nil {
			continue
		}
		h := get(s.Metric)
		h.Buckets = append(h.Buckets, window.Bucket{UpperBound: le, Count: float64(s.Value)})
	}
	for _, s := range sums {
		get(s.Metric).Sum = float64(s.Value)
	}
	for _, s := range counts {
		get(s.Metric).Count = float64(s.Value)
	}
	for _, s := range perStep {
		le, err := parseLE(string(s.Metric["le"]))
		if err != nil {
			continue
		}
		h := get(s.Metric)
		if h.Steps == nil {
			h.Steps = make([][]window.Bucket, w.Points)
		}
		for _, p := range s.Values {
			i := int(math.Round(float64(p.Timestamp.Time().Sub(w.Start)) / float64(c.opt.Step)))
			if i >= 1 && i < len(h.Steps) {
				h.Steps[i] = append(h.Steps[i], window.Bucket{UpperBound: le, Count: float64(p.Value)})
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	keys := make([]string, 0, len(hs))
	for k := range hs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h := hs[k]
		sort.Slice(h.Buckets, func(i, j int) bool { return h.Buckets[i].UpperBound < h.Buckets[j].UpperBound })
		w.Histograms[name] = append(w.Histograms[name], *h)
	}
	return nil
}

func oldGauge(c *Collector, ctx context.Context, w *window.Window, mu *sync.Mutex, name, q string) error {
	c.sent.Add(1)
	r := v1.Range{Start: w.Start, End: w.End, Step: c.opt.Step}
	val, warns, _, err := c.api.QueryRange(ctx, q, r)
	if err != nil {
		return c.explain(err, q)
	}
	mat, ok := val.(model.Matrix)
	if !ok {
		return &Error{URL: c.url, Detail: fmt.Sprintf("unexpected %s result for a range query", val.Type())}
	}
	c.warn([]string(warns))
	mu.Lock()
	defer mu.Unlock()
	for _, s := range mat {
		pts := make([]float64, w.Points)
		for i := range pts {
			pts[i] = math.NaN()
		}
		for _, p := range s.Values {
			i := int(math.Round(float64(p.Timestamp.Time().Sub(w.Start)) / float64(c.opt.Step)))
			if i >= 0 && i < len(pts) {
				pts[i] = float64(p.Value)
			}
		}
		w.Gauges[name] = append(w.Gauges[name], window.Gauge{Labels: labels(s.Metric), Points: pts})
	}
	return nil
}

func oldInstant(c *Collector, ctx context.Context, q string) (model.Vector, error) {
	c.sent.Add(1)
	val, warns, _, err := c.api.Query(ctx, q, c.opt.End)
	if err != nil {
		return nil, c.explain(err, q)
	}
	c.warn([]string(warns))
	v, ok := val.(model.Vector)
	if !ok {
		return nil, &Error{URL: c.url, Detail: fmt.Sprintf("unexpected %s result for an instant query", val.Type())}
	}
	return v, nil
}
