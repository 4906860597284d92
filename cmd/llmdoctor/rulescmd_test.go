package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rules list and rules show cover the checklist items beside the rules.
func TestRulesListAndShowCoverChecklistItems(t *testing.T) {
	code, out, errOut := runCLI(t, "rules", "list")
	if code != 0 || !strings.Contains(out, "queue/ttft-dominated") || !strings.Contains(out, "check/kv-headroom") {
		t.Fatalf("exit %d %s\n%s", code, errOut, out)
	}
	if strings.Count(out, "measurement/non-streaming ") != 1 {
		t.Errorf("a rule that is also a checklist item is listed twice:\n%s", out)
	}
	code, out, errOut = runCLI(t, "rules", "show", "check/kv-headroom")
	if code != 0 || !strings.HasPrefix(out, "# check/kv-headroom\n") || !strings.Contains(out, "## Fails when") {
		t.Fatalf("exit %d %s\n%s", code, errOut, out)
	}
}

// rules test prints failures and the summary; -v lists passes too. An
// insufficient outcome names what the case's evidence lacks.
func TestRulesTestPrintsFailuresAndMissingFields(t *testing.T) {
	code, out, _ := runCLI(t, "rules", "test")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 1 || !strings.HasSuffix(lines[0], " passed, 0 failed") {
		t.Fatalf("exit %d, want the summary line alone:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "rules", "test", "-v")
	if code != 0 || !strings.Contains(out, "ok    builtin/queue/ttft-dominated.tests/fired.yaml\n") ||
		!strings.Contains(out, "ok    checklist/check/kv-headroom.tests/fired.yaml\n") {
		t.Fatalf("exit %d, -v lists no passes (or no checklist item):\n%.400s", code, out)
	}

	dir := t.TempDir()
	tests := filepath.Join(dir, "team", "slow-ttft.tests")
	os.MkdirAll(tests, 0o755)
	os.WriteFile(filepath.Join(dir, "team", "slow-ttft.yaml"), []byte(`id: team/slow-ttft
title: TTFT p99 above our SLO
layer: stage
bottleneck: queueing
severity: warning
params: {slo: 2}
thresholds: {slo: "our contract with the chat team"}
when: stage.ttft.p99 > params.slo && service.waiting.max > 0
says: "p99 TTFT {{dur .stage.ttft.p99}} is above {{dur .params.slo}}"
`), 0o644)
	os.WriteFile(filepath.Join(tests, "fired.yaml"), []byte("evidence:\n  stage.ttft: {count: 5, p99: 3}\n"), 0o644)
	os.WriteFile(filepath.Join(tests, "quiet.yaml"), []byte("evidence:\n  stage.ttft: {count: 100, p99: 1}\n  service.waiting: {max: 0}\n"), 0o644)
	code, out, _ = runCLI(t, "rules", "test", dir)
	want := "FAIL  team/slow-ttft.tests/fired.yaml: want fired, got insufficient: the evidence lacks " +
		"service.waiting (missing), stage.ttft (only 5 samples in the window (need 20))\n1 passed, 1 failed\n"
	if code != 1 || out != want {
		t.Fatalf("exit %d:\n%s\nwant:\n%s", code, out, want)
	}
}
