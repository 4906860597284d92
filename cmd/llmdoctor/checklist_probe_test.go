package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/sim"
)

// serveSimAPI serves a scenario's engine with no traffic of its own on the
// OpenAI API, its clock speed times real time; completions counts the
// completion requests it was sent.
func serveSimAPI(t *testing.T, scenario string, speed float64) (url string, completions *atomic.Int64) {
	t.Helper()
	sc, err := sim.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.NoTraffic(sc), false)
	if err != nil {
		t.Fatal(err)
	}
	s := sim.NewServer(e, 0, speed)
	h := s.Handler()
	completions = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "completions") {
			completions.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = s.Close() // ends open streams; never fails
		srv.Close()
	})
	return srv.URL, completions
}

// A small, fast probe of the simulator at ten times real time.
func checklistProbeArgs(url string, extra ...string) []string {
	return append([]string{"checklist", "--probe", "--target", url, "--concurrency", "1,2,4", "--lengths", "128,512",
		"--repeats", "1", "--warmup", "1", "--step-requests", "8", "--output-tokens", "16", "--max-rate", "1000", "--seed", "1"},
		extra...)
}

type checklistJSON struct {
	Schema  string   `json:"schema"`
	Status  string   `json:"status"`
	Notes   []string `json:"notes"`
	Sources []struct {
		Kind, Path, URL string
	} `json:"sources"`
	Targets []struct {
		Items []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"items"`
	} `json:"targets"`
}

func itemStatus(c checklistJSON, id string) string {
	for _, t := range c.Targets {
		for _, it := range t.Items {
			if it.ID == id {
				return it.Status
			}
		}
	}
	return ""
}

// checklist --probe makes the pre-launch run itself and checks the items
// on what it measured: the SLO gates on the run's requests, the hygiene
// items passing because the probe keeps it. The simulator runs at ten
// times real time, so its metrics' clock is not the client's (the
// evidence withholds one against the other): the quick test reads the
// requests alone; the heavy one the engine's metrics too, in real time.
func TestChecklistProbeChecksThePreLaunchRun(t *testing.T) {
	url, sent := serveSimAPI(t, "queue-bound", 10)
	c := runChecklistProbe(t, checklistProbeArgs(url, "--slo", "ttft_p99=1s,itl_p99=500ms", "--no-metrics", "--format", "json"), 0)
	checkPreLaunch(t, c, false)
	if itemStatus(c, "check/queue-prefill-metrics") != "cannot-check" {
		t.Errorf("queue and prefill metrics %q without the engine's metrics", itemStatus(c, "check/queue-prefill-metrics"))
	}
	if n := sent.Load(); n > 1000 || n < 200 {
		t.Errorf("the server was sent %d completions: want the launch run's 200 and the ladder's, within the limit", n)
	}
}

func TestChecklistProbeReadsTheEngine(t *testing.T) {
	if !testkit.Heavy() {
		t.Skip("a real-time probe (10 s): " + testkit.HeavyEnv + "=1")
	}
	url, _ := serveSimAPI(t, "healthy", 1)
	c := runChecklistProbe(t, append(checklistProbeArgs(url, "--slo", "ttft_p99=1s,itl_p99=500ms", "--format", "json"),
		"--concurrency", "1,4,16"), 0)
	checkPreLaunch(t, c, true)
	for _, id := range []string{"check/queue-prefill-metrics", "check/kv-headroom", "check/no-preemptions", "check/queue-not-persistent"} {
		if got := itemStatus(c, id); got != "pass" {
			t.Errorf("%s: %q, want pass on the engine's metrics", id, got)
		}
	}
}

func runChecklistProbe(t *testing.T, args []string, want int) checklistJSON {
	t.Helper()
	code, out, stderr := runCLI(t, args...)
	if code != want {
		t.Fatalf("exit %d, want %d: %s\n%s", code, want, stderr, out)
	}
	var c checklistJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return c
}

func checkPreLaunch(t *testing.T, c checklistJSON, scraped bool) {
	t.Helper()
	notes := strings.Join(c.Notes, "\n")
	if c.Schema != "llmdoctor.checklist/v1" || !strings.Contains(notes, "probe: capacity: ") ||
		!strings.Contains(notes, "checked on the pre-launch run: open-loop") || !strings.Contains(notes, "80% of the capacity") {
		t.Fatalf("schema %q, notes:\n%s", c.Schema, notes)
	}
	var probed, scrape bool
	for _, s := range c.Sources {
		probed = probed || s.Kind == "requests" && strings.HasPrefix(s.Path, "probe: ") && strings.HasSuffix(s.Path, "requests/s")
		scrape = scrape || s.Kind == "scrape"
	}
	if !probed || scrape != scraped {
		t.Errorf("sources %+v: want the pre-launch run's requests (and the engine's scrape: %v)", c.Sources, scraped)
	}
	for _, id := range []string{"slo/ttft-p99", "slo/itl-p99", "measurement/non-streaming", "measurement/fixed-prompt-lengths",
		"measurement/closed-loop", "measurement/early-stop", "measurement/failures-in-latency"} {
		if got := itemStatus(c, id); got != "pass" {
			t.Errorf("%s: %q, want pass", id, got)
		}
	}
}

// When no load meets the SLO there is no capacity to launch at: the items
// are checked on the lowest load, and the SLO gate fails the checklist.
func TestChecklistProbeWithNoCapacityFails(t *testing.T) {
	url, _ := serveSimAPI(t, "queue-bound", 10)
	c := runChecklistProbe(t, checklistProbeArgs(url, "--slo", "ttft_p99=1ms", "--concurrency", "1", "--step-requests", "24", "--no-metrics", "--format", "json"), 1)
	notes := strings.Join(c.Notes, "\n")
	if c.Status != "fail" || itemStatus(c, "slo/ttft-p99") != "fail" || !strings.Contains(notes, "probe: no capacity: no load met") ||
		!strings.Contains(notes, "checked on concurrency 1 (the first load past the SLO)") || !strings.Contains(notes, "launch run") {
		t.Errorf("status %q, ttft item %q, notes:\n%s", c.Status, itemStatus(c, "slo/ttft-p99"), notes)
	}
}

// The probe's limits hold through checklist: the request bound counts the
// launch run too.
func TestChecklistProbeKeepsTheRequestBound(t *testing.T) {
	url, sent := serveSimAPI(t, "queue-bound", 10)
	code, out, stderr := runCLI(t, checklistProbeArgs(url, "--max-requests", "40", "--format", "json")...)
	if code == 2 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	if n := sent.Load(); n > 40 {
		t.Errorf("the server was sent %d completions, the limit is 40", n)
	}
}

func TestChecklistProbeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"checklist", "--probe"}, "give it with --target URL, once"},
		{[]string{"checklist", "--probe", "--target", "http://127.0.0.1:1", "--target", "http://127.0.0.1:2"}, "give it with --target URL, once"},
		{[]string{"checklist", "--probe", "--target", "http://127.0.0.1:1", "--bench", "run.json"}, "without --prom, --snapshot, --log, --bench or --requests"},
		{[]string{"checklist", "--bench", "run.json", "--max-requests", "5"}, "--max-requests is for --probe"},
		{[]string{"checklist", "--bench", "run.json", "--launch", "50%"}, "--launch is for --probe"},
		{[]string{"checklist", "--probe", "--target", "http://127.0.0.1:1", "--launch", "120%"}, "--launch \"120%\""},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// --dry-run prints the plan with the pre-launch run in it and sends nothing.
func TestChecklistProbeDryRun(t *testing.T) {
	url, sent := serveSimAPI(t, "queue-bound", 10)
	code, out, stderr := runCLI(t, "checklist", "--probe", "--target", url, "--dry-run")
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "then the pre-launch run, open loop at 80% of the capacity's throughput (200 requests)") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("--dry-run sent %d completions", n)
	}
}
