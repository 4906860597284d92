package scrape

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
)

// families is a small vLLM exposition at sec seconds into a window, each
// sample stamped with its time, as families of lines (TYPE first): running
// is high (100) from 10:00 on.
func families(t0 time.Time, sec int) [][]string {
	ts := t0.Add(time.Duration(sec) * time.Second).UnixMilli()
	running := 10
	if sec >= 600 {
		running = 100
	}
	l := `model_name="m",engine="0"`
	h := "vllm:time_to_first_token_seconds"
	return [][]string{
		{"# TYPE vllm:num_requests_running gauge", fmt.Sprintf("vllm:num_requests_running{%s} %d %d", l, running, ts)},
		{"# TYPE vllm:num_requests_waiting gauge", fmt.Sprintf("vllm:num_requests_waiting{%s} 0 %d", l, ts)},
		{"# TYPE vllm:prompt_tokens_total counter", fmt.Sprintf("vllm:prompt_tokens_total{%s} %d %d", l, 100*sec, ts)},
		{"# TYPE " + h + " histogram",
			fmt.Sprintf("%s_bucket{%s,le=\"1\"} %d %d", h, l, sec, ts),
			fmt.Sprintf("%s_bucket{%s,le=\"+Inf\"} %d %d", h, l, sec, ts),
			fmt.Sprintf("%s_sum{%s} %d %d", h, l, sec/2, ts),
			fmt.Sprintf("%s_count{%s} %d %d", h, l, sec, ts)},
	}
}

func exposition(t0 time.Time, sec int) string {
	var b strings.Builder
	for _, f := range families(t0, sec) {
		b.WriteString(strings.Join(f, "\n") + "\n")
	}
	return b.String()
}

// readings is one exposition holding every reading, family by family.
func readings(t0 time.Time, secs []int) string {
	var b strings.Builder
	for f := range families(t0, 0) {
		for i, s := range secs {
			lines := families(t0, s)[f]
			if i > 0 {
				lines = lines[1:]
			}
			b.WriteString(strings.Join(lines, "\n") + "\n")
		}
	}
	return b.String()
}

// gapped are the seconds of readings every 30 s over 15 minutes, without
// those from 2:00 to 10:00 (exclusive).
func gapped() []int {
	var out []int
	for s := 0; s <= 900; s += 30 {
		if s > 120 && s < 600 {
			continue
		}
		out = append(out, s)
	}
	return out
}

