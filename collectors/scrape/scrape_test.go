package scrape

import (
	"context"
	"errors"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit/expogen"
)

func mustParse(t *testing.T, s string) *Snapshot {
	t.Helper()
	snap, err := Parse([]byte(s), "")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestParseKeepsEnginesSkipsCreatedAndWithholdsNaN(t *testing.T) {
	data, _ := os.ReadFile("testdata/two-engines.prom")
	s := mustParse(t, string(data))
	if n := len(s.Gauges["vllm:num_requests_waiting"]); n != 2 {
		t.Fatalf("want 2 engines of waiting, got %d", n)
	}
	if _, ok := s.Gauges["vllm:num_preemptions_created"]; ok {
		t.Fatal("_created family kept as data")
	}
	w := Window([]*Snapshot{s}, "", "f")
	ev := engine.Build(w, engine.Options{})
	if len(ev) != 1 || len(ev[0].Members) != 2 {
		t.Fatalf("want one target with two engine members, got %d targets", len(ev))
	}
	v := ev[0].Values
	if v.Service.Waiting.Last != 8 {
		t.Errorf("waiting summed over engines: got %v, want 8", v.Service.Waiting.Last)
	}
	// NaN on engine 0: the other engine's 0.5 would pass for the model's
	// usage, so the family is withheld and named, not averaged over half.
	if !math.IsNaN(v.Resource.KVUsage.Last) || !strings.Contains(ev[0].Inconsistent("resource.kv_usage.last"), "vllm:kv_cache_usage_perc") {
		t.Errorf("kv usage with one NaN engine: got %v, inconsistencies %+v", v.Resource.KVUsage.Last, ev[0].Inconsistencies)
	}
	if v.Stage.Queue.Count != 6 || v.Stage.Queue.Mean != 0.5 {
		t.Errorf("queue histogram summed over engines: count %v mean %v", v.Stage.Queue.Count, v.Stage.Queue.Mean)
	}
	if math.Abs(v.Service.Preemptions-2.00000975010481363281) > 1e-9 {
		t.Errorf("scientific notation sample: got %v", v.Service.Preemptions)
	}
	if !w.Cumulative || !math.IsNaN(v.Service.RequestRate) {
		t.Error("a single snapshot must be cumulative with no rates")
	}
}

func TestParseBadInput(t *testing.T) {
	full, _ := os.ReadFile("testdata/two-engines.prom")
	cut := string(full[:strings.Index(string(full), `le="+Inf"} 2.0`)+8])
	cases := map[string]struct{ in, want string }{
		"html error page": {"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>", "HTML page"},
		"empty":           {"  \n", "empty"},
		"truncated line":  {cut, "malformed exposition"},
		"garbage value":   {"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} abc\n", "malformed exposition"},
		"bad openmetrics": {"# TYPE vllm:x gauge\nvllm:x{ 1\n# EOF\n", "malformed OpenMetrics"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.in), "")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestHistogramWithoutInfIsANoteNotAQuantile(t *testing.T) {
	s := mustParse(t, "# TYPE vllm:request_queue_time_seconds histogram\n"+
		"vllm:request_queue_time_seconds_bucket{model_name=\"m\",le=\"0.3\"} 1.0\n"+
		"vllm:request_queue_time_seconds_count{model_name=\"m\"} 2.0\n"+
		"vllm:request_queue_time_seconds_sum{model_name=\"m\"} 1.0\n")
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "no +Inf") {
		t.Fatalf("notes: %v", s.Notes)
	}
	ev := engine.Build(Window([]*Snapshot{s}, "", "f"), engine.Options{})
	if q := ev[0].Values.Stage.Queue; !math.IsNaN(q.P50) || q.Mean != 0.5 {
		t.Fatalf("want NaN quantiles and a mean, got %+v", q)
	}
}

func TestTypeWithoutHelpAndWrongType(t *testing.T) {
	s := mustParse(t, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 4\n"+
		"# TYPE vllm:time_to_first_token_seconds gauge\nvllm:time_to_first_token_seconds{model_name=\"m\"} 4\n")
	if len(s.Gauges["vllm:num_requests_running"]) != 1 {
		t.Fatal("TYPE without HELP not read")
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "expected histogram") {
		t.Fatalf("want a note about the wrong type, got %v", s.Notes)
	}
}

func TestCounterResetBetweenSnapshots(t *testing.T) {
	mk := func(v, hcount string) *Snapshot {
		return mustParse(t, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} "+v+"\n"+
			"# TYPE vllm:e2e_request_latency_seconds histogram\n"+
			"vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"1.0\"} "+hcount+"\n"+
			"vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"+Inf\"} "+hcount+"\n"+
			"vllm:e2e_request_latency_seconds_count{model_name=\"m\"} "+hcount+"\n"+
			"vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} "+hcount+"\n")
	}
	snaps := []*Snapshot{mk("1000", "100"), mk("1500", "150"), mk("200", "20"), mk("300", "30")}
	for i, s := range snaps {
		s.Time = time.Unix(int64(i*60), 0)
	}
	w := Window(snaps, "", "f")
	c := w.Counters["vllm:generation_tokens_total"][0]
	if c.Increase != 500+200+100 || c.Resets != 1 {
		t.Fatalf("counter increase %v resets %d, want 800 and 1", c.Increase, c.Resets)
	}
	h := w.Histograms["vllm:e2e_request_latency_seconds"][0]
	if h.Count != 50+20+10 || h.Resets != 1 {
		t.Fatalf("histogram count %v resets %d, want 80 and 1", h.Count, h.Resets)
	}
	if w.Seconds() != 180 {
		t.Fatalf("window %v s", w.Seconds())
	}
}

