package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/llmdoctor/llmdoctor/collectors/dcgm"
	"github.com/llmdoctor/llmdoctor/collectors/vllm"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// nothingDiagnosed is the one line a run that found no target exits with:
// what the sources held instead, and what to do. An empty report is not a
// clean bill of health.
func nothingDiagnosed(w *window.Window, groupBy []string) error {
	var vf, df []string
	labels := map[string]bool{}
	add := func(name string, ls ...window.Labels) {
		switch {
		case isVLLM(name):
			vf = append(vf, name)
			for _, l := range ls {
				for k := range l {
					labels[k] = true
				}
			}
		case dcgm.Known(name):
			df = append(df, name)
		}
	}
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
	}
	var withheld []string
	if w != nil {
		for n := range w.Withheld {
			withheld = append(withheld, n)
		}
		sort.Strings(withheld)
	}
	switch {
	case len(vf) > 0:
		return &exitError{2, fmt.Sprintf("vLLM metrics were read, but no series carries %s (labels present: %s): pass --group-by with one of them",
			strings.Join(groupBy, ", "), strings.Join(sortedLabels(labels), ", "))}
	case len(withheld) > 0:
		return &exitError{2, fmt.Sprintf("every vLLM family read was withheld as untrusted (%s): see the notes with --format json, or fix the source",
			strings.Join(withheld, ", "))}
	case len(df) > 0:
		return &exitError{2, "dcgm-exporter metrics only: add the vLLM server's metrics (--vllm, its /metrics as --snapshot, or --prom) to diagnose"}
	}
	return &exitError{2, "no vLLM metrics in the sources: is this a vLLM server's /metrics (or a Prometheus that scrapes one)?"}
}

func isVLLM(name string) bool { _, ok := vllm.Known(name); return ok }

func labelsOf[T any](s []T, f func(T) window.Labels) []window.Labels {
	out := make([]window.Labels, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}

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
