package sim

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func shortScenario(t *testing.T, name string) *Scenario {
	t.Helper()
	sc, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	sc.Warmup, sc.Duration = time.Minute, 3*time.Minute
	return sc
}

func TestOfflineBenchJSON(t *testing.T) {
	var b bytes.Buffer
	if err := (Offline{Bench: &b}).Run(shortScenario(t, "healthy")); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Completed   int         `json:"completed"`
		Duration    float64     `json:"duration"`
		TTFTs       []float64   `json:"ttfts"`
		ITLs        [][]float64 `json:"itls"`
		InputLens   []int       `json:"input_lens"`
		OutputLens  []int       `json:"output_lens"`
		MeanTTFTms  float64     `json:"mean_ttft_ms"`
		P99ITLms    float64     `json:"p99_itl_ms"`
		Endpoint    string      `json:"endpoint_type"`
		RequestRate float64     `json:"request_rate"`
	}
	if err := json.Unmarshal(b.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Completed < 500 || len(d.TTFTs) != d.Completed || len(d.ITLs) != d.Completed || d.Endpoint != "openai-chat" {
		t.Fatalf("completed %d, %d ttfts, %d itls", d.Completed, len(d.TTFTs), len(d.ITLs))
	}
	var sum float64
	for i, x := range d.TTFTs {
		sum += x
		if len(d.ITLs[i]) != d.OutputLens[i]-1 {
			t.Fatalf("request %d: %d tokens, %d gaps", i, d.OutputLens[i], len(d.ITLs[i]))
		}
	}
	// Arrays in seconds, summaries in milliseconds, as vllm bench serve writes them.
	if mean := sum / float64(len(d.TTFTs)) * 1000; mean-d.MeanTTFTms > 1e-6 || d.MeanTTFTms-mean > 1e-6 {
		t.Fatalf("mean_ttft_ms %v, mean of ttfts %v ms", d.MeanTTFTms, mean)
	}
	if d.Duration < 180 || d.RequestRate != 4 {
		t.Fatalf("duration %v rate %v", d.Duration, d.RequestRate)
	}
}

// The stats lines parse with the regular expression vLLM's V1 format implies.
var statsLine = regexp.MustCompile(`^\(APIServer pid=\d+\) INFO \d\d-\d\d \d\d:\d\d:\d\d \[loggers\.py:\d+\] Engine 000: ` +
	`Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs, ` +
	`Waiting: (\d+) reqs, (?:Preemptions: (\d+), )?GPU KV cache usage: ([\d.]+)%, Prefix cache hit rate: ([\d.]+)%$`)

func TestOfflineStatsLog(t *testing.T) {
	var b bytes.Buffer
	if err := (Offline{Log: &b}).Run(shortScenario(t, "kv-capacity")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 18 {
		t.Fatalf("%d lines for 3 minutes at 10 s", len(lines))
	}
	preemptions := 0
	for _, l := range lines {
		m := statsLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line does not parse: %q", l)
		}
		if kv, _ := strconv.ParseFloat(m[6], 64); kv > 100 {
			t.Fatalf("KV usage %v%%", kv)
		}
		if m[5] != "" {
			preemptions++
		}
	}
	if preemptions == 0 {
		t.Fatal("kv-capacity logged no preemptions")
	}
}

func TestOfflineOpenMetrics(t *testing.T) {
	var b bytes.Buffer
	sc := shortScenario(t, "healthy")
	if err := (Offline{OpenMetrics: &b, Step: 15 * time.Second}).Run(sc); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasSuffix(out, "# EOF\n") {
		t.Fatal("no # EOF")
	}
	// Counters are named without _total on TYPE lines and with it on samples.
	if !strings.Contains(out, "# TYPE vllm:generation_tokens counter\n") || !strings.Contains(out, "vllm:generation_tokens_total{") {
		t.Fatal("counter naming is not OpenMetrics")
	}
	// 13 samples (minute 1 to 4 every 15 s) per series, timestamps rising.
	var last float64
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "vllm:num_requests_running{") {
			continue
		}
		f := strings.Fields(l)
		ts, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil || ts <= last {
			t.Fatalf("timestamp %q after %v", f[len(f)-1], last)
		}
		last = ts
		n++
	}
	if n != 13 {
		t.Fatalf("%d samples of vllm:num_requests_running", n)
	}
}
