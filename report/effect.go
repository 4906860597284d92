package report

import (
	"fmt"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// effectFigures are the figures a step's effect line shows, in order.
var effectFigures = []struct{ name, label string }{
	{"ttft_p50", "TTFT p50"}, {"ttft_p99", "TTFT p99"}, {"itl_p99", "ITL p99"}, {"e2e_p99", "E2E p99"},
}

// EffectText is a step's predicted effect on one line: the change simulated,
// each figure observed → predicted, and how well the window replayed.
func EffectText(e *advisor.Effect) string {
	if e == nil {
		return ""
	}
	var parts []string
	for _, want := range effectFigures {
		for _, f := range e.Figures {
			switch {
			case f.Name != want.name:
			case f.Unchanged:
				parts = append(parts, fmt.Sprintf("%s unchanged (%s)", want.label, units.Duration(f.Observed)))
			default:
				parts = append(parts, fmt.Sprintf("%s %s → ~%s", want.label, units.Duration(f.Observed), units.Duration(f.Predicted)))
			}
		}
	}
	s := "whatif " + e.Change + ": " + strings.Join(parts, ", ") + fmt.Sprintf(" (replay error %s)", units.WholePercent(e.ReplayError))
	if e.Note != "" {
		s += "; " + e.Note
	}
	return s
}
