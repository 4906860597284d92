package accuracy

import (
	"os"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/rules"
)

// The independent simulator's windows: right in both forms at 95% or more,
// no critical finding on a healthy window, and docs/accuracy.md's section
// is what they give now.
func TestIndependentSimulator(t *testing.T) {
	t.Parallel()
	cases, err := TreePeerCases()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("%d peer cases: the issue asks for at least 10", len(cases))
	}
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	rs := RunPeerCases(set, &rules.Config{}, cases)
	right, n := map[string]int{}, map[string]int{}
	for _, r := range rs {
		n[r.Form]++
		if r.Right {
			right[r.Form]++
		} else {
			t.Logf("%s (%s): want %s %v, got %s %s %q %s", r.Case.Name, r.Form, r.Case.Verdict, r.Case.Accept,
				r.Primary.Status, r.Primary.Bottleneck, r.Primary.Summary, r.Err)
		}
		if r.Case.Verdict == "none" && len(r.Critical) > 0 {
			t.Errorf("%s (%s): critical findings %v on a healthy window", r.Case.Name, r.Form, r.Critical)
		}
	}
	for f, k := range n {
		if float64(right[f]) < 0.95*float64(k) {
			t.Errorf("%s: %d of %d right, under 95%%", f, right[f], k)
		}
	}
	doc, _ := os.ReadFile(accuracyPage)
	if !strings.Contains(string(doc), "\n"+PeerSection(rs)+"\n") {
		t.Error("docs/accuracy.md's independent simulator section is stale: run go generate ./simrun/accuracy")
	}
}
