package view

import (
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/compare"
	"github.com/llmdoctor/llmdoctor/evidence"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		status, bottleneck, severity string
		names, sev, mark, word       string
	}{
		{"found", "queueing", "critical", "queueing", Critical, "✗", "CRITICAL"},
		{"found", "decode", "warning", "decode", Warning, "!", "WARNING"},
		{"found", "decode", "", "decode", Info, "i", "INFO"},
		{"tentative", "kv-capacity", "critical", "kv-capacity", Critical, "✗", "CRITICAL"},
		{"tentative", "none", "", "healthy", Healthy, "✓", "HEALTHY"},
		{"healthy", "none", "", "healthy", Healthy, "✓", "HEALTHY"},
		{"suppressed", "queueing", "critical", "queueing", Warning, "~", "SUPPRESSED"},
		{"inconclusive", "unknown", "", "inconclusive", Inconclusive, "?", "INCONCLUSIVE"},
	} {
		names, sev, mark, word := Classify(c.status, c.bottleneck, c.severity)
		if names != c.names || sev != c.sev || mark != c.mark || word != c.word {
			t.Errorf("%s %s %s: %s %s %s %s", c.status, c.bottleneck, c.severity, names, sev, mark, word)
		}
	}
}

// "Could not run" counts the rules whose inputs were missing, as the
// checks line does: a rule quiet by a bound on its missing inputs ran.
func TestCouldNotRunCountsWhatTheChecksLineCounts(t *testing.T) {
	tr := &advisor.TargetReport{Target: evidence.Target{ServedBy: "vllm"},
		Gaps:    []advisor.Gap{{Rule: "a/open"}, {Rule: "b/bounded", Bounded: "the queue explains all of TTFT"}, {Rule: "c/open"}},
		Skipped: []advisor.Skip{{Source: "dcgm", Rules: []string{"d", "e"}}},
		Checks:  advisor.Checks{Fired: 1, Quiet: 5, Bounded: 1, Insufficient: 2}}
	v := TargetOf(tr)
	if v.Gaps.CouldNotRun != tr.Checks.Insufficient || v.Gaps.Bounded != tr.Checks.Bounded {
		t.Errorf("could not run %d, bounded %d; checks %+v", v.Gaps.CouldNotRun, v.Gaps.Bounded, tr.Checks)
	}
	if got := v.Gaps.CouldNotRunLine(); got != "2 checks could not run" {
		t.Errorf("line %q", got)
	}
	if !strings.HasSuffix(v.Checks, "· 2 could not run") || v.Gaps.Skipped[0].Line != "2 dcgm rules skipped: no dcgm data" {
		t.Errorf("%q, %q", v.Checks, v.Gaps.Skipped[0].Line)
	}
}

// The first screen shows the findings no other explains, those they
// explain under them, and the first steps.
func TestFirstScreen(t *testing.T) {
	tr := &advisor.TargetReport{Primary: advisor.Primary{Status: "found", Bottleneck: "queueing", Rule: "q/a"}}
	for _, id := range []string{"q/a", "q/b", "c/d", "e/f", "g/h"} {
		f := advisor.Finding{Rule: id, Severity: "warning"}
		if id == "q/b" {
			f.ExplainedBy = "q/a"
		}
		tr.Findings = append(tr.Findings, f)
	}
	for range 7 {
		tr.Next = append(tr.Next, advisor.Step{Do: "x", Cost: "config"})
	}
	v := TargetOf(tr)
	first := v.FirstFindings()
	if len(first) != FirstFindings || first[0].Rule != "q/a" || len(first[0].Explained) != 1 || first[1].Rule != "c/d" {
		t.Errorf("first findings %+v", first)
	}
	if more := v.MoreFindings(); len(more) != 1 || more[0].Rule != "g/h" {
		t.Errorf("more %+v", more)
	}
	if len(v.FirstSteps()) != FirstSteps {
		t.Errorf("%d first steps", len(v.FirstSteps()))
	}
}