// A series that first appears mid-window counts from zero (vLLM creates
// labelled series on first use).
func TestSeriesAppearingMidWindowCountsFromZero(t *testing.T) {
	a := mustParse(t, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 10\n")
	b := mustParse(t, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 30\n"+
		"vllm:request_success_total{model_name=\"m\",finished_reason=\"error\"} 5\n")
	a.Time, b.Time = time.Unix(0, 0), time.Unix(100, 0)
	ev := engine.Build(Window([]*Snapshot{a, b}, "", "f"), engine.Options{})
	s := ev[0].Values.Service
	if s.Finished != 25 || s.Errors != 5 || s.FailedShare != 0.2 || s.RequestRate != 0.25 {
		t.Fatalf("finished %v errors %v share %v rate %v", s.Finished, s.Errors, s.FailedShare, s.RequestRate)
	}
}

// Live scraping over real HTTP: the server serves the start exposition, then
// the end one; the window must equal the one from the same files on disk.
func TestScrapeOverHTTPMatchesSnapshots(t *testing.T) {
	sc, _ := expogen.ByName("queueing")
	start, end := expogen.Snapshots(sc, expogen.V1)
	var n atomic.Int32
	var agents sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents.Store(r.UserAgent(), true)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if n.Add(1) == 1 {
			w.Write([]byte(start))
			return
		}
		w.Write([]byte(end))
	}))
	defer srv.Close()
	s := &Scraper{URLs: []string{MetricsURL(srv.URL)}, Interval: 20 * time.Millisecond, Duration: 30 * time.Millisecond}
	w, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	agents.Range(func(k, _ any) bool {
		if !strings.HasPrefix(k.(string), "llmdoctor/") {
			t.Errorf("User-Agent %q", k)
		}
		return true
	})
	live := engine.Build(w, engine.Options{})[0].Values
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/a.prom", []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/b.prom", []byte(end), 0o644); err != nil {
		t.Fatal(err)
	}
	fw, err := Files([]string{dir + "/a.prom", dir + "/b.prom"}, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := engine.Build(fw, engine.Options{})[0].Values
	if !sameDist(live.Stage.Queue, files.Stage.Queue) || !sameDist(live.Stage.TTFT, files.Stage.TTFT) || live.Service.Finished != files.Service.Finished {
		t.Fatalf("live and file windows differ: %+v vs %+v", live.Stage.Queue, files.Stage.Queue)
	}
	if files.Service.Finished != float64(sc.Window) {
		t.Fatalf("finished %v, want %d", files.Service.Finished, sc.Window)
	}
}

