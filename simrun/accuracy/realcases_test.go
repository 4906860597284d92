package accuracy

import (
	"os"
	"strings"
	"testing"
)

// The real-case corpus: lines pasted in public threads, diagnosed as a user
// would (diagnose --log, --snapshot). At least 85% right (a tentative
// verdict counts), no wrong verdict at warning or above, none refused; and
// docs/accuracy.md's table is what they give now.
func TestRealCases(t *testing.T) {
	t.Parallel()
	set, cfg := builtinRules(t)
	cases, err := TreeRealCases()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("%d real cases, want at least 30", len(cases))
	}
	rs := RunRealCases(set, cfg, cases)
	right := 0
	for _, r := range rs {
		switch r.Outcome {
		case realRight, realTentative:
			right++
		case realRefused:
			t.Errorf("%s refused: %s", r.Case.Name, r.Err)
		case realWrong:
			if r.Severity == "warning" || r.Severity == "critical" {
				t.Errorf("%s: %s verdict %s (%s), the lines support %s %v", r.Case.Name, r.Severity,
					r.Primary.Bottleneck, r.Primary.Rule, r.Case.Verdict, r.Case.Accept)
			}
		}
		// A server swapping or preempting under KV pressure is never told to
		// raise its batch cap.
		if r.Case.Verdict == "kv-capacity" && r.Primary.Bottleneck == "queueing" {
			t.Errorf("%s: a KV-capacity case called queueing", r.Case.Name)
		}
		for _, s := range r.Next {
			if r.Case.Verdict == "kv-capacity" && (strings.Contains(s.Do, "raise --max-num-seqs") || strings.Contains(s.Do, "raise --max-running-requests")) {
				t.Errorf("%s: a KV-capacity case is told to %q", r.Case.Name, s.Do)
			}
		}
	}
	if share := float64(right) / float64(len(rs)); share < 0.85 {
		t.Errorf("%d of %d real cases right (%.0f%%), want at least 85%%", right, len(rs), 100*share)
	}
	doc, _ := os.ReadFile(accuracyPage)
	if !strings.HasSuffix(string(doc), RealCasesSection(rs)) {
		t.Error("docs/accuracy.md's real cases are stale: run go generate ./simrun/accuracy")
	}
}
