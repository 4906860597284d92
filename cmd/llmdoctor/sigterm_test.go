package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
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
	// The signal goes once the third scrape has been served: the command
	// handles signals by then, and has something to diagnose.
	simulated := simHandler(t, sc, 30*time.Second, 0)
	scraped := make(chan struct{})
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		simulated.ServeHTTP(w, r)
		if served.Add(1) == 3 {
			close(scraped)
		}
	}))
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
	select {
	case <-scraped:
	case r := <-done:
		t.Fatalf("the scrape ended before the signal: exit %d\nstderr %s", r.code, r.errs)
	}
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
