package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// --no-traffic serves what it is sent: an offline run has nothing to write.
func TestSimNoTrafficIsForServing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	code, stdout, stderr := runCLI(t, "sim", "--scenario", "queue-bound", "--no-traffic", "--bench", out)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--no-traffic serves only what it is sent") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