// The gate: a blocking failure fails, and under strict so does a blocking
// item that could not be checked; an unchecked blocking item otherwise
// leaves it unverified; an advisory failure passes amber.
func TestChecklistGate(t *testing.T) {
	item := func(status string, blocking bool) advisor.Item {
		return advisor.Item{ID: status, Status: status, Blocking: blocking}
	}
	for _, c := range []struct {
		items  []advisor.Item
		strict bool
		want   string
	}{
		{[]advisor.Item{item(advisor.Pass, true), item(advisor.Fail, true)}, false, Critical},
		{[]advisor.Item{item(advisor.Pass, true), item(advisor.CannotCheck, true)}, false, Inconclusive},
		{[]advisor.Item{item(advisor.Pass, true), item(advisor.CannotCheck, true)}, true, Critical},
		{[]advisor.Item{item(advisor.Pass, true), item(advisor.CannotCheck, false)}, true, Healthy},
		{[]advisor.Item{item(advisor.Pass, true), item(advisor.Fail, false)}, false, Warning},
	} {
		cl := &advisor.Checklist{Strict: c.strict, Targets: []advisor.ChecklistTarget{{Items: c.items}}}
		cl.Decide()
		v := ChecklistOf(cl)
		if got := v.Targets[0].Severity; got != c.want {
			t.Errorf("%+v strict %v: %s, want %s", c.items, c.strict, got, c.want)
		}
		if v.Targets[0].Items[0].Status == advisor.Pass && len(c.items) > 1 && c.items[1].Status != advisor.Pass {
			t.Errorf("a pass listed before %s", c.items[1].Status)
		}
		// The checklist's gate and its one target's say the same.
		if tv := v.Targets[0].Verdict; tv != v.Verdict {
			t.Errorf("checklist %q, its target %q", v.Verdict, tv)
		}
	}
}

func TestComparisonRows(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	c := &compare.Comparison{Targets: []compare.Target{{Verdict: compare.Inconclusive, Why: "inconclusive: no band",
		Conditions: []compare.Condition{{Name: "prefix caching", Path: "cond.prefix_caching", Kind: "config", Before: f(1), After: f(0), Change: f(-1), Beyond: true}},
		Latency: []compare.Delta{{Name: "TTFT p99", Path: "stage.ttft.p99", Before: f(1), After: f(2), Change: f(1), Noise: f(127.85)},
			{Name: "ITL p99", Path: "stage.itl.p99", Before: f(0.05), After: f(0.05), Change: f(0)}}}},
		Unevaluated: []string{"itl_p99", "ttft_p99"}}
	v := ComparisonOf(c)
	tg := v.Targets[0]
	if tg.Word != "INCONCLUSIVE" || tg.Severity != Inconclusive {
		t.Errorf("an inconclusive comparison says %s %s", tg.Mark, tg.Word)
	}
	if r := tg.Conditions[0]; r.Before != "on" || r.After != "off" || r.Change != "changed" {
		t.Errorf("a switch prints %q %q %q", r.Before, r.After, r.Change)
	}
	if b := tg.Latency[0].Band; b != WideBand || v.WideBand == "" {
		t.Errorf("a ±12785%% band prints %q, note %q", b, v.WideBand)
	}
	if b := tg.Latency[1].Band; b != "unknown" {
		t.Errorf("no band prints %q", b)
	}
	// Each unjudged gate says why: ITL p99's band is unknown; for TTFT p99
	// nothing in the figures says why, and the line says so rather than
	// nothing.
	for _, want := range []string{"the gate itl_p99: ITL p99's noise band is unknown", "the gate ttft_p99: no target could judge it",
		"A gate does not pass unjudged."} {
		if !strings.Contains(v.Unjudged, want) {
			t.Errorf("unjudged %q lacks %q", v.Unjudged, want)
		}
	}
}
