package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/sim"
)

// Every scenario, diagnosed end to end over HTTP, gets its expected verdict;
// the healthy one has no critical finding; docs/scenarios.md is current.
func TestScenarioSuite(t *testing.T) {
	set, cfg, err := loadRules("-", nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := RunScenarios(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 10 {
		t.Fatalf("%d scenarios", len(rs))
	}
	for _, r := range rs {
		p := r.Primary()
		if !r.OK() {
			t.Errorf("%s: verdict %s (%s), want %s %v", r.Scenario.Name, p.Bottleneck, p.Rule, r.Scenario.Expect, r.Scenario.Also)
		}
		tg := r.Diagnosis.Targets[0]
		if r.Scenario.Expect == "none" {
			if p.Status != "healthy" {
				t.Errorf("healthy scenario: status %s", p.Status)
			}
			for _, f := range tg.Findings {
				if f.Severity == "critical" {
					t.Errorf("healthy scenario has critical %s", f.Rule)
				}
			}
		}
		for _, g := range tg.Gaps {
			if !contains(r.Scenario.Gaps, g.Rule) {
				t.Errorf("%s: the simulator exports everything, yet %s lacked %v", r.Scenario.Name, g.Rule, g.Missing)
			}
		}
	}
	want := ScenarioTable(rs)
	got, _ := os.ReadFile(filepath.Join("..", "..", "docs", "scenarios.md"))
	if string(got) != want {
		t.Error("docs/scenarios.md is stale: run go run ./cmd/llmdoctor demo --table docs/scenarios.md")
	}
}

// The README's main command: the default demo scenario.
func TestDemoDefaultCitesQueueShareAndWaiting(t *testing.T) {
	code, out, errOut := runCLI(t, "demo", "--color", "never")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"VERDICT queueing", "of mean TTFT", "requests were waiting", "scrape http://127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

func TestDemoListAndBadScenario(t *testing.T) {
	code, out, _ := runCLI(t, "demo", "--list")
	if code != 0 || !strings.Contains(out, "moe-bandwidth") || !strings.Contains(out, "expect memory-bandwidth") {
		t.Fatalf("list: %d %s", code, out)
	}
	code, _, errOut := runCLI(t, "demo", "--scenario", "nope")
	if code != 2 || !strings.Contains(errOut, "no scenario \"nope\"") {
		t.Fatalf("bad scenario: %d %q", code, errOut)
	}
}

// The demo end to end: simulator warm-up, 31 scrapes over HTTP, diagnosis.
func BenchmarkDemo(b *testing.B) {
	set, cfg, err := loadRules("-", nil)
	if err != nil {
		b.Fatal(err)
	}
	sc, _ := sim.Load("queue-bound")
	for i := 0; i < b.N; i++ {
		if _, err := runDemo(sc, set, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
