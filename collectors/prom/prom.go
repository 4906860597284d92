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
	"strconv"
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
	// Selector holds label matchers that narrow every query:
	// namespace="prod". A family whose series lack a label it names
	// (dcgm-exporter's, cache_config_info without model_name) gets the rest
	// and is joined to the engine series it matches (scope.go).
	Selector string
	// GroupBy are the target labels (default model_name); the engines'
	// member labels (instance, engine, dp_rank) are always kept so that
	// replicas and ranks stay apart.
	GroupBy []string
	// Parallel bounds the queries in flight, and is how many queries the
	// histograms are spread over (default DefaultParallel).
	Parallel int
	// Trace, when set, is told of every request as it is answered; calls
	// may come from several goroutines at once.
	Trace func(Query)
}

// Query is one request to the API, as it went and what came back.
type Query struct {
	// Endpoint is the API path: /api/v1/query_range, /api/v1/query or
	// /api/v1/label/__name__/values.
	Endpoint string
	// Expr is the PromQL, or the series selector of a label query.
	Expr string
	// Start, End and Step are a range query's; Time (End) an instant's.
	Start, End time.Time
	Step       time.Duration
	// Series is how many series (label values) the answer held, Bytes its
	// size (0 where not known).
	Series, Bytes int
	Took          time.Duration
	Err           error
}

// Collector queries one Prometheus API.
type Collector struct {
	api    v1.API
	client api.Client
	url    string
	opt    Options
	sent   atomic.Int64
	// secrets mask the connection's credentials in anything the server
	// says back (errors, warnings).
	secrets *redact.Secrets

	mu    sync.Mutex
	notes []string
	// scope holds the matchers of each family the selector does not reach
	// as given (scope.go); scopes say how it reached each source.
	scope  map[string]string
	scopes []Scope
}

func (c *Collector) warn(ws []string) {
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
		opt.Parallel = DefaultParallel
	}
	return &Collector{api: v1.NewAPI(c), client: c, url: sec.String(conn.URL), opt: opt, secrets: sec}, nil
}

// DefaultParallel is how many queries are in flight unless told: one
// histogram query already keeps more than a core of Prometheus busy, and
// during an incident the same server answers dashboards and alert rules.
const DefaultParallel = 2

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

// sel selects a family's series (suffix: _bucket, _sum, _count or none)
// within the selector and extra matchers.
func (c *Collector) sel(family, suffix string, extra ...string) string {
	m := append([]string{}, extra...)
	if s := c.selector(family); s != "" {
		m = append(m, s)
	}
	if len(m) == 0 {
		return family + suffix
	}
	return family + suffix + "{" + strings.Join(m, ",") + "}"
}

