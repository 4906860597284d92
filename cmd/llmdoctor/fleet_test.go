package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/scrape"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/simrun"
)

// serveScenario starts a step-mode simulator on a loopback port; change,
// when given, adjusts the scenario first.
func serveScenario(t *testing.T, name string, seed int64, change ...func(*sim.Scenario)) string {
	t.Helper()
	sc, err := sim.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	sc.Seed = seed
	for _, c := range change {
		c(sc)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: simHandler(t, sc, sc.Duration/simrun.Scrapes, 0)}
	go func() { _ = hs.Serve(ln) }() // ErrServerClosed once the test closes it
	t.Cleanup(func() {
		if err := hs.Close(); err != nil {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String() + "/metrics"
}

// simHandler serves a scenario's simulator from the end of its warm-up:
// step mode (each scrape moves the clock by step) or speed mode.
func simHandler(t *testing.T, sc *sim.Scenario, step time.Duration, speed float64) http.Handler {
	t.Helper()
	e, err := sim.New(sc, false)
	if err != nil {
		t.Fatal(err)
	}
	e.AdvanceTo(sc.Warmup.Seconds())
	return sim.NewServer(e, step, speed).Handler()
}

// fleetDiagnosis scrapes three healthy replicas and one that queues (the
// third URL) and diagnoses them as one target.
func fleetDiagnosis(t *testing.T) (*advisor.Diagnosis, []string) {
	t.Helper()
	urls := []string{serveScenario(t, "healthy", 1), serveScenario(t, "healthy", 2),
		serveScenario(t, "queue-bound", 3), serveScenario(t, "healthy", 4)}
	s := &scrape.Scraper{URLs: urls, Interval: 2 * time.Millisecond, Scrapes: simrun.Scrapes, Sequential: true}
	w, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	set, cfg, _ := loadRules("-", nil)
	return (&diagnosis.Input{Window: w, Sources: []advisor.Source{{Kind: "scrape", OK: true}}}).Diagnose(set, cfg), urls
}

// Three healthy replicas and one that queues: the fleet rule names it.
func TestFleetOutlierNamesTheInstance(t *testing.T) {
	t.Parallel()
	d, urls := fleetDiagnosis(t)
	if len(d.Targets) != 1 {
		t.Fatalf("%d targets", len(d.Targets))
	}
	tg := d.Targets[0]
	sick := strings.TrimSuffix(strings.TrimPrefix(urls[2], "http://"), "/metrics")
	var msg string
	for _, f := range tg.Findings {
		if f.Rule == "fleet/outlier" {
			msg = f.Message
		}
	}
	if !strings.Contains(msg, sick) || !strings.Contains(msg, "Of 4 instances") {
		t.Fatalf("fleet finding %q does not name %s; findings %+v", msg, sick, tg.Findings)
	}
	if len(tg.Members) != 4 {
		t.Fatalf("%d members", len(tg.Members))
	}
}

// Past capacity the TTFT tail climbs step by step: the trend rule sees it
// where window averages cannot.
func TestOverloadShowsRisingTail(t *testing.T) {
	t.Parallel()
	url := serveScenario(t, "queue-bound", 1, func(sc *sim.Scenario) { sc.Workload.Rate = 16 })
	s := &scrape.Scraper{URLs: []string{url}, Interval: 2 * time.Millisecond, Scrapes: simrun.Scrapes, Sequential: true}
	w, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	set, cfg, _ := loadRules("-", nil)
	d := (&diagnosis.Input{Window: w}).Diagnose(set, cfg)
	tg := d.Targets[0]
	fired := false
	for _, f := range tg.Findings {
		if f.Rule == "tail/rising" {
			fired = true
			if f.Evidence["stage.ttft_p99_trend"] < 1 {
				t.Fatalf("trend %v", f.Evidence["stage.ttft_p99_trend"])
			}
		}
	}
	if !fired || tg.Primary.Bottleneck != "queueing" {
		t.Fatalf("primary %s, findings %+v", tg.Primary.Bottleneck, tg.Findings)
	}
}
