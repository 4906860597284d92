package sim

import (
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// The ground truth of the built-in scenarios names what each is built to show.
func TestTruthLabelsBuiltinScenarios(t *testing.T) {
	for _, c := range []struct{ scenario, want string }{
		{"queue-bound", "queueing"},
		{"bursty", "queueing"},
		{"long-prompt", "prefill"},
		{"kv-capacity", "kv-capacity"},
		{"healthy", "none"},
		{"decode-bound", "decode"},
		{"cpu-overhead", "cpu-overhead"},
		{"prefill-interference", "prefill-interference"},
	} {
		sc, err := Load(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		g, err := WindowTruth(sc, 30)
		if err != nil {
			t.Fatal(err)
		}
		if l := g.Label(); l.Cause != c.want {
			t.Errorf("%s: ground truth %s (%s), want %s", c.scenario, l.Cause, l.Why, c.want)
		}
	}
	sc, _ := Load("decode-bound")
	g, _ := WindowTruth(sc, 30)
	if l := g.Label(); !l.Accepts("memory-bandwidth") || l.Accepts("queueing") {
		t.Errorf("decode-bound: a memory-bound decode should accept memory-bandwidth only beside decode: %+v", l)
	}
	sc, _ = Load("prefix-cache-miss")
	g, _ = WindowTruth(sc, 30)
	if l := g.Label(); !l.Accepts("prefix-cache") {
		t.Errorf("prefix-cache-miss: a defeated prefix should accept prefix-cache: %+v", l)
	}
}

func TestLabelRules(t *testing.T) {
	for _, c := range []struct {
		name string
		g    GroundTruth
		want string
		also []string
	}{
		{"nothing finished", GroundTruth{}, "none", nil},
		{"fast", GroundTruth{Finished: 10, Front: 0.01, Queue: 0.01, Prefill: 0.05, TTFT: 0.07, Decode: 1, E2E: 1.07, TPOTMedian: 0.01}, "none", nil},
		{"queue by the cap", GroundTruth{Finished: 10, Front: 0.01, Queue: 2, Prefill: 0.1, TTFT: 2.11, Decode: 2, E2E: 4.11, TPOTMedian: 0.01, WaitSeqs: 1.9, WaitStep: 0.1}, "queueing", nil},
		{"queue by KV", GroundTruth{Finished: 10, Front: 0.01, Queue: 2, Prefill: 0.1, TTFT: 2.11, Decode: 2, E2E: 4.11, TPOTMedian: 0.01, WaitKV: 1.5, WaitSeqs: 0.5}, "kv-capacity", nil},
		{"queue and preemptions", GroundTruth{Finished: 10, Front: 0.01, Queue: 2, Prefill: 0.1, TTFT: 2.11, Decode: 2, E2E: 4.11, TPOTMedian: 0.01, WaitSeqs: 2, PreemptionsPerRequest: 0.05}, "kv-capacity", []string{"queueing"}},
		{"front", GroundTruth{Finished: 10, Front: 0.08, Queue: 0.01, Prefill: 0.02, TTFT: 0.11, Decode: 1, E2E: 1.11, TPOTMedian: 0.01}, "cpu-overhead", nil},
		{"slow decode, memory-bound", GroundTruth{Finished: 10, Front: 0.01, Queue: 0.01, Prefill: 0.1, TTFT: 0.12, Decode: 30, E2E: 30.12, TPOTMedian: 0.12, DecodeMemory: 0.8}, "decode", []string{"memory-bandwidth"}},
		{"decode slow from stalls", GroundTruth{Finished: 10, Front: 0.01, Queue: 0.01, Prefill: 0.1, TTFT: 0.12, Decode: 30, E2E: 30.12, TPOTMedian: 0.15, TPOTSteady: 0.06, StallsPerRequest: 8, StallTime: 12, DecodeMemory: 0.8}, "prefill-interference", []string{"decode"}},
		{"decode over target", GroundTruth{Finished: 10, Front: 0.01, Queue: 0.01, Prefill: 0.1, TTFT: 0.12, Decode: 30, E2E: 30.12, TPOTMedian: 0.07, DecodeMemory: 0.8}, "none", []string{"decode", "memory-bandwidth"}},
		{"stalls", GroundTruth{Finished: 10, Front: 0.01, Queue: 0.01, Prefill: 0.05, TTFT: 0.07, Decode: 5, E2E: 5.07, TPOTMedian: 0.02, StallsPerRequest: 1, StallTime: 0.8}, "prefill-interference", nil},
		{"own long prefill", GroundTruth{Finished: 10, Front: 0.01, Queue: 0.05, Prefill: 0.9, PrefillOwn: 0.85, TTFT: 0.96, Decode: 2, E2E: 2.96, TPOTMedian: 0.02, StallsPerRequest: 0.5, StallTime: 0.3}, "prefill", nil},
		{"others' long prefills", GroundTruth{Finished: 10, Front: 0.01, Queue: 0.05, Prefill: 0.9, PrefillOwn: 0.2, TTFT: 0.96, Decode: 2, E2E: 2.96, TPOTMedian: 0.02, StallsPerRequest: 0.5, StallTime: 0.3}, "prefill-interference", []string{"prefill"}},
		{"close second", GroundTruth{Finished: 10, Front: 0.01, Queue: 0.45, Prefill: 0.54, PrefillOwn: 0.54, TTFT: 1, Decode: 1, E2E: 2, TPOTMedian: 0.02, WaitSeqs: 0.45}, "prefill", []string{"queueing"}},
	} {
		l := c.g.Label()
		if l.Cause != c.want || !reflect.DeepEqual(l.Also, c.also) {
			t.Errorf("%s: got %s also %v (%s), want %s also %v", c.name, l.Cause, l.Also, l.Why, c.want, c.also)
		}
	}
}

// The ground truth adds up, agrees with the metrics the engine exposes for
// the same window, and watching does not change the run.
func TestTruthConsistent(t *testing.T) {
	var scs []*Scenario
	for _, name := range []string{"queue-bound", "kv-capacity", "prefill-interference", "decode-bound"} {
		sc, _ := Load(name)
		scs = append(scs, sc)
	}
	for i := 0; i < 20; i++ {
		scs = append(scs, RandomScenario(rand.New(rand.NewSource(int64(i))), i))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for _, sc := range scs {
		e, err := New(sc, false)
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		plain, _ := New(sc, false)
		warm, end := sc.Warmup.Seconds(), (sc.Warmup + sc.Duration).Seconds()
		e.AdvanceTo(warm)
		plain.AdvanceTo(warm)
		// TTFT is observed at the first token, queue and e2e at the finish
		// like the truth: compare those.
		queue0, e2e0 := e.m.queue.sum, e.m.e2e.sum
		fin0 := e.m.finishedCount
		e.MarkTruth()
		e.AdvanceTo(end)
		plain.AdvanceTo(end)
		g := e.Truth()
		if e.Steps != plain.Steps || e.m.ttft.sum != plain.m.ttft.sum {
			t.Fatalf("%s: marking the truth changed the run", sc.Name)
		}
		if g.Finished != e.m.finishedCount-fin0 || g.Finished == 0 {
			t.Fatalf("%s: %d finished in the truth, %d in the metrics", sc.Name, g.Finished, e.m.finishedCount-fin0)
		}
		n := float64(g.Finished)
		if !near(g.Queue, (e.m.queue.sum-queue0)/n) || !near(g.E2E, (e.m.e2e.sum-e2e0)/n) {
			t.Errorf("%s: truth queue %v e2e %v, metrics %v %v", sc.Name, g.Queue, g.E2E, (e.m.queue.sum-queue0)/n, (e.m.e2e.sum-e2e0)/n)
		}
		if !near(g.TTFT, g.Front+g.Queue+g.Prefill) || !near(g.E2E, g.TTFT+g.Decode) {
			t.Errorf("%s: stages do not add up: %+v", sc.Name, g)
		}
		if !near(g.Queue, g.WaitSeqs+g.WaitTokens+g.WaitKV+g.WaitStep) {
			t.Errorf("%s: queue %v, held by seqs %v tokens %v KV %v step %v", sc.Name, g.Queue, g.WaitSeqs, g.WaitTokens, g.WaitKV, g.WaitStep)
		}
		if g.PrefillOwn <= 0 || g.PrefillOwn > g.Prefill*(1+1e-9) {
			t.Errorf("%s: own prefill %v of %v", sc.Name, g.PrefillOwn, g.Prefill)
		}
		if s := g.DecodeMemory + g.DecodeCompute + g.DecodeComm + g.DecodeOverhead; g.DecodeMixed > 0 && !near(s, 1) {
			t.Errorf("%s: decode step shares sum to %v", sc.Name, s)
		}
		if g.TPOTMedian <= 0 && g.Output > 2 {
			t.Errorf("%s: no median TPOT", sc.Name)
		}
	}
}

func TestLogHistogramMedian(t *testing.T) {
	var h logHistogram
	for _, x := range []float64{0.01, 0.02, 0.03, 0.04, 5} {
		h.observe(x)
	}
	if m := h.quantile(0.5); math.Abs(m-0.03) > 0.03*0.01 {
		t.Fatalf("median %v", m)
	}
}

// Random scenarios are valid, fit, spread over the space, and survive a
// round trip through YAML.
func TestRandomScenarios(t *testing.T) {
	models, gpus, shapes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	chunked, bursty := 0, 0
	for i := 0; i < 300; i++ {
		sc := RandomScenario(rand.New(rand.NewSource(int64(i))), i)
		if err := sc.Check(); err != nil {
			t.Fatal(err)
		}
		if _, err := New(sc, false); err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		models[sc.Model], gpus[sc.GPU], shapes[strings.Fields(sc.Description)[0]] = true, true, true
		if sc.Engine.ChunkedPrefill {
			chunked++
		}
		if sc.Workload.Arrival == "bursty" {
			bursty++
		}
		data, err := sc.YAML()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseScenario(sc.Name+".yaml", data)
		if err != nil {
			t.Fatalf("%s: %v\n%s", sc.Name, err, data)
		}
		if !reflect.DeepEqual(back, sc) {
			t.Fatalf("%s: round trip changed it:\n%s", sc.Name, data)
		}
	}
	if len(models) != len(Models) || len(gpus) != len(GPUs) || len(shapes) < 6 || chunked < 150 || chunked > 270 || bursty < 50 {
		t.Fatalf("narrow draw: models %v gpus %v shapes %v chunked %d bursty %d", models, gpus, shapes, chunked, bursty)
	}
}
