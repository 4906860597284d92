package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/diagnosis"
)

// The libraries return typed errors in their own words; the command line
// turns them into the flag to change.
func TestTypedErrorsNameTheFlag(t *testing.T) {
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "who are you", http.StatusUnauthorized)
	}))
	t.Cleanup(denied.Close)
	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)
	t.Run("401", refusedWith([]string{"401 Unauthorized", "--target-header"}, nil,
		"diagnose", "--target", denied.URL, "--scrapes", "1", "--interval", "1s"))
	t.Run("404", refusedWith([]string{"404 Not Found", "check the --target URL"}, nil,
		"diagnose", "--target", missing.URL, "--scrapes", "1", "--interval", "1s"))

	var b strings.Builder
	for s := 10; s < 13; s++ {
		fmt.Fprintf(&b, "INFO 06-16 21:24:%02d metrics.py:341] Avg prompt throughput: 2706.1 tokens/s, Avg generation throughput: 13395.4 tokens/s, Running: 34 reqs, Swapped: 0 reqs, Pending: 9 reqs, GPU KV cache usage: 99.2%%, CPU KV cache usage: 0.0%%.\n", s)
		fmt.Fprintf(&b, "[2025-06-16 21:24:%02d TP0] Decode batch, #running-req: 42, #token: 150112, token usage: 0.36, cuda graph: True, gen throughput (token/s): 3307.90, #queue-req: 6, \n", s)
	}
	both := filepath.Join(t.TempDir(), "both.log")
	if err := os.WriteFile(both, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("two engines in one log", refusedWith([]string{"3 vLLM stats lines and 3 SGLang scheduler lines", "give each its own --log"}, nil,
		"diagnose", "--log", both))
}

// config check refuses a share's threshold above 1 and names its line.
func TestConfigCheckRefusesAShareAboveOne(t *testing.T) {
	p := filepath.Join(t.TempDir(), "llmdoctor.yaml")
	if err := os.WriteFile(p, []byte("rules:\n  kv/full-waiting:\n    params:\n      kv_full: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refusedWith([]string{p + ":4: rules.kv/full-waiting.params.kv_full: 2 is out of range", "within 0 and 1"}, nil, "config", "check", p)(t)
}

// writeFile writes a test's input file, readable by its owner only (some
// hold a secret).
func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A usage error keeps its cause for errors.Is and errors.As, and is an
// exitError (exit 2) all the same.
func TestUsageErrorKeepsItsCause(t *testing.T) {
	cause := &diagnosis.SourceError{Problem: diagnosis.NothingToRead}
	err := usageErr("--x: %w", cause)
	var se *diagnosis.SourceError
	var ee *exitError
	if !errors.As(err, &se) || se != cause || !errors.As(err, &ee) || ee.code != 2 || ee.msg != "--x: "+cause.Error() {
		t.Fatalf("usageErr lost its cause or its exit code: %#v", err)
	}
}