func TestTimestampedSnapshotsWithAGap(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	secs := gapped()
	dir := t.TempDir()
	var paths []string
	for i, s := range secs {
		p := fmt.Sprintf("%s/%02d.prom", dir, i)
		if err := os.WriteFile(p, []byte(exposition(t0, s)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if err := os.WriteFile(dir+"/all.prom", []byte(readings(t0, secs)), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string][]string{"files": paths, "one file of readings": {dir + "/all.prom"}} {
		t.Run(name, func(t *testing.T) {
			w, err := Files(files, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if w.Points != len(secs) || w.Seconds() != 900 {
				t.Fatalf("points %d, seconds %v", w.Points, w.Seconds())
			}
			notes := strings.Join(w.Notes, "\n")
			if !strings.Contains(notes, "no samples from 02:00 to 10:00 (8m00s)") || !strings.Contains(notes, "charts break") {
				t.Errorf("the gap is not named: %q", notes)
			}
			e := engine.Build(w, engine.Options{})[0]
			running := e.Curves["running"]
			if len(running) != len(secs) {
				t.Fatalf("running curve %v", running)
			}
			for i, p := range running {
				if p[0] != float64(secs[i]) {
					t.Fatalf("point %d drawn at %v s, taken at %d s: %v", i, p[0], secs[i], running)
				}
				if want := map[bool]float64{true: 100, false: 10}[secs[i] >= 600]; p[1] != want {
					t.Fatalf("point at %v s is %v, want %v", p[0], p[1], want)
				}
			}
			// The step across the gap ends at 10:00: its TTFT is drawn there,
			// not 32 s after 2:00.
			steps := e.Curves["ttft_p50_steps"]
			found := false
			for _, p := range steps {
				if p[0] > 120 && p[0] < 600 {
					t.Errorf("a step drawn inside the gap: %v", steps)
				}
				found = found || p[0] == 600
			}
			if !found {
				t.Errorf("the step across the gap is not drawn at its end (600 s): %v", steps)
			}
		})
	}
}

// Two snapshots given an interval have only their spacing: no times, even
// spacing, exact.
func TestFilesWithIntervalAreEvenlySpaced(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	dir := t.TempDir()
	// Unstamped: the timestamps would forbid an interval.
	strip := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) == 3 && !strings.HasPrefix(l, "#") {
				l = f[0] + " " + f[1]
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
	if err := os.WriteFile(dir+"/a.prom", []byte(strip(exposition(t0, 0))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/b.prom", []byte(strip(exposition(t0, 900))), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Files([]string{dir + "/a.prom", dir + "/b.prom"}, 15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Times != nil {
		t.Fatalf("times %v for files given only their spacing", w.Times)
	}
	if got := w.Timeline([]float64{1, 2}); len(got) != 2 || got[1][0] != 900 {
		t.Fatalf("timeline %v", got)
	}
}

// A server failing some scrapes keeps its points on the ticks: NaN where it
// failed, so a sum over servers is never partial and nothing moves earlier.
func TestFailedScrapeKeepsTargetsAligned(t *testing.T) {
	end, err := os.ReadFile("../../examples/queueing/end.prom")
	if err != nil {
		t.Fatal(err)
	}
	serve := func(fail func(n int32) bool) *httptest.Server {
		var n atomic.Int32
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fail(n.Add(1)) {
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write(end)
		}))
	}
	a := serve(func(int32) bool { return false })
	defer a.Close()
	b := serve(func(n int32) bool { return n == 3 || n == 4 })
	defer b.Close()
	s := &Scraper{URLs: []string{MetricsURL(a.URL), MetricsURL(b.URL)}, Interval: 10 * time.Millisecond, Scrapes: 8}
	w, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Points != 9 {
		t.Fatalf("points %d, want 9 ticks", w.Points)
	}
	for _, g := range w.Gauges["vllm:num_requests_running"] {
		if len(g.Points) != 9 {
			t.Fatalf("%v: %d points, want one per tick", g.Labels, len(g.Points))
		}
		for i, p := range g.Points {
			failed := g.Labels["instance"] == hostPort(MetricsURL(b.URL)) && (i == 2 || i == 3)
			if failed != math.IsNaN(p) || !failed && p != 256 {
				t.Errorf("%s tick %d: %v", g.Labels["instance"], i, p)
			}
		}
	}
	e := engine.Build(w, engine.Options{})[0]
	run := e.Values.Service.Running
	if run.Min != 512 || run.Mean != 512 || run.Max != 512 {
		t.Errorf("running summarised as %+v, want 512 throughout", run)
	}
	curve := e.Curves["running"]
	if len(curve) != 7 {
		t.Errorf("running curve %v: want the 7 ticks both servers answered", curve)
	}
	for _, p := range curve {
		if p[1] != 512 {
			t.Errorf("running curve %v: a partial sum drawn as a drop", curve)
			break
		}
	}
	if notes := strings.Join(w.Notes, "\n"); !strings.Contains(notes, "2 of 9 scrapes failed") {
		t.Errorf("notes %q", notes)
	}
}

// A server that stamps its samples (a simulator, a federating exporter)
// places each reading at its stamp, not at the scrape's clock: the points
// are drawn on the same clock as the window's start and end.
func TestStampedScrapeIsDrawnAtItsStamps(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1) - 1
		if i == 2 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(exposition(t0, 60*int(i))))
	}))
	defer srv.Close()
	s := &Scraper{URLs: []string{MetricsURL(srv.URL)}, Interval: 10 * time.Millisecond, Scrapes: 5}
	w, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Points != 6 || w.Seconds() != 300 {
		t.Fatalf("points %d, seconds %v", w.Points, w.Seconds())
	}
	e := engine.Build(w, engine.Options{})[0]
	running := e.Curves["running"]
	want := []float64{0, 60, 180, 240, 300} // the third scrape failed
	if len(running) != len(want) {
		t.Fatalf("running curve %v", running)
	}
	for i, p := range running {
		if p[0] != want[i] {
			t.Fatalf("running curve %v, want points at %v s", running, want)
		}
	}
}
