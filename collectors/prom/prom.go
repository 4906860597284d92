// Package prom reads the registered engines' and exporters' metrics from a Prometheus-compatible API
// (Prometheus, Thanos, Mimir, VictoriaMetrics) into the same window the
// scrape collector builds, with the aggregation done on the server: the
// number of queries depends on the metric catalogue, never on how many
// instances or models there are.
package prom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/internal/redact"
)

// Options say what to read.
type Options struct {
	Window time.Duration
	End    time.Time
	Step   time.Duration
	// Selector holds label matchers added to every query: namespace="prod".
	Selector string
	// GroupBy are the target labels (default model_name); the engines'
	// member labels (instance, engine, dp_rank) are always kept so that
	// replicas and ranks stay apart.
	GroupBy []string
	// Parallel bounds the queries in flight (default 8).
	Parallel int
}

// Collector queries one Prometheus API.
type Collector struct {
	api  v1.API
	url  string
	opt  Options
	sent atomic.Int64
	// secrets mask the connection's credentials in anything the server
	// says back (errors, warnings).
	secrets *redact.Secrets

	mu    sync.Mutex
	notes []string
}

func (c *Collector) warn(ws v1.Warnings) {
	if len(ws) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range warnings(ws) {
		c.notes = append(c.notes, c.secrets.String(w))
	}
}

// New builds a collector over an HTTP client configured by Connection.
func New(conn Connection, opt Options) (*Collector, error) {
	rt, err := conn.RoundTripper()
	if err != nil {
		return nil, err
	}
	sec := &redact.Secrets{}
	conn.AddSecrets(sec)
	c, err := api.NewClient(api.Config{Address: conn.URL, RoundTripper: rt})
	if err != nil {
		return nil, &Error{Kind: BadURL, URL: sec.String(conn.URL), Detail: sec.String(err.Error())}
	}
	if opt.Window <= 0 {
		opt.Window = 15 * time.Minute
	}
	if opt.End.IsZero() {
		opt.End = time.Now()
	}
	if opt.Step <= 0 {
		opt.Step = DefaultStep(opt.Window)
	}
	if len(opt.GroupBy) == 0 {
		opt.GroupBy = []string{"model_name"}
	}
	if opt.Parallel <= 0 {
		opt.Parallel = 8
	}
	return &Collector{api: v1.NewAPI(c), url: sec.String(conn.URL), opt: opt, secrets: sec}, nil
}

// MinStep is the shortest default step: Prometheus seldom scrapes more
// often, and a step shorter than the scrape interval repeats samples.
const MinStep = 15 * time.Second

// DefaultStep is the step of a window when none is given: a sixtieth of
// it, at least MinStep.
func DefaultStep(window time.Duration) time.Duration {
	return max(window/60, MinStep)
}

// Queries is how many queries the collector has sent.
func (c *Collector) Queries() int { return int(c.sent.Load()) }

func (c *Collector) sel(name string, extra ...string) string {
	m := append([]string{}, extra...)
	if s := strings.TrimSpace(c.opt.Selector); s != "" {
		m = append(m, s)
	}
	if len(m) == 0 {
		return name
	}
	return name + "{" + strings.Join(m, ",") + "}"
}

