package requests

import (
	"math"
	"math/rand"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/evidence"
)

func bench(t *testing.T, file string) (*evidence.Evidence, []string) {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	a, notes, err := ReadBench(f, file)
	if err != nil {
		t.Fatal(err)
	}
	e := evidence.New(evidence.Target{Model: "m"})
	a.Fill(e, file)
	return e, notes
}

func TestDetailedBench(t *testing.T) {
	e, notes := bench(t, "bench-detailed.json")
	v := e.Values
	if len(notes) != 0 || v.Service.ClientTTFT.Count != 240 || v.Service.StreamingShare != 1 || v.Cond.OpenLoop != 1 {
		t.Fatalf("notes %v ttft %+v streaming %v open %v", notes, v.Service.ClientTTFT, v.Service.StreamingShare, v.Cond.OpenLoop)
	}
	// Arrays are in seconds: a chat TTFT of tens of ms, not tens of seconds.
	if v.Service.ClientTTFT.P50 > 1 || v.Service.ClientITL.P50 > 0.1 {
		t.Fatalf("units: ttft p50 %v itl p50 %v", v.Service.ClientTTFT.P50, v.Service.ClientITL.P50)
	}
	if !evidence.Present(v.Cond.PromptTTFTSlope) || v.Cond.PromptTTFTSlope <= 0 || v.Cond.PromptLenCV < 0.2 {
		t.Fatalf("fit slope %v cv %v", v.Cond.PromptTTFTSlope, v.Cond.PromptLenCV)
	}
	if len(e.Curves["prompt_ttft"]) < 10 {
		t.Fatalf("curve %v", e.Curves["prompt_ttft"])
	}
}

func TestNonStreamingFixedClosedAndSummaryVintages(t *testing.T) {
	e, _ := bench(t, "bench-nonstreaming.json")
	if e.Values.Service.StreamingShare != 0 {
		t.Fatalf("non-streaming share %v", e.Values.Service.StreamingShare)
	}
	e, _ = bench(t, "bench-fixed-closed.json")
	if e.Values.Cond.PromptLenCV != 0 || e.Values.Cond.OpenLoop != 0 || e.Values.Cond.MaxConcurrency != 64 || evidence.Present(e.Values.Cond.PromptTTFTSlope) {
		t.Fatalf("cv %v open %v conc %v slope %v", e.Values.Cond.PromptLenCV, e.Values.Cond.OpenLoop, e.Values.Cond.MaxConcurrency, e.Values.Cond.PromptTTFTSlope)
	}
	e, notes := bench(t, "bench-old-summary.json")
	if !strings.Contains(strings.Join(notes, " "), "summary statistics only") {
		t.Fatalf("notes %v", notes)
	}
	if d := e.Values.Service.ClientTTFT; math.Abs(d.P50-2.8502) > 1e-9 || math.Abs(d.P99-3.6009) > 1e-9 || d.Count != 1000 || evidence.Present(d.P90) {
		t.Fatalf("summary ttft in seconds from ms: %+v", d)
	}
	if e.Values.Service.StreamingShare != 0 || e.Values.Cond.OpenLoop != 0 {
		t.Fatalf("zero TPOT and ITL on multi-token answers means no streaming: %v", e.Values.Service.StreamingShare)
	}
	e, notes = bench(t, "bench-appended.jsonl")
	if !strings.Contains(strings.Join(notes, " "), "2 appended runs") || e.Values.Cond.OpenLoop != 1 {
		t.Fatalf("appended: notes %v open %v", notes, e.Values.Cond.OpenLoop)
	}
}

func TestBadBench(t *testing.T) {
	for _, in := range []string{"", "{\"completed\": 1", "[1,2,3]", "{\"hello\": 1}", "<html>"} {
		if _, _, err := ReadBench(strings.NewReader(in), "x.json"); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v", in, err)
		}
	}
}

func TestRequestsJSONLAndCSVAgree(t *testing.T) {
	read := func(file string) (*evidence.Evidence, []string) {
		f, _ := os.Open("testdata/" + file)
		defer func() { _ = f.Close() }() // read only
		a, notes, err := ReadRequests(f, file)
		if err != nil {
			t.Fatal(err)
		}
		e := evidence.New(evidence.Target{Model: "m"})
		a.Fill(e, file)
		return e, notes
	}
	j, jn := read("requests.jsonl")
	c, cn := read("requests.csv")
	if len(jn) != 1 || !strings.Contains(jn[0], "1 of 301 rows skipped: 1 unreadable (first line 301:") || len(cn) != 0 {
		t.Fatalf("notes %v / %v", jn, cn)
	}
	for _, p := range []string{"service.client_ttft.p99", "service.client_failed_share", "service.network_share", "cond.prompt_ttft_slope", "cond.output_max_ratio", "service.warmup_ratio"} {
		f, _ := evidence.Lookup(p)
		a, b := j.Values.Get(f), c.Values.Get(f)
		if !evidence.Present(a) || math.Abs(a-b) > 1e-9 {
			t.Errorf("%s: jsonl %v csv %v", p, a, b)
		}
	}
	v := j.Values
	// TTFT = 30 ms + prompt/25000 s: 40 ms per 1k tokens, a 30 ms intercept plus noise.
	if math.Abs(v.Cond.PromptTTFTSlope-0.04) > 0.002 || math.Abs(v.Cond.PromptTTFTIntercept-0.04) > 0.01 || v.Cond.PromptTTFTR2 < 0.9 {
		t.Fatalf("fit %v + %v per 1k, R² %v", v.Cond.PromptTTFTIntercept, v.Cond.PromptTTFTSlope, v.Cond.PromptTTFTR2)
	}
	if math.Abs(v.Service.ClientFailedShare-4.0/300) > 1e-9 || v.Service.NetworkShare <= 0 {
		t.Fatalf("failed %v network %v", v.Service.ClientFailedShare, v.Service.NetworkShare)
	}
}