func TestScrapeErrorsAreOneClearLine(t *testing.T) {
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html>login</html>"))
	}))
	defer html.Close()
	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer fail.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // no answer until the client gives up
	}))
	defer slow.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	cases := map[string]struct{ url, want string }{
		"html":    {html.URL + "/metrics", "HTML page"},
		"500":     {fail.URL + "/metrics", "500 Internal Server Error"},
		"timeout": {slow.URL + "/metrics", "timed out"},
		"down":    {closedURL + "/metrics", "connection refused"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Fetch(context.Background(), &http.Client{Timeout: 100 * time.Millisecond}, c.url)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line containing %q", err, c.want)
			}
		})
	}
}

func TestFilesNeedSpacing(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile("testdata/two-engines.prom")
	if err := os.WriteFile(dir+"/a.prom", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/b.prom", data, 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.Chtimes(dir+"/a.prom", now, now); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir+"/b.prom", now, now); err != nil {
		t.Fatal(err)
	}
	_, err := Files([]string{dir + "/a.prom", dir + "/b.prom"}, 0, nil)
	var se *SpacingError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "cannot tell how far apart") {
		t.Fatalf("want a spacing error, got %v", err)
	}
}

func TestMetricsURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8000":            "http://127.0.0.1:8000/metrics",
		"http://h:8000/":            "http://h:8000/metrics",
		"https://h/custom/metrics":  "https://h/custom/metrics",
		"http://h:8000/metrics?x=1": "http://h:8000/metrics?x=1",
	} {
		if got := MetricsURL(in); got != want {
			t.Errorf("MetricsURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	data, _ := os.ReadFile("testdata/two-engines.prom")
	f.Add(data)
	f.Add([]byte("# TYPE vllm:x counter\nvllm:x_total 1\n# EOF\n"))
	f.Add([]byte("<html>"))
	// Readings at two times, an untyped histogram, a duplicate, a NaN.
	f.Add([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3 1000\nvllm:num_requests_running{model_name=\"m\"} 5 2000\n"))
	f.Add([]byte("vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 5\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 8\nvllm:time_to_first_token_seconds_sum{model_name=\"m\"} NaN\n"))
	f.Add([]byte("# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.7\n"))
	// SGLang (registered by sglang_test.go): priority totals, is_streaming,
	// per-stage histograms, OpenMetrics from the gRPC sidecar, and the
	// gateway's sglang_ names with a worker label.
	f.Add([]byte(sglangText))
	f.Add([]byte(sglangOpenMetrics))
	f.Add([]byte("# TYPE sglang_num_queue_reqs gauge\nsglang_num_queue_reqs{model_name=\"m\",priority=\"\",tp_rank=\"0\",worker_addr=\"http://w:30000\"} 3\nsglang_num_queue_reqs{model_name=\"m\",priority=\"\",tp_rank=\"1\",worker_addr=\"http://w:30000\"} 3\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		ss, err := ParseSeries(in, "")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		// Whatever parsed must turn into evidence without panicking, and a
		// withheld family must not reach the window.
		w := Window(append(ss, ss[len(ss)-1]), "", "fuzz")
		for name := range w.Withheld {
			if len(w.Counters[name])+len(w.Gauges[name])+len(w.Histograms[name])+len(w.Infos[name]) > 0 {
				t.Fatalf("withheld %s still in the window", name)
			}
		}
		_ = Consistent(ss, nil)
		// Every registered engine's builder, and the checks after it.
		for _, e := range engine.Build(w, engine.Options{}) {
			evidence.Check(e)
		}
	})
}

func sameDist(a, b evidence.Dist) bool {
	eq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	return eq(a.Count, b.Count) && eq(a.Mean, b.Mean) && eq(a.P50, b.P50) && eq(a.P90, b.P90) &&
		eq(a.P95, b.P95) && eq(a.P99, b.P99) && eq(a.Max, b.Max)
}

// OpenMetrics and text give the same snapshot.
func TestOpenMetricsEqualsText(t *testing.T) {
	text := "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.\n" +
		"# TYPE vllm:num_preemptions_total counter\n" +
		"vllm:num_preemptions_total{model_name=\"m\",engine=\"0\"} 7.0\n" +
		"# TYPE vllm:e2e_request_latency_seconds histogram\n" +
		"vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",engine=\"0\",le=\"1.0\"} 3.0\n" +
		"vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",engine=\"0\",le=\"+Inf\"} 4.0\n" +
		"vllm:e2e_request_latency_seconds_count{model_name=\"m\",engine=\"0\"} 4.0\n" +
		"vllm:e2e_request_latency_seconds_sum{model_name=\"m\",engine=\"0\"} 2.5\n"
	om := "# HELP vllm:num_preemptions Cumulative number of preemption from the engine.\n" +
		"# TYPE vllm:num_preemptions counter\n" +
		"vllm:num_preemptions_total{model_name=\"m\",engine=\"0\"} 7.0 1753795326.5\n" +
		"vllm:num_preemptions_created{model_name=\"m\",engine=\"0\"} 1.7537953269356403e+09\n" +
		"# TYPE vllm:e2e_request_latency_seconds histogram\n# UNIT vllm:e2e_request_latency_seconds seconds\n" +
		"vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",engine=\"0\",le=\"1.0\"} 3.0 # {trace_id=\"a # {b}\"} 0.4\n" +
		"vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",engine=\"0\",le=\"+Inf\"} 4.0\n" +
		"vllm:e2e_request_latency_seconds_count{model_name=\"m\",engine=\"0\"} 4.0\n" +
		"vllm:e2e_request_latency_seconds_sum{model_name=\"m\",engine=\"0\"} 2.5\n" +
		"vllm:e2e_request_latency_seconds_created{model_name=\"m\",engine=\"0\"} 1.7e+09\n# EOF\n"
	a, b := mustParse(t, text), mustParse(t, om)
	ka, kb := slices.Collect(maps.Keys(a.Counters["vllm:num_preemptions_total"])), slices.Collect(maps.Keys(b.Counters["vllm:num_preemptions_total"]))
	if len(ka) != 1 || len(kb) != 1 || a.Counters["vllm:num_preemptions_total"][ka[0]].value != b.Counters["vllm:num_preemptions_total"][kb[0]].value {
		t.Fatalf("counters differ: %v vs %v", a.Counters, b.Counters)
	}
	ha := a.Histograms["vllm:e2e_request_latency_seconds"]
	hb := b.Histograms["vllm:e2e_request_latency_seconds"]
	for k, h := range ha {
		if hb[k].count != h.count || hb[k].sum != h.sum || len(hb[k].buckets) != len(h.buckets) {
			t.Fatalf("histograms differ: %+v vs %+v", h, hb[k])
		}
	}
	if want := time.UnixMilli(1753795326500); !b.Latest.Equal(want) {
		t.Fatalf("OpenMetrics timestamp in seconds read as %v, want %v", b.Latest, want)
	}
	if _, err := Parse([]byte(strings.TrimSuffix(om, "# EOF\n")+"vllm:x 1\n# EOF\n"), "application/openmetrics-text; version=1.0.0"); err != nil {
		t.Fatalf("content type should select OpenMetrics: %v", err)
	}
	if _, err := Parse([]byte(strings.TrimSuffix(om, "# EOF\n")), "application/openmetrics-text; version=1.0.0"); err == nil || !strings.Contains(err.Error(), "no # EOF") {
		t.Fatalf("cut-off OpenMetrics: %v", err)
	}
}