func (c *Collector) keep(extra ...string) string {
	set := map[string]bool{}
	for _, eng := range engine.Engines() {
		for _, m := range eng.Members {
			set[m] = true
		}
	}
	for _, g := range c.opt.GroupBy {
		set[g] = true
	}
	for _, e := range extra {
		set[e] = true
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func (c *Collector) rng() string { return model.Duration(c.opt.Window).String() }

// Collect reads the window ending at End.
func (c *Collector) Collect(ctx context.Context) (*window.Window, error) {
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
				jobs = append(jobs, c.job(w, &mu, m, name, c.copies(eng)))
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
				jobs = append(jobs, func(ctx context.Context) error { return c.gauge(ctx, w, &mu, name, q) })
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

// job reads one engine family by its kind.
// copies are the engine's copy labels (engine.Engine.Copies) the target is
// not grouped by: series differing only in them repeat one number.
func (c *Collector) copies(eng *engine.Engine) []string {
	var out []string
	for _, l := range eng.Copies {
		if !slices.Contains(c.opt.GroupBy, l) {
			out = append(out, l)
		}
	}
	return out
}

// once reads one copy of each number: the largest of series that differ
// only in a copy label, as the builder does for scrapes.
func once(copies []string, inner string) string {
	if len(copies) == 0 {
		return inner
	}
	return fmt.Sprintf("max without (%s) (%s)", strings.Join(copies, ", "), inner)
}

func (c *Collector) job(w *window.Window, mu *sync.Mutex, m engine.Metric, name string, copies []string) func(context.Context) error {
	keep := c.keep(append(append([]string{}, m.Keep...), matchLabels(m)...)...)
	switch m.Kind {
	case engine.Counter:
		return func(ctx context.Context) error {
			v, err := c.instant(ctx, fmt.Sprintf("sum by (%s) (%s)", keep, once(copies, fmt.Sprintf("increase(%s[%s])", c.sel(name, matchers(m)...), c.rng()))))
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
			return c.histogram(ctx, w, mu, name, keep, matchers(m), copies)
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
			return c.gauge(ctx, w, mu, name, fmt.Sprintf("%s by (%s) (%s)", agg, keep, once(copies, c.stepSamples(name, matchers(m)...))))
		}
	default:
		return func(ctx context.Context) error {
			v, err := c.instant(ctx, fmt.Sprintf("last_over_time(%s[%s])", c.sel(name), c.rng()))
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

// matchers turns a metric's label match into selector matchers.
func matchers(m engine.Metric) []string {
	var out []string
	for i := 0; i+1 < len(m.Match); i += 2 {
		out = append(out, fmt.Sprintf("%s=%q", m.Match[i], m.Match[i+1]))
	}
	for i := 0; i+1 < len(m.Exclude); i += 2 {
		out = append(out, fmt.Sprintf("%s!=%q", m.Exclude[i], m.Exclude[i+1]))
	}
	return out
}

func matchLabels(m engine.Metric) []string {
	var out []string
	for i := 0; i+1 < len(m.Match); i += 2 {
		out = append(out, m.Match[i])
	}
	return out
}

func dedup(l []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range l {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// discover asks once which metric names exist, instead of assuming an engine
// or exporter version.
func (c *Collector) discover(ctx context.Context, start, end time.Time) (map[string]bool, error) {
	var alts []string
	for _, n := range engine.Families() {
		if m, _ := engine.Known(n); m.Kind == engine.Histogram {
			n += "_bucket"
		}
		alts = append(alts, regexp.QuoteMeta(n))
	}
	match := fmt.Sprintf(`{__name__=~%q`, strings.Join(alts, "|"))
	if s := strings.TrimSpace(c.opt.Selector); s != "" {
		match += "," + s
	}
	match += "}"
	c.sent.Add(1)
	vals, warns, _, err := c.api.LabelValues(ctx, "__name__", []string{match}, start, end)
	if err != nil {
		return nil, c.explain(err, "listing metric names")
	}
	c.warn(warns)
	out := map[string]bool{}
	for _, v := range vals {
		out[string(v)] = true
	}
	return out, nil
}

func pick(m engine.Metric, names map[string]bool) []string {
	var out []string
	for _, n := range m.Names {
		probe := n
		if m.Kind == engine.Histogram {
			probe = n + "_bucket"
		}
		if names[probe] {
			out = append(out, n)
		}
	}
	return out
}

func (c *Collector) histogram(ctx context.Context, w *window.Window, mu *sync.Mutex, name, keep string, match, copies []string) error {
	inc := func(part string, rng model.Duration) string {
		return once(copies, fmt.Sprintf("increase(%s[%s])", c.sel(name+part, match...), rng))
	}
	buckets, err := c.instant(ctx, fmt.Sprintf("sum by (%s, le) (%s)", keep, inc("_bucket", model.Duration(c.opt.Window))))
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
		c.warn(warns)
		perStep, _ = val.(model.Matrix)
	}
	sums, err := c.instant(ctx, fmt.Sprintf("sum by (%s) (%s)", keep, inc("_sum", model.Duration(c.opt.Window))))
	if err != nil {
		return err
	}
	counts, err := c.instant(ctx, fmt.Sprintf("sum by (%s) (%s)", keep, inc("_count", model.Duration(c.opt.Window))))
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

func parseLE(s string) (float64, error) {
	var v model.SampleValue
	if err := v.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
		return 0, err
	}
	return float64(v), nil
}

// gauge runs a range query and aligns its points to the window's steps.
func (c *Collector) gauge(ctx context.Context, w *window.Window, mu *sync.Mutex, name, q string) error {
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
	c.warn(warns)
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

// stepSamples selects a gauge's samples of the last step only: a plain
// selector repeats one scrape at every step for five minutes, so a step
// shorter than the scrape interval would count one sample many times.
func (c *Collector) stepSamples(name string, match ...string) string {
	return fmt.Sprintf("last_over_time(%s[%s])", c.sel(name, match...), model.Duration(c.opt.Step))
}

func (c *Collector) instant(ctx context.Context, q string) (model.Vector, error) {
	c.sent.Add(1)
	val, warns, _, err := c.api.Query(ctx, q, c.opt.End)
	if err != nil {
		return nil, c.explain(err, q)
	}
	c.warn(warns)
	v, ok := val.(model.Vector)
	if !ok {
		return nil, &Error{URL: c.url, Detail: fmt.Sprintf("unexpected %s result for an instant query", val.Type())}
	}
	return v, nil
}

func warnings(ws v1.Warnings) []string {
	var out []string
	for _, w := range ws {
		out = append(out, "Prometheus warned: "+strings.Join(strings.Fields(w), " "))
	}
	return out
}

// run executes jobs with at most Parallel in flight; the first error wins.
func (c *Collector) run(ctx context.Context, jobs []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, c.opt.Parallel)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := j(ctx); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first
}

// explain turns a client error into a typed one whose text is one line
// with no secret in it.
func (c *Collector) explain(err error, what string) error {
	var ae *v1.Error
	var ne net.Error
	var ue *url.Error
	e := &Error{URL: c.url, Query: short(what)}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		e.Kind = Timeout
	case errors.As(err, &ae):
		msg := strings.Join(strings.Fields(ae.Msg), " ")
		e.Detail = msg
		switch {
		case strings.Contains(msg, "401"):
			e.Kind = Unauthorized
		case strings.Contains(msg, "403"):
			e.Kind = Forbidden
		case ae.Type == v1.ErrBadData && strings.Contains(msg, "parse error"):
			e.Kind = BadQuery
		case strings.Contains(msg, "too many samples") || strings.Contains(msg, "exceeded") || ae.Type == v1.ErrTimeout:
			e.Kind = TooExpensive
		case ae.Type == v1.ErrServer:
			e.Kind = ServerFailed
		}
	case errors.As(err, &ue):
		// url.Error's text holds the URL with its query; keep only the cause.
		e.Kind, e.Detail, e.Query = Unreachable, ue.Err.Error(), ""
		if strings.Contains(e.Detail, "connection refused") {
			e.Detail = "connection refused (is Prometheus running, and the port right?)"
		}
	default:
		e.Detail, e.Query = strings.Join(strings.Fields(err.Error()), " "), ""
	}
	// The server's words may repeat what it was sent.
	e.Detail, e.Query = c.secrets.String(e.Detail), c.secrets.String(e.Query)
	return e
}

func short(q string) string {
	if len(q) > 80 {
		return q[:77] + "..."
	}
	return q
}

func labels(m model.Metric) window.Labels {
	l := window.Labels{}
	for k, v := range m {
		if k == model.MetricNameLabel {
			continue
		}
		l[string(k)] = string(v)
	}
	return l
}
