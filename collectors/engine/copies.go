package engine

import (
	"maps"
	"math"

	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// collapse returns w with the engine's families reduced to one series per
// set of values of the labels that are not copies (Engine.Copies, less any
// the target is grouped by): series that differ only in a copy label say
// the same thing, so adding them would count it once per copy. Gauges keep
// the largest value at each point, counters and histograms the copy that
// counted most (copies agree; a lagging one is the one to drop). The copy
// labels are dropped from the merged series. w itself is not changed.
func (eng *Engine) collapse(w *window.Window, group []string) *window.Window {
	var copies []string
	for _, c := range eng.Copies {
		if !contains(group, c) {
			copies = append(copies, c)
		}
	}
	if len(copies) == 0 {
		return w
	}
	out := *w
	out.Counters, out.Gauges, out.Histograms = maps.Clone(w.Counters), maps.Clone(w.Gauges), maps.Clone(w.Histograms)
	for _, m := range eng.Catalogue {
		for _, n := range m.Names {
			switch m.Kind {
			case Counter:
				if ss, ok := w.Counters[n]; ok {
					out.Counters[n] = mergeCopies(ss, copies, func(c window.Counter) window.Labels { return c.Labels },
						func(a, b window.Counter) window.Counter {
							if more(b.Increase, a.Increase) {
								return b
							}
							return a
						},
						func(c window.Counter, l window.Labels) window.Counter { c.Labels = l; return c })
				}
			case Gauge:
				if ss, ok := w.Gauges[n]; ok {
					out.Gauges[n] = mergeCopies(ss, copies, func(g window.Gauge) window.Labels { return g.Labels },
						maxPoints, func(g window.Gauge, l window.Labels) window.Gauge { g.Labels = l; return g })
				}
			case Histogram:
				if ss, ok := w.Histograms[n]; ok {
					out.Histograms[n] = mergeCopies(ss, copies, func(h window.Histogram) window.Labels { return h.Labels },
						func(a, b window.Histogram) window.Histogram {
							if more(b.Count, a.Count) {
								return b
							}
							return a
						},
						func(h window.Histogram, l window.Labels) window.Histogram { h.Labels = l; return h })
				}
			}
		}
	}
	return &out
}

// mergeCopies merges the series of one family that differ only in the copy
// labels, in the order first seen; a family without copy labels is returned
// as it is.
func mergeCopies[S any](ss []S, copies []string, labels func(S) window.Labels, merge func(a, b S) S, relabel func(S, window.Labels) S) []S {
	has := false
	for _, s := range ss {
		for _, c := range copies {
			if _, ok := labels(s)[c]; ok {
				has = true
			}
		}
	}
	if !has {
		return ss
	}
	index := map[string]int{}
	out := make([]S, 0, len(ss))
	for _, s := range ss {
		l := window.Labels{}
		for k, v := range labels(s) {
			if !contains(copies, k) {
				l[k] = v
			}
		}
		s = relabel(s, l)
		k := l.Key()
		if i, ok := index[k]; ok {
			out[i] = merge(out[i], s)
			continue
		}
		index[k] = len(out)
		out = append(out, s)
	}
	return out
}

// more reports a > b, a number beating NaN.
func more(a, b float64) bool { return a > b || (!math.IsNaN(a) && math.IsNaN(b)) }

// maxPoints is two copies of a gauge as one: the larger value where both
// have one, either where one has.
func maxPoints(a, b window.Gauge) window.Gauge {
	n := max(len(a.Points), len(b.Points))
	pts := make([]float64, n)
	for i := range pts {
		pts[i] = math.NaN()
		if i < len(a.Points) {
			pts[i] = a.Points[i]
		}
		if i < len(b.Points) && more(b.Points[i], pts[i]) {
			pts[i] = b.Points[i]
		}
	}
	a.Points = pts
	return a
}
