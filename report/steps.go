package report

import (
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
)

// LeftOutText says, in one line, which next step was left out, for which
// findings, and which step kept turns its knob the other way.
func LeftOutText(l advisor.LeftOut) string {
	return "left out: " + l.Do + " (for " + strings.Join(l.For, ", ") + "): " + l.Why
}
