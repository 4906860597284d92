package diagnosis

import (
	"sort"

	"github.com/llmdoctor/llmdoctor/collectors/dcgm"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// NothingDiagnosed says why the input gave no target: what the sources
// held instead. It is the error Run and Checklist fail with then. With an
// engine filter, only that engine's families count as its, and sources
// holding only other engines' families say so.
func (in *Input) NothingDiagnosed() error {
	w := in.Window
	var engineFamilies, gpuFamilies int
	labels := map[string]bool{}
	held := map[string]bool{} // engines whose families the sources hold, read or withheld
	mine := func(name string) bool {
		e := engine.Of(name)
		if e != nil {
			held[e.Name] = true
		}
		return e != nil && (in.Engine == "" || e.Name == in.Engine)
	}
	add := func(name string, ls ...window.Labels) {
		switch {
		case mine(name):
			engineFamilies++
			for _, l := range ls {
				for k := range l {
					labels[k] = true
				}
			}
		case dcgm.Known(name):
			gpuFamilies++
		}
	}
	var withheld []string
	if w != nil {
		for n, s := range w.Counters {
			add(n, labelsOf(s, func(c window.Counter) window.Labels { return c.Labels })...)
		}
		for n, s := range w.Gauges {
			add(n, labelsOf(s, func(g window.Gauge) window.Labels { return g.Labels })...)
		}
		for n, s := range w.Histograms {
			add(n, labelsOf(s, func(h window.Histogram) window.Labels { return h.Labels })...)
		}
		for n := range w.Infos {
			add(n)
		}
		for n := range w.Withheld {
			if mine(n) || engine.Of(n) == nil {
				withheld = append(withheld, n)
			}
		}
		sort.Strings(withheld)
	}
	groupBy := in.GroupBy
	if len(groupBy) == 0 {
		groupBy = []string{"model_name"}
	}
	var others []string
	if in.Engine != "" && !held[in.Engine] {
		for n := range held {
			others = append(others, n)
		}
		sort.Strings(others)
	}
	switch {
	case engineFamilies > 0:
		return &NoTargetError{Why: NoGroupLabel, GroupBy: groupBy, Labels: sortedLabels(labels), Engine: in.Engine}
	case len(others) > 0:
		return &NoTargetError{Why: OtherEngines, Engine: in.Engine, Held: others}
	case len(withheld) > 0:
		return &NoTargetError{Why: AllWithheld, Withheld: withheld, Engine: in.Engine}
	case gpuFamilies > 0:
		return &NoTargetError{Why: GPUOnly, Engine: in.Engine}
	}
	return &NoTargetError{Why: NoEngineMetrics, Engine: in.Engine}
}

func labelsOf[T any](s []T, f func(T) window.Labels) []window.Labels {
	out := make([]window.Labels, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}

// sortedLabels lists the label names but le (a bucket bound, never a
// target), or "none".
func sortedLabels(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != "le" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
