package chart

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

type chart interface {
	SVG() string
	Alt() string
}

// examples are realistic charts of a report, one file each in testdata.
func examples() map[string]chart {
	rng := rand.New(rand.NewPCG(1, 2))
	jitter := func(x, by float64) float64 { return x * (1 + by*(rng.Float64()-0.5)) }

	// TTFT over a 15-minute window scraped every 30 s; one p99 sample is
	// missing, which breaks its line.
	var p50, p99, running, waiting, kv [][2]float64
	for i := range 30 {
		t := float64(i) * 30
		load := float64(i) / 29
		p50 = append(p50, [2]float64{t, jitter(0.18+0.17*load, 0.2)})
		y := jitter(1.2+2.2*load*load, 0.15)
		if i == 12 {
			y = math.NaN()
		}
		p99 = append(p99, [2]float64{t, y})
		running = append(running, [2]float64{t, math.Round(jitter(40+24*load, 0.1))})
		waiting = append(waiting, [2]float64{t, math.Max(0, math.Round(jitter(60*load*load-8, 0.3)))})
		kv = append(kv, [2]float64{t, math.Min(1, jitter(0.35+0.62*load, 0.05))})
	}
	var prompts [][2]float64
	for range 60 {
		n := 200 + 7800*rng.Float64()
		prompts = append(prompts, [2]float64{n, jitter(0.12+0.035*n/1000, 0.3)})
	}
	// A probe's load ladder: p99s by concurrency against the SLO, the
	// knee and the capacity marked; the last step completed nothing.
	loads := []float64{1, 2, 4, 8, 16, 32}
	var ttft99, itl99 [][2]float64
	for i, c := range loads {
		ttft99 = append(ttft99, [2]float64{c, []float64{0.21, 0.24, 0.31, 0.62, 2.9, nan}[i]})
		itl99 = append(itl99, [2]float64{c, []float64{0.021, 0.023, 0.027, 0.041, 0.09, nan}[i]})
	}
	return map[string]chart{
		"line_load": Line{ID: "load", Title: "Latency against load",
			X: Axis{Label: "concurrency", Unit: Count}, Y: Axis{Label: "p99", Unit: Seconds},
			Series: []Series{{Name: "TTFT p99", Points: ttft99}, {Name: "ITL p99", Points: itl99}},
			Refs:   []Ref{{Y: 2, Label: "SLO TTFT p99 2s"}, {Y: 0.1, Label: "SLO ITL p99 100ms"}, {Y: nan, Label: "lost"}},
			Marks:  []Mark{{X: 4, Label: "knee"}, {X: 8, Label: "capacity"}, {X: inf, Label: "lost"}}},
		"line_ttft": Line{ID: "ttft", Title: "Time to first token",
			X: Axis{Unit: Elapsed}, Y: Axis{Label: "TTFT", Unit: Seconds},
			Series: []Series{{Name: "p50", Points: p50}, {Name: "p99", Points: p99}}},
		"line_queue": Line{ID: "queue", Title: "Requests running and waiting",
			X: Axis{Unit: Elapsed}, Y: Axis{Label: "requests", Unit: Count},
			Series: []Series{{Name: "running", Points: running}, {Name: "waiting", Points: waiting}}},
		"line_kv": Line{ID: "kv", Title: "KV cache usage",
			X: Axis{Unit: Elapsed}, Y: Axis{Label: "KV cache used", Unit: Ratio},
			Series: []Series{{Name: "gpu_cache_usage", Points: kv}}},
		"scatter_prompt": Scatter{ID: "prompt", Title: "TTFT by prompt length",
			X: Axis{Label: "prompt tokens", Unit: Tokens}, Y: Axis{Label: "TTFT", Unit: Seconds},
			Points: prompts,
			Fit:    &Fit{Intercept: 0.12, Slope: 0.035 / 1000, Label: "TTFT ≈ 120ms + 35ms per 1k tokens"}},
		"bars_replicas": Bars{ID: "replicas", Title: "TTFT p99 by replica", Unit: Seconds,
			Bars: []Bar{{Label: "vllm-0 (10.0.3.17:8000)", Value: 0.84}, {Label: "vllm-1", Value: 0.91},
				{Label: "vllm-2", Value: 3.42, Highlight: true}, {Label: "vllm-3", Value: 0.78}}},
		"stacked_latency": Stacked{ID: "latency", Title: "Where a request's time goes", Unit: Seconds,
			Segments: []Segment{{"queue", 0.42}, {"prefill", 0.31}, {"front", 0.03}, {"decode", 1.52}},
			Total:    2.4},
	}
}

func TestGolden(t *testing.T) {
	for name, c := range examples() {
		t.Run(name, func(t *testing.T) {
			got := c.SVG()
			checkSVG(t, got)
			path := filepath.Join("testdata", name+".svg")
			if *testkit.Update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./report/chart -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the output; if the change is intended, run go test ./report/chart -update and look at the file", path)
			}
		})
	}
}
