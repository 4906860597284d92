package sim

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestStepModeAdvancesPerScrapeWithTimestamps(t *testing.T) {
	e, _ := New(shortScenario(t, "healthy"), false)
	e.AdvanceTo(60)
	srv := httptest.NewServer(NewServer(e, 30*time.Second, 0).Handler())
	defer srv.Close()
	a := get(t, srv.URL+"/metrics")
	b := get(t, srv.URL+"/metrics")
	if e.Now() < 120 || e.Now() > 121 {
		t.Fatalf("two scrapes of 30 s moved the clock to %v", e.Now())
	}
	ts := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "vllm:num_requests_running{") {
				f := strings.Fields(l)
				return f[len(f)-1]
			}
		}
		return ""
	}
	if ta, tb := ts(a), ts(b); ta == "" || ta == tb {
		t.Fatalf("timestamps %q and %q", ta, tb)
	}
	g := get(t, srv.URL+"/dcgm/metrics")
	if !strings.Contains(g, "DCGM_FI_PROF_DRAM_ACTIVE{") || e.Now() > 121 {
		t.Fatal("the GPU path must serve DCGM names and leave the clock alone")
	}
}

func TestSpeedModeFollowsWallClock(t *testing.T) {
	e, _ := New(shortScenario(t, "healthy"), false)
	e.AdvanceTo(60)
	srv := httptest.NewServer(NewServer(e, 0, 600).Handler())
	defer srv.Close()
	time.Sleep(50 * time.Millisecond)
	body := get(t, srv.URL+"/metrics")
	if e.Now() < 80 {
		t.Fatalf("600× for 50 ms should pass 30 virtual seconds, clock at %v", e.Now())
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "vllm:num_requests_running{") && len(strings.Fields(l)) != 2 {
			t.Fatalf("speed mode must not stamp samples: %q", l)
		}
	}
}
