package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
)

func sample() *advisor.Diagnosis {
	ttft, q := 2.0, 1.5
	return &advisor.Diagnosis{Schema: advisor.Schema, Window: advisor.Window{Seconds: 900, Points: 2},
		Sources: []advisor.Source{{Kind: "snapshot", Path: "a.prom", OK: true}},
		Targets: []advisor.TargetReport{{
			Primary:    advisor.Primary{Bottleneck: "queueing", Rule: "queue/x", Status: "found", Summary: "TTFT is mostly queue wait"},
			Findings:   []advisor.Finding{{Rule: "queue/x", Severity: "critical", Title: "t", Message: strings.Repeat("a long message ", 20), Evidence: map[string]float64{"stage.queue.mean": 1.5}, Docs: "docs/rules/queue/x.md"}},
			LatencyMap: advisor.LatencyMap{TTFT: &ttft, Queue: &q},
			Next:       []advisor.Step{{Do: "raise --max-num-seqs", Cost: "config"}},
		}}}
}

func TestNoColorAndWidth(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	var b bytes.Buffer
	if err := Text(&b, sample(), Options{Color: "auto", IsTerminal: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\x1b[") {
		t.Error("NO_COLOR ignored")
	}
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("%d columns: %q", n, l)
		}
	}
	for _, want := range []string{"✗ CRITICAL VERDICT queueing", "queue       1.50s  75%", "prefill         ?", "1. [config] raise --max-num-seqs", "evidence: stage.queue.mean=1.50s"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

func TestColorAlways(t *testing.T) {
	var b bytes.Buffer
	Text(&b, sample(), Options{Color: "always"})
	if !strings.Contains(b.String(), "\x1b[") {
		t.Error("--color always gave no colour")
	}
}

func TestColorOn(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("CLICOLOR_FORCE", "")
	t.Setenv("TERM", "xterm")
	if ColorOn("auto", false) || !ColorOn("auto", true) {
		t.Error("auto should follow the terminal")
	}
	t.Setenv("TERM", "dumb")
	if ColorOn("auto", true) {
		t.Error("TERM=dumb should turn colour off")
	}
	t.Setenv("CLICOLOR_FORCE", "1")
	if !ColorOn("auto", false) {
		t.Error("CLICOLOR_FORCE should turn colour on")
	}
	t.Setenv("NO_COLOR", "yes")
	if ColorOn("auto", true) {
		t.Error("NO_COLOR (any value) wins")
	}
}
