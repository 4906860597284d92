package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func benchFile(name string) string {
	return filepath.Join("..", "..", "collectors", "requests", "testdata", name)
}

type checklistJSON struct {
	Schema  string
	Status  string
	Targets []struct {
		Items []struct {
			ID, Status, Message string
		}
	}
}

func checklist(t *testing.T, args ...string) (int, checklistJSON) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"checklist", "--format", "json"}, args...)...)
	var c checklistJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("exit %d, %v: %s %s", code, err, out, errOut)
	}
	return code, c
}

func item(c checklistJSON, id string) (status, msg string) {
	for _, it := range c.Targets[0].Items {
		if it.ID == id {
			return it.Status, it.Message
		}
	}
	return "absent", ""
}

// The streaming item fails when TTFT ≈ E2E; the length item fails for fixed
// prompt lengths and reports the fitted slope and intercept when they vary.
func TestChecklistOnBenchmarks(t *testing.T) {
	code, c := checklist(t, "--bench", benchFile("bench-nonstreaming.json"))
	if s, msg := item(c, "measurement/non-streaming"); code != 1 || s != "fail" || !strings.Contains(msg, "does not stream") {
		t.Fatalf("non-streaming: exit %d, streaming item %s %q", code, s, msg)
	}
	code, c = checklist(t, "--bench", benchFile("bench-fixed-closed.json"))
	if s, _ := item(c, "measurement/fixed-prompt-lengths"); code != 1 || s != "fail" {
		t.Fatalf("fixed lengths: exit %d, item %s", code, s)
	}
	if s, _ := item(c, "measurement/closed-loop"); s != "fail" {
		t.Fatalf("closed loop item %s", s)
	}
	_, c = checklist(t, "--bench", benchFile("bench-detailed.json"))
	s, msg := item(c, "measurement/fixed-prompt-lengths")
	if s != "pass" || !strings.Contains(msg, "per 1k prompt tokens") || !strings.Contains(msg, "TTFT ≈ ") || strings.Contains(msg, "n/a") {
		t.Fatalf("varied lengths: %s %q", s, msg)
	}
	if s, _ := item(c, "measurement/non-streaming"); s != "pass" {
		t.Fatalf("streaming %s", s)
	}
}

// Cannot-check is never a pass, and --strict turns it into a failure.
func TestChecklistCannotCheckAndStrict(t *testing.T) {
	args := []string{"--bench", benchFile("bench-detailed.json"), "--slo", "ttft_p99=10s"}
	code, c := checklist(t, args...)
	if s, _ := item(c, "check/kv-headroom"); s != "cannot-check" || code != 0 || c.Status != "pass" {
		t.Fatalf("exit %d status %s kv item %s", code, c.Status, s)
	}
	if s, msg := item(c, "slo/ttft-p99"); s != "pass" || !strings.Contains(msg, "within 10.00s") {
		t.Fatalf("slo %s %q", s, msg)
	}
	code, c = checklist(t, append(args, "--strict")...)
	if code != 1 || c.Status != "fail" {
		t.Fatalf("strict: exit %d status %s", code, c.Status)
	}
	code, _, errOut := runCLI(t, "checklist", "--bench", benchFile("bench-detailed.json"), "--slo", "ttft=2s")
	if code != 2 || !strings.Contains(errOut, "NAME_PCT=DURATION") {
		t.Fatalf("bad --slo: %d %q", code, errOut)
	}
}

// With the simulator's window: headroom items judged on real metrics.
func TestChecklistOnSnapshots(t *testing.T) {
	code, c := checklist(t, example("kv-capacity")...)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	for id, want := range map[string]string{"check/kv-headroom": "fail", "check/no-preemptions": "fail",
		"check/queue-prefill-metrics": "pass", "measurement/non-streaming": "cannot-check"} {
		if s, _ := item(c, id); s != want {
			t.Errorf("%s: %s, want %s", id, s, want)
		}
	}
}

// The JUnit output validates against the JUnit 4 schema.
func TestChecklistJUnitValidates(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint missing: CI installs libxml2-utils")
		}
		t.Skip("xmllint not installed (apt-get install libxml2-utils)")
	}
	_, out, _ := runCLI(t, "checklist", "--format", "junit", "--bench", benchFile("bench-nonstreaming.json"), "--slo", "ttft_p99=1s,itl_p99=50ms")
	p := filepath.Join(t.TempDir(), "checklist.xml")
	os.WriteFile(p, []byte(out), 0o644)
	res, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("..", "..", "report", "testdata", "junit.xsd"), p).CombinedOutput()
	if err != nil {
		t.Fatalf("invalid JUnit XML: %v\n%s\n%s", err, res, out)
	}
	for _, want := range []string{`<failure message=`, `<skipped message="cannot check:`, `classname="llmdoctor.checklist"`} {
		if !strings.Contains(out, want) {
			t.Errorf("JUnit lacks %s", want)
		}
	}
}

func TestChecklistMarkdown(t *testing.T) {
	_, out, _ := runCLI(t, "checklist", "--format", "markdown", "--bench", benchFile("bench-fixed-closed.json"))
	if !strings.HasPrefix(out, "# Pre-launch checklist: ❌ not ready") || !strings.Contains(out, "| ✗ FAIL | [Prompt lengths vary") {
		t.Fatalf("markdown:\n%s", out)
	}
}
