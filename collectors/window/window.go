// Package window is the transport-neutral result of a collection: counters and
// histograms reduced to their increase over a window, gauges to aligned samples.
// The scrape collector builds it from repeated scrapes or snapshot files; the
// Prometheus collector builds it from PromQL. One mapping turns it into evidence.
package window

import (
	"math"
	"sort"
	"strings"
	"time"
)

// Labels is a series' label set without the metric name and without le.
type Labels map[string]string

// Key returns a stable string for the label set.
func (l Labels) Key() string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(l[k])
		b.WriteByte(',')
	}
	return b.String()
}

// Counter is a counter series' increase over the window.
type Counter struct {
	Labels   Labels
	Increase float64
	// Last is the value at the end (since server start).
	Last   float64
	Resets int
}

// Gauge is a gauge series sampled at the window's points; NaN where absent.
type Gauge struct {
	Labels Labels
	Points []float64
}

// Bucket is a cumulative histogram bucket.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram is a classic histogram's increase over the window.
type Histogram struct {
	Labels  Labels
	Buckets []Bucket // sorted by UpperBound, cumulative
	Sum     float64
	Count   float64
	Resets  int
	// Steps, when kept, holds the cumulative bucket increase of each step:
	// Steps[i] covers the time from point i−1 to point i (Steps[0] is nil).
	Steps [][]Bucket
}

// Info is an info-style series (value 1, meaning in labels).
type Info struct{ Labels Labels }

// Window is what one collection saw.
type Window struct {
	Start, End time.Time
	// Length is the window's length when only that is known (snapshot files
	// taken a given interval apart); otherwise End − Start.
	Length time.Duration
	// Cumulative means the values count from server start (a single snapshot):
	// increases are totals and there is no duration to divide by.
	Cumulative bool
	// Points is the number of gauge sample points (scrapes or query steps).
	Points int
	// Times, when known, is when each point was taken (len == Points): the
	// scrape ticks, the snapshots' own times, the query steps, the log
	// lines. Nil when only the spacing is known (snapshot files given an
	// interval): the points are then evenly spaced across the window.
	Times []time.Time
	// Families keyed by the exposed family name.
	Counters   map[string][]Counter
	Gauges     map[string][]Gauge
	Histograms map[string][]Histogram
	Infos      map[string][]Info
	// From says which transport filled the window (URL, file names, query).
	From string
	// Notes are things the collector could not read, one line each.
	Notes []string
	// Withheld are families read but not trusted (duplicated, corrupt,
	// missing at one end), by exposed name, with why: the evidence they
	// would give is named as inconsistent, never computed.
	Withheld map[string]string
	// Members, when set, holds per-replica and per-rank series of the few
	// families a member's evidence needs, kept apart because the source
	// summed the series above across members (Prometheus aggregates a
	// fleet to its targets); nil when the series above are the members'.
	Members *Window
}

// Withhold records a family as untrusted and drops what was read of it.
func (w *Window) Withhold(name, why string) {
	if w.Withheld == nil {
		w.Withheld = map[string]string{}
	}
	if _, ok := w.Withheld[name]; !ok {
		w.Withheld[name] = why
	}
	delete(w.Counters, name)
	delete(w.Gauges, name)
	delete(w.Histograms, name)
	delete(w.Infos, name)
}

// New returns an empty window.
func New() *Window {
	return &Window{
		Counters:   map[string][]Counter{},
		Gauges:     map[string][]Gauge{},
		Histograms: map[string][]Histogram{},
		Infos:      map[string][]Info{},
	}
}

// Seconds is the window length, or NaN when unknown or cumulative.
func (w *Window) Seconds() float64 {
	if w.Cumulative {
		return math.NaN()
	}
	if w.Length > 0 {
		return w.Length.Seconds()
	}
	if w.Start.IsZero() || w.End.IsZero() || !w.End.After(w.Start) {
		return math.NaN()
	}
	return w.End.Sub(w.Start).Seconds()
}

// MinCovered is the share of its window data must cover before the
// window's length is taken as it is: under it, rates are over the time
// covered, and reports say so.
const MinCovered = 0.9

// Covered is the part of the window the data covers: from the first point
// any gauge series has a sample at to the last. A Prometheus window longer
// than the data in it (a server started two minutes ago, a 15-minute
// window) counts increases over the data, so rates are over this time, not
// the window's. It is the window's length when the points say nothing
// (fewer than three, no gauges, cumulative).
func (w *Window) Covered() float64 {
	secs := w.Seconds()
	if w.Points < 3 || math.IsNaN(secs) {
		return secs
	}
	first, last := -1, -1
	for _, gs := range w.Gauges {
		for _, g := range gs {
			for i, x := range g.Points {
				if math.IsNaN(x) {
					continue
				}
				if first < 0 || i < first {
					first = i
				}
				if i > last {
					last = i
				}
			}
		}
	}
	if first < 0 || (first == 0 && last == w.Points-1) {
		return secs
	}
	// The steps between the first and last sample: increases are over
	// those (at least one step: a series seen once was there about that long).
	step := secs / float64(w.Points-1)
	if len(w.Times) == w.Points {
		return math.Min(secs, math.Max(step, w.Times[last].Sub(w.Times[first]).Seconds()))
	}
	return math.Min(secs, float64(max(1, last-first))*step)
}

// CounterIncrease returns the increase of a counter from its samples, treating
// any drop as a restart from zero, as Prometheus's increase() does (without
// extrapolation to the window edges: the samples are the window's edges).
func CounterIncrease(samples []float64) (inc float64, resets int) {
	prev := math.NaN()
	for _, v := range samples {
		if math.IsNaN(v) {
			continue
		}
		switch {
		case math.IsNaN(prev):
		case v >= prev:
			inc += v - prev
		default:
			inc += v
			resets++
		}
		prev = v
	}
	return inc, resets
}
