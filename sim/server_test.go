package sim

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // read only
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestStepModeAdvancesPerScrapeWithTimestamps(t *testing.T) {
	e, _ := New(shortScenario(t, "healthy"), false)
	e.AdvanceTo(60)
	srv := httptest.NewServer(NewServer(e, 30*time.Second, 0).Handler())
	defer srv.Close()
	ts := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "vllm:num_requests_running{") {
				f := strings.Fields(l)
				return f[len(f)-1]
			}
		}
		return ""
	}
	ms := func(sec int) string {
		return strconv.FormatInt(Epoch.Add(time.Duration(sec)*time.Second).UnixMilli(), 10)
	}
	// The first scrape serves the engine as handed over, each later one 30 s
	// on, on a fixed grid however far past it an engine step ran: the same
	// instants Offline samples.
	for i := 0; i < 5; i++ {
		if got, want := ts(get(t, srv.URL+"/metrics")), ms(60+30*i); got != want {
			t.Fatalf("scrape %d stamped %s, want %s", i, got, want)
		}
	}
	if e.Now() < 180 || e.Now() > 181 {
		t.Fatalf("five scrapes of 30 s from 60 s moved the clock to %v", e.Now())
	}
	g := get(t, srv.URL+"/dcgm/metrics")
	if !strings.Contains(g, "DCGM_FI_PROF_DRAM_ACTIVE{") || e.Now() > 181 || !strings.Contains(g, " "+ms(180)+"\n") {
		t.Fatal("the GPU path must serve DCGM names at the last scrape's time and leave the clock alone")
	}
}

// In speed mode a scrape moves the engine to the wall clock times the speed
// (in a synctest bubble, whose clock moves only when the test sleeps).
func TestSpeedModeFollowsWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := New(shortScenario(t, "healthy"), false)
		e.AdvanceTo(60)
		h := NewServer(e, 0, 600).Handler()
		time.Sleep(50 * time.Millisecond)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if w.Code != http.StatusOK {
			t.Fatalf("/metrics: HTTP %d", w.Code)
		}
		if e.Now() < 90 || e.Now() > 91 {
			t.Fatalf("600× for 50 ms should pass 30 virtual seconds from 60, clock at %v", e.Now())
		}
		for _, l := range strings.Split(w.Body.String(), "\n") {
			if strings.HasPrefix(l, "vllm:num_requests_running{") && len(strings.Fields(l)) != 2 {
				t.Fatalf("speed mode must not stamp samples: %q", l)
			}
		}
	})
}

// A step-mode server scraped from the warm-up on serves exactly what Offline
// writes at each point (timestamps aside): scrapes, saved snapshots and a
// backfilled Prometheus then hold the same window.
func TestStepModeMatchesOfflinePoints(t *testing.T) {
	sc := shortScenario(t, "kv-capacity")
	step := 15 * time.Second
	var offline []string
	save := func(_ time.Time, text []byte) error { offline = append(offline, string(text)); return nil }
	if err := (Offline{Points: save, Step: step}).Run(sc); err != nil {
		t.Fatal(err)
	}
	if want := int(sc.Duration/step) + 1; len(offline) != want {
		t.Fatalf("%d points, want %d", len(offline), want)
	}
	e, _ := New(sc, false)
	e.AdvanceTo(sc.Warmup.Seconds())
	srv := httptest.NewServer(NewServer(e, step, 0).Handler())
	defer srv.Close()
	for i, want := range offline {
		ms := strconv.FormatInt(Epoch.Add(sc.Warmup+time.Duration(i)*step).UnixMilli(), 10)
		got := strings.ReplaceAll(get(t, srv.URL+"/metrics")+get(t, srv.URL+"/dcgm/metrics"), " "+ms+"\n", "\n")
		if got != want {
			t.Fatalf("point %d (%s) differs from Offline's", i, ms)
		}
	}
}
