package logs

import (
	"math"
	"os"
	"strings"
	"testing"
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
