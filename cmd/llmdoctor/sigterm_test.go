package main

import (
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/sim"
)

// SIGTERM (what a container runtime or timeout sends) ends a live scrape as
// Ctrl-C does: what was collected is diagnosed and labelled partial. Not
// parallel: the signal goes to the whole test process.
func TestSIGTERMEndsAScrapeWithAPartialDiagnosis(t *testing.T) {
	sc, err := sim.Load("queue-bound")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(simHandler(t, sc, 30*time.Second, 0))
	defer srv.Close()
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := runCLI(t, "diagnose", "--target", srv.URL, "--duration", "5m", "--interval", "200ms", "--format", "json")
		done <- result{code, out, errs}
	}()
	time.Sleep(2 * time.Second)
	p, _ := os.FindProcess(os.Getpid())
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Skip("cannot signal on this platform:", err)
	}
	select {
	case r := <-done:
		if r.code != 0 || !strings.Contains(r.out, "partial window: stopped after") {
			t.Fatalf("exit %d\nstdout %.600s\nstderr %s", r.code, r.out, r.errs)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the scrape did not stop on SIGTERM")
	}
}