// Past ExactLimit values the quantiles come from the sketch, within its
// relative accuracy of the exact answer.
func TestSketchAccuracy(t *testing.T) {
	var d dist
	var exact []float64
	for i := 0; i < ExactLimit+50_000; i++ {
		x := math.Exp(float64(i%1000)/200) / 100
		d.add(x)
		exact = append(exact, x)
	}
	if d.Exact() {
		t.Fatal("should have switched to the sketch")
	}
	got := d.Dist()
	sortFloats(exact)
	for _, c := range []struct{ q, v float64 }{{0.5, got.P50}, {0.99, got.P99}} {
		want := quantile(exact, c.q)
		if math.Abs(c.v-want)/want > 2*SketchAccuracy {
			t.Errorf("q%v: sketch %v, exact %v", c.q, c.v, want)
		}
	}
	if got.Count != float64(len(exact)) {
		t.Fatalf("count %v", got.Count)
	}
}

func FuzzReadRequests(f *testing.F) {
	data, _ := os.ReadFile("testdata/requests.jsonl")
	f.Add(data[:2000])
	csvData, _ := os.ReadFile("testdata/requests.csv")
	f.Add(csvData[:1500])
	for _, in := range badInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// The parallel reader, in chunks of a few lines, reads as the
		// sequential one did.
		if err := sameRequests(in, 64, nil); err != nil {
			t.Fatal(err)
		}
		a, _, err := ReadRequests(strings.NewReader(string(in)), "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		a.Fill(evidence.New(evidence.Target{Model: "m"}), "fuzz")
	})
}

func FuzzReadBench(f *testing.F) {
	data, _ := os.ReadFile("testdata/bench-old-summary.json")
	f.Add(data)
	for _, in := range badInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, _, err := ReadBench(strings.NewReader(string(in)), "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		a.Fill(evidence.New(evidence.Target{Model: "m"}), "fuzz")
	})
}

// schemaIndex's switch names every field of schema.
func TestSchemaIndex(t *testing.T) {
	for i, f := range schema {
		if k, ms := schemaIndex([]byte(f.key)); k != i || ms {
			t.Errorf("%s: %d %v", f.key, k, ms)
		}
		if f.msKey != "" {
			if k, ms := schemaIndex([]byte(f.msKey)); k != i || !ms {
				t.Errorf("%s: %d %v", f.msKey, k, ms)
			}
		}
	}
}

// median by selection is the sorted quantile, on random, tied, tiny and
// NaN-holding inputs.
func TestMedianIsSortedQuantile(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for i := range 3000 {
		n := 1 + r.Intn(200)
		s := make([]float64, n)
		for j := range s {
			switch i % 4 {
			case 0:
				s[j] = r.NormFloat64()
			case 1:
				s[j] = float64(r.Intn(3)) // ties
			case 2:
				s[j] = float64(j) // sorted already
			default:
				s[j] = []float64{r.Float64(), math.Inf(1), math.Inf(-1), math.NaN(), 0, math.Copysign(0, -1)}[r.Intn(6)]
			}
		}
		want := append([]float64(nil), s...)
		sort.Float64s(want)
		w := quantile(want, 0.5)
		got := median(s)
		if got != w && !(math.IsNaN(got) && math.IsNaN(w)) { // (±0 tie in either order)
			t.Fatalf("case %d: median %v, sorted quantile %v (%v)", i, got, w, want)
		}
	}
}

// Whether a client streamed is read from the data, not from how much of
// end-to-end TTFT is: on a queue-bound server that streams, queue wait makes
// TTFT 90% of it.
func TestStreamingFromTheData(t *testing.T) {
	gaps := make([]float64, 99)
	for i := range gaps {
		gaps[i] = 0.01
	}
	cases := []struct {
		name string
		r    Record
		want float64
	}{
		{"per-token gaps behind a long queue", Record{TTFT: 9, E2E: 10, Output: 100, ITLs: gaps}, 1},
		{"no gaps, a second between first and last token", Record{TTFT: 9, E2E: 10, Output: 100}, 1},
		{"first token with the last", Record{TTFT: 10, E2E: 10, Output: 100}, 0},
		{"marked non-streaming", Record{TTFT: 2, E2E: 10, Output: 100, Streaming: new(bool)}, 0},
	}
	for _, c := range cases {
		a := NewAccumulator()
		for range 10 {
			a.Add(c.r)
		}
		e := evidence.New(evidence.Target{})
		a.Fill(e, "t")
		if got := e.Values.Service.StreamingShare; got != c.want {
			t.Errorf("%s: streaming share %v, want %v", c.name, got, c.want)
		}
	}
}
