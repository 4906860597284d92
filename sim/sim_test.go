package sim

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// randomScenario draws engine and workload parameters across their ranges.
func randomScenario(r *rand.Rand, i int) *Scenario {
	gpus := []string{"A100-80GB", "H100-SXM", "H200", "L40S"}
	models := []string{"llama-8b", "qwen-1.5b", "moe-30b-a3b"}
	sc := &Scenario{
		Name: fmt.Sprintf("random-%d", i), Model: models[r.Intn(len(models))], GPU: gpus[r.Intn(len(gpus))],
		TP: 1 + r.Intn(2), Seed: r.Int63(), Warmup: 10 * time.Second, Duration: 3 * time.Minute,
		Engine: EngineConfig{
			MaxNumSeqs: 4 + r.Intn(256), MaxNumBatchedTokens: 512 + r.Intn(8192),
			ChunkedPrefill: r.Intn(2) == 0, PrefixCaching: r.Intn(2) == 0,
			BlockSize: []int{8, 16, 32}[r.Intn(3)], GPUMemoryUtilization: 0.85 + 0.1*r.Float64(),
			StepOverhead: time.Duration(r.Intn(5000)) * time.Microsecond, Front: time.Duration(r.Intn(50)) * time.Millisecond,
		},
		Workload: Workload{
			Rate: 0.5 + 20*r.Float64(), Arrival: []string{"poisson", "bursty"}[r.Intn(2)], BurstShape: 0.05 + r.Float64(),
			Prompt: Length{Dist: "lognormal", Mean: 50 + 8000*r.Float64(), Sigma: r.Float64(), Max: 20000},
			Output: Length{Dist: "lognormal", Mean: 10 + 1000*r.Float64(), Sigma: r.Float64(), Max: 4000},
			Prefix: Prefix{Groups: r.Intn(6), Tokens: r.Intn(2000)}, UniquePrefix: r.Intn(4) == 0,
		},
	}
	if r.Intn(3) == 0 {
		sc.Workload.Steps = []RateStep{{At: time.Minute, Rate: 0.5 + 30*r.Float64()}}
	}
	return sc
}

