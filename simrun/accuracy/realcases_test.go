package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The real-case corpus: lines pasted in public threads, diagnosed as a user
// would (diagnose --log, --snapshot). At least 85% right (a tentative
// verdict counts), no wrong verdict at warning or above, none refused; and
// docs/accuracy.md's table is what they give now.
func TestRealCases(t *testing.T) {
	t.Parallel()
	set, cfg, err := loadRules("-", nil)
	if err != nil {
		t.Fatal(err)
	}
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
	doc, _ := os.ReadFile(filepath.Join("..", "..", "docs", "accuracy.md"))
	if !strings.HasSuffix(string(doc), RealCasesSection(rs)) {
		t.Error("docs/accuracy.md's real cases are stale: run go run ./cmd/llmdoctor demo --accuracy docs/accuracy.md")
	}
}

// A tentative verdict is named as such in every format a diagnosis is
// written in, with what it rests on: SGLang's documented /metrics example,
// thousands queued with the KV cache at 28%, is a tentative queueing.
func TestTentativeInEveryFormat(t *testing.T) {
	t.Parallel()
	snap := filepath.Join("..", "..", "collectors", "scrape", "testdata", "public", "sglang-v0.3-llama-3.1-8b-docs.prom")
	for format, want := range map[string][]string{
		"text":  {"TENTATIVE VERDICT queueing", "Tentative: rests on one reading"},
		"json":  {`"status": "tentative"`, `"bottleneck": "queueing"`, `"readings": 1`, `"confirm": "a window`, `"tentative": true`},
		"html":  {"Tentative verdict: queueing", "critical, tentative", "Tentative: rests on one reading"},
		"slack": {"CRITICAL (tentative): queueing", "Tentative: rests on one reading"},
	} {
		code, out, errOut := runCLI(t, "diagnose", "--snapshot", snap, "--format", format)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, errOut)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q", format, w)
			}
		}
	}
}
