package main

import (
	"fmt"
	"strings"

	"github.com/llmdoctor/llmdoctor/diagnosis"
)

// nothingDiagnosed is the one line a run that found no target exits with:
// what the sources held instead, and which flag to change. An empty report
// is not a clean bill of health.
func nothingDiagnosed(e *diagnosis.NoTargetError) error {
	switch e.Why {
	case diagnosis.NoGroupLabel:
		return &exitError{2, fmt.Sprintf("%s metrics were read, but no series carries %s (labels present: %s): pass --group-by with one of them", e.Asked(),
			strings.Join(e.GroupBy, ", "), strings.Join(e.Labels, ", "))}
	case diagnosis.AllWithheld:
		return &exitError{2, fmt.Sprintf("every %s family read was withheld as untrusted (%s): see the notes with --format json, or fix the source", e.Asked(),
			strings.Join(e.Withheld, ", "))}
	case diagnosis.GPUOnly:
		return &exitError{2, "dcgm-exporter metrics only: add the serving engine's metrics (--target, its /metrics as --snapshot, or --prom) to diagnose"}
	case diagnosis.OtherEngines:
		return &exitError{2, fmt.Sprintf("the sources hold %s metrics, not %s's: leave out --engine, or pass --engine %s", e.HeldTitles(), e.Asked(),
			strings.Join(e.Held, " or --engine "))}
	}
	return &exitError{2, "no " + e.Asked() + " metrics in the sources: is this a serving engine's /metrics (SGLang needs --enable-metrics), or a Prometheus that scrapes one?"}
}