// The simulator's invariants under randomized parameters.
func TestInvariantsUnderRandomScenarios(t *testing.T) {
	n := 8
	if testkit.Heavy() {
		n = 40
	}
	r := rand.New(rand.NewSource(42))
	for i := 0; i < n; i++ {
		sc := randomScenario(r, i)
		t.Run(sc.Name, func(t *testing.T) {
			e, err := New(sc, true)
			if err != nil {
				if strings.Contains(err.Error(), "does not fit") {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			end := (sc.Warmup + sc.Duration).Seconds()
			for at := 5.0; at <= end; at += 5 {
				e.AdvanceTo(at)
				if err := e.CheckBlocks(); err != nil {
					t.Fatalf("at %.0fs: %v", at, err)
				}
			}
			if e.MinDecodeSlack < 0 {
				t.Fatalf("a decode step was faster than weight bytes ÷ bandwidth (slack %v)", e.MinDecodeSlack)
			}
			arrived, inFlight, finished := e.Counts()
			if arrived != inFlight+finished || finished != len(e.Records) {
				t.Fatalf("arrived %d ≠ in flight %d + finished %d (records %d)", arrived, inFlight, finished, len(e.Records))
			}
			seen := map[int]bool{}
			for _, rec := range e.Records {
				if seen[rec.ID] {
					t.Fatalf("request %d finished twice", rec.ID)
				}
				seen[rec.ID] = true
				if d := rec.TTFT - (rec.Front + rec.Queue + rec.Prefill); math.Abs(d) > 1e-9 {
					t.Fatalf("request %d: TTFT %v ≠ front %v + queue %v + prefill %v", rec.ID, rec.TTFT, rec.Front, rec.Queue, rec.Prefill)
				}
				if rec.Queue < 0 || rec.Prefill <= 0 || rec.Decode < 0 || rec.E2E < rec.TTFT {
					t.Fatalf("request %d has impossible times: %+v", rec.ID, rec)
				}
				if rec.Output < 1 || len(rec.ITLs) != rec.Output-1 {
					t.Fatalf("request %d: %d tokens but %d gaps", rec.ID, rec.Output, len(rec.ITLs))
				}
			}
			// Histograms count every finished request exactly once.
			if n := e.m.e2e.n; int(n) != finished || int(e.m.queue.n) != finished {
				t.Fatalf("e2e histogram holds %d, finished %d", n, finished)
			}
		})
	}
}

func TestSameSeedSameRun(t *testing.T) {
	sc, err := Load("queue-bound")
	if err != nil {
		t.Fatal(err)
	}
	run := func() (int, float64) {
		e, _ := New(sc, false)
		e.AdvanceTo(300)
		return e.Steps, e.m.ttft.sum
	}
	s1, t1 := run()
	s2, t2 := run()
	if s1 != s2 || t1 != t2 {
		t.Fatalf("same seed gave %d/%v and %d/%v", s1, t1, s2, t2)
	}
}

func TestBuiltinScenariosLoadAndFit(t *testing.T) {
	all, err := Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bursty", "cpu-overhead", "decode-bound", "healthy", "kv-capacity", "kv-transfer", "long-prompt", "lora-slots",
		"moe-bandwidth", "prefill-interference", "prefix-cache-miss", "queue-bound", "router-imbalance", "speculation-not-paying"}
	var got []string
	for _, s := range all {
		got = append(got, s.Name)
		if _, err := New(s, false); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("scenarios %v", got)
	}
}

func TestScenarioErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"name: x\nmodel: llama-8b\ngpu: B9000\nworkload: {rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n", "unknown GPU \"B9000\"; known: "},
		{"name: x\nmodel: llama-9b\ngpu: L4\nworkload: {rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n", "unknown model \"llama-9b\"; known: "},
		{"name: x\nmodel: llama-70b\ngpu: L4\nworkload: {rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n", ""},
		{"name: x\nmodel: llama-8b\ngpu: L4\nworkload: {rate: 0, prompt: {mean: 10}, output: {mean: 10}}\n", "rate must be positive"},
		{"name: x\nmodel: llama-8b\ngpu: H100-SXM\nworkload: {rate: 1, prompt: {dist: zipf}, output: {mean: 10}}\n", "unknown dist"},
		{"name: x\nmodel: llama-8b\ngpu: H100-SXM\nwrkload: {}\n", "unknown field"},
		{"name: x\nengine: {cost: {fixed: 0.001}}\nworkload: {rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n", "needs engine.gpu_blocks"},
		{"name: x\nengine: {gpu_blocks: 100, cost: {fixed: 0, memory: 0}}\nworkload: {rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n", "fixed + memory > 0"},
		{"name: x\nengine: {gpu_blocks: 100, cost: {fixed: 0.001, per_token: -1}}\nworkload: {rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n", "≥ 0"},
		{"name: x\nengine: {gpu_blocks: 100, cost: {fixed: .inf}}\nworkload: {rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n", "finite"},
		{"name: x\nmodel: llama-8b\ngpu: L4\nworkload: {concurrency: -1, rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n", "concurrency must not be negative"},
	} {
		s, err := ParseScenario("s.yaml", []byte(c.src))
		if c.want == "" {
			// 70B weights do not fit one 24 GB L4.
			if err == nil {
				_, err = New(s, false)
			}
			if err == nil || !strings.Contains(err.Error(), "does not fit") {
				t.Errorf("want a does-not-fit error, got %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// A fitted cost prices every step by its formula, and a closed loop keeps
// exactly its concurrency in the system.
func TestFittedCostAndClosedLoop(t *testing.T) {
	sc := &Scenario{Name: "fit", Model: "served/name", Warmup: time.Minute, Duration: time.Minute,
		Engine:   EngineConfig{MaxNumSeqs: 8, GPUBlocks: 4096, Cost: &StepCost{Fixed: 0.002, Memory: 0.010, PerToken: 1e-5, PerContext: 1e-7}},
		Workload: Workload{Concurrency: 20, Prompt: Length{Dist: "fixed", Value: 100}, Output: Length{Dist: "fixed", Value: 50}}}
	e, err := New(sc, true)
	if err != nil {
		t.Fatal(err)
	}
	e.AdvanceTo(120)
	if e.GPUBlocks() != 4096 {
		t.Errorf("%d blocks, want the 4096 given", e.GPUBlocks())
	}
	if _, inFlight, _ := e.Counts(); inFlight != 20 {
		t.Errorf("%d requests in the system, want the concurrency of 20", inFlight)
	}
	if len(e.Records) < 100 {
		t.Fatalf("%d finished", len(e.Records))
	}
	// A full batch of 8 decodes with about 125 tokens of context each:
	// 2 ms + max(10 ms + 8·125·0.1 µs, 8·10 µs) ≈ 12.1 ms a token.
	r := e.Records[len(e.Records)-1]
	var sum float64
	for _, x := range r.ITLs {
		sum += x
	}
	if itl := sum / float64(len(r.ITLs)); math.Abs(itl-0.0121) > 0.0005 {
		t.Errorf("mean ITL %.4f s, want about 0.0121 s", itl)
	}
	if e.model.Served != "served/name" {
		t.Errorf("model name %q", e.model.Served)
	}
}

// 15 simulated minutes of a 256-sequence engine.
func BenchmarkFifteenMinutes256Seqs(b *testing.B) {
	sc, _ := Load("queue-bound")
	sc.Engine.MaxNumSeqs = 256
	sc.Workload.Rate = 60
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e, _ := New(sc, false)
		e.AdvanceTo(900)
		if i == 0 {
			b.ReportMetric(float64(e.Steps), "steps")
			b.ReportMetric(e.m.running, "running")
		}
	}
}
