package main

import (
	"path/filepath"
	"strings"
	"testing"
)

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