func (c *Collector) keep(extra ...string) string {
	set := map[string]bool{}
	for _, eng := range engine.Engines() {
		for _, m := range eng.Members {
			set[m] = true
		}
		if eng.RoleLabel != "" {
			set[eng.RoleLabel] = true
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
//
// A fleet is read at the cost of its targets: every family is summed to the
// target (the grouping labels) on the server, and only the families a
// member's evidence needs (engine.MemberKeys) come per replica and rank,
// into window.Window.Members. Queries of one shape are merged into one
// (branches joined by `or`, each tagged by label_replace), so the number of
// queries depends on the families present and Parallel, never on how many
// instances or models there are.
func (c *Collector) Collect(ctx context.Context) (*window.Window, error) {
	// The connections of this collection are not kept once it is done.
	if ci, ok := c.client.(interface{ CloseIdleConnections() }); ok {
		defer ci.CloseIdleConnections()
	}
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
	if names, err = c.scopeNames(ctx, start, end, names); err != nil {
		return nil, err
	}
	p := c.plan(names)
	if !p.engine {
		return nil, &Error{Kind: NoMetrics, URL: c.url, Selector: c.opt.Selector, Start: start, End: end}
	}
	got := &answers{by: map[string][]answer{}}
	var jobs []func(context.Context) error
	for _, bt := range p.batches(c.opt.Parallel) {
		jobs = append(jobs, func(ctx context.Context) error { return c.fetch(ctx, bt, got) })
	}
	if err := c.run(ctx, jobs); err != nil {
		return nil, err
	}
	c.assemble(w, p, got)
	w.Notes = append(w.Notes, dedup(c.notes)...)
	return w, nil
}

// tagLabel marks which branch of a merged query a result series answers.
const tagLabel = "llmdoctor_branch"

// Parts of a family a branch reads; member parts go to Window.Members.
const (
	partBuckets       = "buckets"        // bucket increases summed to the target
	partBucketSeries  = "bucket-series"  // how many member series have each bound
	partSum           = "sum"            // _sum increase
	partCount         = "count"          // _count increase
	partSteps         = "steps"          // bucket increases per step (range)
	partIncrease      = "increase"       // a counter's increase
	partInfo          = "info"           // an info series as exposed
	partValue         = "value"          // a gauge per step (range)
	partSeries        = "series"         // how many member series a summed gauge has per step
	partMemberBuckets = "member-buckets" // the same, per member
	partMemberSum     = "member-sum"
	partMemberCount   = "member-count"
	partMemberInc     = "member-increase"
	partMemberValue   = "member-value"
)

// branch is one expression of a merged query.
type branch struct{ expr, family, part string }

// batch is one query: its branches joined by `or`.
type batch struct {
	branches []branch
	ranged   bool
}

func (bt batch) query() string {
	parts := make([]string, len(bt.branches))
	for i, b := range bt.branches {
		// Family names hold no space, so "family part" splits back.
		parts[i] = fmt.Sprintf(`label_replace(%s, %q, %q, "", "")`, b.expr, tagLabel, b.family+" "+b.part)
	}
	// One branch a line: what --print-queries shows reads as it was sent.
	return strings.Join(parts, "\nor ")
}

// describe names a batch in errors: its first expression, and how many
// more were merged with it.
func (bt batch) describe() string {
	d := bt.branches[0].expr
	if n := len(bt.branches) - 1; n > 0 {
		d = fmt.Sprintf("%s, merged with %d more", d, n)
	}
	return d
}

// plan is what to ask for, by shape of query.
type plan struct {
	engine bool
	// histograms holds each histogram family's window branches, one group
	// per family (kept together so a family is never half read).
	histograms [][]branch
	// instant: counters and infos; steps, gauges, members' gauges and
	// exporters' gauges: range queries.
	instant, steps, gauges, members, memberGauges, exporters []branch
	// kinds of every family read, for assembly.
	kinds map[string]engine.Kind
}

// batches packs the plan into queries: histogram families spread over
// parallel queries (each is a large share of the work), every other shape
// one query each.
func (p plan) batches(parallel int) []batch {
	var out []batch
	n := min(max(parallel, 1), len(p.histograms))
	hist := make([]batch, n)
	for i, g := range p.histograms {
		hist[i%n].branches = append(hist[i%n].branches, g...)
	}
	out = append(out, hist...)
	for _, bt := range []batch{{p.instant, false}, {p.members, false}, {p.steps, true}, {p.gauges, true},
		{p.memberGauges, true}, {p.exporters, true}} {
		if len(bt.branches) > 0 {
			out = append(out, bt)
		}
	}
	return out
}

func (c *Collector) plan(names map[string]bool) plan {
	p := plan{kinds: map[string]engine.Kind{}}
	member := map[string]memberNeed{}
	for _, k := range engine.MemberKeys {
		member[k] = memberMean
	}
	for _, k := range engine.MemberBuckets {
		member[k] = memberBuckets
	}
	win, step := model.Duration(c.opt.Window), model.Duration(c.opt.Step)
	for _, eng := range engine.Engines() {
		copies := c.copies(eng)
		for _, m := range eng.Catalogue {
			// Every name present, not only the newest: targets may differ
			// (one model scraped directly, one through a gateway), and the
			// builder picks per target.
			for _, name := range pick(m, names) {
				if _, seen := p.kinds[name]; seen {
					// One family under two keys (SGLang's prompt tokens are
					// also its prefix cache's lookups) is read once.
					continue
				}
				p.kinds[name] = m.Kind
				p.engine = true
				c.planFamily(&p, m, name, copies, member[m.Key], win, step)
			}
		}
	}
	for _, x := range engine.Exporters() {
		for _, alt := range x.Gauges {
			for _, name := range alt {
				if !names[name] {
					continue
				}
				p.kinds[name] = engine.Gauge
				p.exporters = append(p.exporters, branch{fmt.Sprintf("avg by (%s) (%s)", strings.Join(x.Keep, ", "), c.stepSamples(name)), name, partValue})
				break
			}
		}
		for _, alt := range x.Histograms {
			for _, name := range alt {
				if !names[name+"_bucket"] {
					continue
				}
				p.kinds[name] = engine.Histogram
				keep := strings.Join(x.Keep, ", ")
				inc := func(part string) string { return fmt.Sprintf("increase(%s[%s])", c.sel(name, part), win) }
				p.histograms = append(p.histograms, []branch{
					{fmt.Sprintf("sum by (%s) (%s)", strings.TrimPrefix(keep+", le", ", "), inc("_bucket")), name, partBuckets},
					{fmt.Sprintf("sum by (%s) (%s)", keep, inc("_sum")), name, partSum},
					{fmt.Sprintf("sum by (%s) (%s)", keep, inc("_count")), name, partCount}})
				break
			}
		}
	}
	return p
}

// memberNeed is what a member's evidence needs of a family.
type memberNeed int

const (
	memberNone memberNeed = iota
	memberMean
	memberBuckets
)

func (c *Collector) planFamily(p *plan, m engine.Metric, name string, copies []string, member memberNeed, win, step model.Duration) {
	extra := append(append([]string{}, m.Keep...), matchLabels(m)...)
	// target keeps the grouping labels; each keeps the member labels too.
	target, each := c.target(extra...), c.keep(extra...)
	inc := func(part string, rng model.Duration) string {
		return once(copies, fmt.Sprintf("increase(%s[%s])", c.sel(name, part, matchers(m)...), rng))
	}
	switch m.Kind {
	case engine.Counter:
		p.instant = append(p.instant, branch{fmt.Sprintf("sum by (%s) (%s)", target, inc("", win)), name, partIncrease})
		if member != memberNone {
			p.members = append(p.members, branch{fmt.Sprintf("sum by (%s) (%s)", each, inc("", win)), name, partMemberInc})
		}
	case engine.Histogram:
		p.histograms = append(p.histograms, []branch{
			{fmt.Sprintf("sum by (%s, le) (%s)", target, inc("_bucket", win)), name, partBuckets},
			{fmt.Sprintf("count by (%s, le) (%s)", target, inc("_bucket", win)), name, partBucketSeries},
			{fmt.Sprintf("sum by (%s) (%s)", target, inc("_sum", win)), name, partSum},
			{fmt.Sprintf("sum by (%s) (%s)", target, inc("_count", win)), name, partCount},
		})
		if engine.StepFamily(name) {
			// Each step's increase, at the window's points: behaviour over time.
			p.steps = append(p.steps, branch{fmt.Sprintf("sum by (%s, le) (%s)", target, inc("_bucket", step)), name, partSteps})
		}
		if member == memberBuckets {
			p.members = append(p.members, branch{fmt.Sprintf("sum by (%s, le) (%s)", each, inc("_bucket", win)), name, partMemberBuckets})
		}
		if member != memberNone {
			p.members = append(p.members,
				branch{fmt.Sprintf("sum by (%s) (%s)", each, inc("_sum", win)), name, partMemberSum},
				branch{fmt.Sprintf("sum by (%s) (%s)", each, inc("_count", win)), name, partMemberCount})
		}
	case engine.Gauge:
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
		samples := once(copies, c.stepSamples(name, matchers(m)...))
		p.gauges = append(p.gauges, branch{fmt.Sprintf("%s by (%s) (%s)", agg, target, samples), name, partValue})
		if agg == "sum" {
			// A sum missing a member at a step would pass for the whole.
			p.gauges = append(p.gauges, branch{fmt.Sprintf("count by (%s) (%s)", target, samples), name, partSeries})
		}
		if member != memberNone {
			p.memberGauges = append(p.memberGauges, branch{fmt.Sprintf("%s by (%s) (%s)", agg, each, samples), name, partMemberValue})
		}
	default:
		p.instant = append(p.instant, branch{fmt.Sprintf("last_over_time(%s[%s])", c.sel(name, ""), win), name, partInfo})
	}
}

// target lists the labels a target's series are summed to: the grouping
// labels and extra.
func (c *Collector) target(extra ...string) string {
	set := map[string]bool{}
	for _, g := range c.opt.GroupBy {
		set[g] = true
	}
	// A split deployment's sides are summed apart where a label says
	// which is which: absent, it groups nothing.
	for _, eng := range engine.Engines() {
		if eng.RoleLabel != "" {
			set[eng.RoleLabel] = true
		}
	}
	for _, e := range extra {
		set[e] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// answer is one result series of a branch.
type answer struct {
	labels window.Labels // without le and the tag
	le     string
	points []model.SamplePair
}

// answers collects every branch's results, by "family part".
type answers struct {
	mu sync.Mutex
	by map[string][]answer
}

// fetch runs one batch; a batch the server refuses as too large is split
// in two and each half asked alone.
func (c *Collector) fetch(ctx context.Context, bt batch, got *answers) error {
	form := url.Values{"query": {bt.query()}}
	endpoint := "/api/v1/query"
	if bt.ranged {
		endpoint = "/api/v1/query_range"
		form.Set("start", formatTime(c.opt.End.Add(-c.opt.Window)))
		form.Set("end", formatTime(c.opt.End))
		form.Set("step", strconv.FormatFloat(c.opt.Step.Seconds(), 'f', -1, 64))
	} else {
		form.Set("time", formatTime(c.opt.End))
	}
	c.sent.Add(1)
	began := time.Now()
	body, err := post(ctx, c.client, endpoint, form)
	var res []series
	var warns []string
	if err == nil {
		res, warns, err = decode(body)
	}
	if c.opt.Trace != nil {
		q := Query{Endpoint: endpoint, Expr: bt.query(), End: c.opt.End, Series: len(res), Bytes: len(body), Took: time.Since(began)}
		if bt.ranged {
			q.Start, q.Step = c.opt.End.Add(-c.opt.Window), c.opt.Step
		}
		if err != nil {
			q.Err = c.explain(err, bt.describe())
		}
		c.opt.Trace(q)
	}
	if err != nil {
		e := c.explain(err, bt.describe())
		var pe *Error
		if errors.As(e, &pe) && pe.Kind == TooExpensive && len(bt.branches) > 1 {
			h := len(bt.branches) / 2
			if err := c.fetch(ctx, batch{bt.branches[:h], bt.ranged}, got); err != nil {
				return err
			}
			return c.fetch(ctx, batch{bt.branches[h:], bt.ranged}, got)
		}
		return e
	}
	c.warn(warns)
	as := make(map[string][]answer)
	for _, s := range res {
		tag := string(s.metric[tagLabel])
		l := labels(s.metric)
		delete(l, tagLabel)
		le := l["le"]
		delete(l, "le")
		as[tag] = append(as[tag], answer{labels: l, le: le, points: s.points})
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for tag, a := range as {
		got.by[tag] = append(got.by[tag], a...)
	}
	return nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', -1, 64)
}

// assemble files the answers into the window, in a stable order.
func (c *Collector) assemble(w *window.Window, p plan, got *answers) {
	mw := window.New()
	mw.Start, mw.End, mw.Points, mw.Times, mw.From = w.Start, w.End, w.Points, w.Times, w.From
	names := make([]string, 0, len(p.kinds))
	for n := range p.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	part := func(name, part string) []answer { return got.by[name+" "+part] }
	for _, name := range names {
		switch p.kinds[name] {
		case engine.Counter:
			// A family with no series in the window is absent, not empty:
			// presence says which engine a window holds.
			if a := part(name, partIncrease); len(a) > 0 {
				w.Counters[name] = counters(a)
			}
			if a := part(name, partMemberInc); len(a) > 0 {
				mw.Counters[name] = counters(a)
			}
		case engine.Histogram:
			hs := c.histograms(w, part(name, partBuckets), part(name, partSum), part(name, partCount), part(name, partBucketSeries), part(name, partSteps))
			if len(hs) > 0 {
				w.Histograms[name] = hs
			}
			if hs := c.histograms(w, part(name, partMemberBuckets), part(name, partMemberSum), part(name, partMemberCount), nil, nil); len(hs) > 0 {
				mw.Histograms[name] = hs
			}
		case engine.Gauge:
			if gs := c.gauges(w, part(name, partValue), part(name, partSeries)); len(gs) > 0 {
				w.Gauges[name] = gs
			}
			if gs := c.gauges(w, part(name, partMemberValue), nil); len(gs) > 0 {
				mw.Gauges[name] = gs
			}
		default:
			for _, a := range part(name, partInfo) {
				w.Infos[name] = append(w.Infos[name], window.Info{Labels: a.labels})
			}
		}
	}
	if len(mw.Counters)+len(mw.Histograms)+len(mw.Gauges) > 0 {
		w.Members = mw
	}
}

func counters(as []answer) []window.Counter {
	out := make([]window.Counter, 0, len(as))
	for _, a := range as {
		out = append(out, window.Counter{Labels: a.labels, Increase: float64(a.points[0].Value)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels.Key() < out[j].Labels.Key() })
	return out
}

// index is a point's place among the window's steps.
func (c *Collector) index(w *window.Window, t model.Time) int {
	return int(math.Round(float64(t.Time().Sub(w.Start)) / float64(c.opt.Step)))
}

// histograms joins buckets, sums, counts and per-step buckets by series.
// Where series says how many member series have each bound, a bound some
// members lack is dropped, as the builder does for series it sums itself
// (a rolling upgrade with new buckets would otherwise put one replica's
// observations above a bound only the other has).
func (c *Collector) histograms(w *window.Window, buckets, sums, counts, series, steps []answer) []window.Histogram {
	hs := map[string]*window.Histogram{}
	get := func(l window.Labels) *window.Histogram {
		k := l.Key()
		if hs[k] == nil {
			hs[k] = &window.Histogram{Labels: l}
		}
		return hs[k]
	}
	seen := map[string]map[float64]float64{}
	most := map[string]float64{}
	for _, a := range series {
		le, err := parseLE(a.le)
		if err != nil {
			continue
		}
		k := a.labels.Key()
		if seen[k] == nil {
			seen[k] = map[float64]float64{}
		}
		n := float64(a.points[0].Value)
		seen[k][le] = n
		most[k] = math.Max(most[k], n)
	}
	common := func(k string, le float64) bool {
		if seen[k] == nil {
			return true
		}
		return seen[k][le] == most[k]
	}
	for _, a := range buckets {
		le, err := parseLE(a.le)
		if err != nil || !common(a.labels.Key(), le) {
			continue
		}
		h := get(a.labels)
		h.Buckets = append(h.Buckets, window.Bucket{UpperBound: le, Count: float64(a.points[0].Value)})
	}
	for _, a := range sums {
		get(a.labels).Sum = float64(a.points[0].Value)
	}
	for _, a := range counts {
		get(a.labels).Count = float64(a.points[0].Value)
	}
	for _, a := range steps {
		le, err := parseLE(a.le)
		if err != nil || !common(a.labels.Key(), le) {
			continue
		}
		h := get(a.labels)
		if h.Steps == nil {
			h.Steps = make([][]window.Bucket, w.Points)
		}
		for _, p := range a.points {
			if i := c.index(w, p.Timestamp); i >= 1 && i < len(h.Steps) {
				h.Steps[i] = append(h.Steps[i], window.Bucket{UpperBound: le, Count: float64(p.Value)})
			}
		}
	}
	keys := make([]string, 0, len(hs))
	for k := range hs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]window.Histogram, 0, len(keys))
	for _, k := range keys {
		h := hs[k]
		sort.Slice(h.Buckets, func(i, j int) bool { return h.Buckets[i].UpperBound < h.Buckets[j].UpperBound })
		for _, st := range h.Steps {
			sort.Slice(st, func(i, j int) bool { return st[i].UpperBound < st[j].UpperBound })
		}
		out = append(out, *h)
	}
	return out
}

// gauges aligns each series' points to the window's steps. Where series
// says how many member series a sum had at each step, a step with fewer
// than the most is unknown: a partial sum would pass for the whole, a fake
// drop, as the builder treats scraped series.
func (c *Collector) gauges(w *window.Window, values, series []answer) []window.Gauge {
	counts := map[string][]float64{}
	most := map[string]float64{}
	for _, a := range series {
		k := a.labels.Key()
		n := make([]float64, w.Points)
		for _, p := range a.points {
			if i := c.index(w, p.Timestamp); i >= 0 && i < len(n) {
				n[i] = float64(p.Value)
				most[k] = math.Max(most[k], n[i])
			}
		}
		counts[k] = n
	}
	out := make([]window.Gauge, 0, len(values))
	for _, a := range values {
		pts := make([]float64, w.Points)
		for i := range pts {
			pts[i] = math.NaN()
		}
		n, checked := counts[a.labels.Key()]
		for _, p := range a.points {
			i := c.index(w, p.Timestamp)
			if i < 0 || i >= len(pts) || checked && n[i] < most[a.labels.Key()] {
				continue
			}
			pts[i] = float64(p.Value)
		}
		out = append(out, window.Gauge{Labels: a.labels, Points: pts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels.Key() < out[j].Labels.Key() })
	return out
}

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

// familiesMatch is a series selector for every family the catalogues know
// (engines' and exporters'), within the selector.
func familiesMatch(selector string) string {
	var alts []string
	for _, n := range engine.Families() {
		if m, _ := engine.Known(n); m.Kind == engine.Histogram {
			n += "_bucket"
		}
		alts = append(alts, regexp.QuoteMeta(n))
	}
	match := fmt.Sprintf(`{__name__=~%q`, strings.Join(alts, "|"))
	if s := strings.TrimSpace(selector); s != "" {
		match += "," + s
	}
	return match + "}"
}

// discover asks once which metric names exist, instead of assuming an engine
// or exporter version.
func (c *Collector) discover(ctx context.Context, start, end time.Time) (map[string]bool, error) {
	return c.labelValues(ctx, familiesMatch(c.opt.Selector), start, end, "listing metric names")
}

// labelValues lists the metric names of the series match selects between
// start and end; what names the request in errors.
func (c *Collector) labelValues(ctx context.Context, match string, start, end time.Time, what string) (map[string]bool, error) {
	c.sent.Add(1)
	began := time.Now()
	vals, warns, _, err := c.api.LabelValues(ctx, "__name__", []string{match}, start, end)
	if c.opt.Trace != nil {
		q := Query{Endpoint: "/api/v1/label/__name__/values", Expr: match, Start: start, End: end, Series: len(vals), Took: time.Since(began)}
		if err != nil {
			q.Err = c.explain(err, what)
		}
		c.opt.Trace(q)
	}
	if err != nil {
		return nil, c.explain(err, what)
	}
	c.warn(warns)
	out := map[string]bool{}
	for _, v := range vals {
		out[string(v)] = true
	}
	return out, nil
}

// LabelNames lists the labels a diagnosis may be grouped by: those of the
// engines' running-requests gauges between start and end (within the
// selector, when given). Every engine series has a target's labels; the
// gauge has none of a histogram's, an info metric's or the GPU exporter's.
func LabelNames(ctx context.Context, conn Connection, selector string, start, end time.Time) ([]string, error) {
	c, err := New(conn, Options{Selector: selector})
	if err != nil {
		return nil, err
	}
	var alts []string
	for _, e := range engine.Engines() {
		for _, m := range e.Catalogue {
			if m.Key == engine.Running {
				for _, n := range m.Names {
					alts = append(alts, regexp.QuoteMeta(n))
				}
			}
		}
	}
	match := fmt.Sprintf(`{__name__=~%q`, strings.Join(alts, "|"))
	if s := strings.TrimSpace(selector); s != "" {
		match += "," + s
	}
	c.sent.Add(1)
	names, _, _, err := c.api.LabelNames(ctx, []string{match + "}"}, start, end)
	if err != nil {
		return nil, c.explain(err, "listing label names")
	}
	var out []string
	for _, n := range names {
		if n != "__name__" && n != "le" {
			out = append(out, string(n))
		}
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

func parseLE(s string) (float64, error) {
	var v model.SampleValue
	if err := v.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
		return 0, err
	}
	return float64(v), nil
}

// stepSamples selects a gauge's samples of the last step only: a plain
// selector repeats one scrape at every step for five minutes, so a step
// shorter than the scrape interval would count one sample many times.
func (c *Collector) stepSamples(name string, match ...string) string {
	return fmt.Sprintf("last_over_time(%s[%s])", c.sel(name, "", match...), model.Duration(c.opt.Step))
}

func warnings(ws []string) []string {
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
