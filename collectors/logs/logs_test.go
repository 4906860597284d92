package logs

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func read(t *testing.T, file string) *Result {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Read(f, "m", 2026, file)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestV1Lines(t *testing.T) {
	r := read(t, "v1-kv-full.log")
	if r.StatsLines != 60 || r.Skipped != 0 || r.Lines != 100 {
		t.Fatalf("stats %d skipped %d lines %d", r.StatsLines, r.Skipped, r.Lines)
	}
	w := r.Window
	kv := w.Gauges["vllm:kv_cache_usage_perc"][0].Points
	if len(kv) != 60 || kv[0] != 0.99 {
		t.Fatalf("kv points %d first %v", len(kv), kv[0])
	}
	if w.End.Sub(w.Start).Seconds() != 600 {
		t.Fatalf("window %v", w.End.Sub(w.Start))
	}
	if len(w.Counters["vllm:num_preemptions_total"]) != 1 {
		t.Fatal("preemptions were logged, so they are known")
	}
	if g := w.Counters["vllm:prompt_tokens_total"][0].Increase; g < 60*10*1500 || g > 60*10*3000 {
		t.Fatalf("prompt tokens %v", g)
	}
}

func TestV0LinesAndPrefixLine(t *testing.T) {
	r := read(t, "v0-kv-full.log")
	w := r.Window
	if r.StatsLines != 60 || w.Gauges["vllm:num_requests_waiting"][0].Points[0] != 36 {
		t.Fatalf("stats %d, pending read as %v", r.StatsLines, w.Gauges["vllm:num_requests_waiting"][0].Points[0])
	}
	if hit := w.Gauges["vllm:gpu_prefix_cache_hit_rate"][0].Points[0]; math.Abs(hit-0.0581) > 1e-9 {
		t.Fatalf("V0 prefix line read as %v", hit)
	}
	if _, ok := w.Counters["vllm:num_preemptions_total"]; ok {
		t.Fatal("V0 logs never print preemptions: the count must stay unknown, not zero")
	}
}

func TestAggregatedEnginesAndBrokenLines(t *testing.T) {
	data, _ := os.ReadFile("testdata/v1-kv-full-short.log")
	broken := string(data) + "(APIServer pid=1) INFO 11-30 14:00:40 [loggers.py:123] Engine 000: Avg prompt throughput: x tokens/s\n"
	r, err := Read(strings.NewReader(broken), "m", 2026, "f")
	if err != nil {
		t.Fatal(err)
	}
	if r.StatsLines != 3 || r.Skipped != 1 {
		t.Fatalf("stats %d skipped %d", r.StatsLines, r.Skipped)
	}
	if r.Window.Gauges["vllm:num_requests_running"][0].Labels["engine"] != "all" {
		t.Fatal("aggregated lines are engine all")
	}
	notes := strings.Join(r.Window.Notes, " | ")
	if !strings.Contains(notes, "1 stats lines could not be read") || !strings.Contains(notes, "only 3 stats lines") {
		t.Fatalf("notes %q", notes)
	}
}

func TestNoStatsLines(t *testing.T) {
	_, err := Read(strings.NewReader("INFO 11-30 14:00:00 [api_server.py:1] Started server\n"), "m", 2026, "x.log")
	if err == nil || !strings.Contains(err.Error(), "no vLLM stats lines") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v", err)
	}
}

func FuzzRead(f *testing.F) {
	data, _ := os.ReadFile("testdata/v1-kv-full-short.log")
	f.Add(data)
	v0, _ := os.ReadFile("testdata/v0-kv-full.log")
	f.Add(v0[:600])
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Read(strings.NewReader(string(in)), "m", 2026, "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if r.StatsLines+r.Skipped > r.Lines || r.Window.Points < 1 {
			t.Fatalf("counts %+v", r)
		}
	})
}

func statsLine(t time.Time, eng string, prompt float64, running int) string {
	return fmt.Sprintf("(APIServer pid=1) INFO %s [loggers.py:123] Engine %s: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: 10.0 tokens/s, Running: %d reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%%, Prefix cache hit rate: 0.0%%\n",
		t.Format("01-02 15:04:05"), eng, prompt, running)
}

// Idle stats lines are logged at DEBUG: a log whose lines pause for seven
// minutes draws its points at their times, names the pause, and does not
// stretch the line after it over the pause.
func TestLogWithAGap(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	var b strings.Builder
	var secs []int
	for s := 10; s <= 900; s += 10 {
		if s > 120 && s < 540 {
			continue
		}
		secs = append(secs, s)
		b.WriteString(statsLine(t0.Add(time.Duration(s)*time.Second), "000", 100, 5))
	}
	r, err := Read(strings.NewReader(b.String()), "m", 2026, "gap.log")
	if err != nil {
		t.Fatal(err)
	}
	w := r.Window
	if w.Points != len(secs) || !w.Start.Equal(t0) || w.Seconds() != 900 {
		t.Fatalf("points %d, start %v, seconds %v", w.Points, w.Start, w.Seconds())
	}
	got := w.Timeline(w.Gauges["vllm:num_requests_running"][0].Points)
	if len(got) != len(secs) {
		t.Fatalf("timeline %v", got)
	}
	for i, p := range got {
		if p[0] != float64(secs[i]) {
			t.Fatalf("line %d drawn at %v s, logged at %d s", i, p[0], secs[i])
		}
	}
	if notes := strings.Join(w.Notes, "\n"); !strings.Contains(notes, "no samples from 02:00 to 09:00 (7m00s)") {
		t.Errorf("the pause is not named: %q", notes)
	}
	// Each line's 100 tokens/s covers its own 10 s, the pause's idle lines
	// none.
	if got := w.Counters["vllm:prompt_tokens_total"][0].Increase; got != 100*10*float64(len(secs)) {
		t.Errorf("prompt tokens %v, want %v", got, 100*10*len(secs))
	}
}

// Engines log one after another in each round: a round straddling a second
// is one point, so the engines' running add up at every point.
func TestEnginesOfARoundShareAPoint(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range 12 {
		at := t0.Add(time.Duration(10*i+9) * time.Second)
		b.WriteString(statsLine(at, "000", 100, 5))
		if i%3 == 0 {
			at = at.Add(time.Second)
		}
		b.WriteString(statsLine(at, "001", 100, 7))
	}
	r, err := Read(strings.NewReader(b.String()), "m", 2026, "dp.log")
	if err != nil {
		t.Fatal(err)
	}
	w := r.Window
	if w.Points != 12 || len(w.Notes) != 0 {
		t.Fatalf("points %d, notes %q", w.Points, w.Notes)
	}
	for _, g := range w.Gauges["vllm:num_requests_running"] {
		for i, p := range g.Points {
			if math.IsNaN(p) {
				t.Fatalf("engine %s has no point in round %d: %v", g.Labels["engine"], i, g.Points)
			}
		}
	}
}
