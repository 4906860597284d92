package sglang_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/scrape"
	"github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm" // a window may hold both engines
	"github.com/llmdoctor/llmdoctor/evidence"
)

// window is the time between the two snapshots, in seconds.
const window = 300

// build reads two saved expositions taken window seconds apart, as
// `llmdoctor diagnose --snapshots a b --interval 5m` does, builds evidence
// for every engine in them and runs the consistency checks rules rely on.
func build(t *testing.T, start, end string) []*evidence.Evidence {
	t.Helper()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "start.prom"), filepath.Join(dir, "end.prom")
	if err := os.WriteFile(a, []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(end), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := scrape.Files([]string{a, b}, window*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Notes) > 0 || len(w.Withheld) > 0 {
		t.Errorf("the window has notes %q and withheld families %v", w.Notes, w.Withheld)
	}
	evs := engine.Build(w, engine.Options{})
	for _, e := range evs {
		evidence.Check(e)
	}
	return evs
}

// one builds evidence that must hold exactly one target.
func one(t *testing.T, start, end server) *evidence.Evidence {
	t.Helper()
	evs := build(t, start.String(), end.String())
	if len(evs) != 1 {
		t.Fatalf("want one target, got %d", len(evs))
	}
	return evs[0]
}

// What one SGLang server saw before the window and during it.
var (
	ttftBefore = []ob{{0.12, 2600}, {0.35, 900}, {2.5, 40}}
	ttftDuring = []ob{{0.15, 300}, {0.3, 200}, {0.5, 80}, {1.5, 20}} // 600 requests, Σ 175 s
	e2eBefore  = []ob{{2.5, 2500}, {9, 1040}}
	e2eDuring  = []ob{{3, 400}, {6, 150}, {12, 50}} // Σ 2700 s: mean 4.5 s
	queueBef   = []ob{{0.002, 3000}, {0.4, 540}}
	queueDur   = []ob{{0.003, 400}, {0.03, 150}, {0.15, 50}} // Σ 13.2 s: mean 22 ms
	prefillBef = []ob{{0.06, 3540}}
	prefillDur = []ob{{0.08, 500}, {0.2, 100}} // Σ 60 s: mean 100 ms
	// Other stages of the same histogram, which must not reach prefill.
	procDur    = []ob{{0.002, 600}}
	chunkedDur = []ob{{0.05, 900}}
	itlBefore  = []ob{{0.01, 400000}, {0.05, 20000}}
	itlDuring  = []ob{{0.012, 60000}, {0.03, 10000}, {0.7, 50}} // 50 gaps over 0.5 s
	promptBef  = []ob{{1000, 3540}}
	promptDur  = []ob{{1200, 400}, {2100, 200}} // Σ 900 000 tokens
	genBef     = []ob{{300, 3540}}
	genDur     = []ob{{200, 450}, {400, 150}} // Σ 150 000 tokens
	uncachBef  = []ob{{700, 3540}}
	uncachDur  = []ob{{600, 400}, {1500, 200}} // Σ 540 000 = prompt − cached
)

// typical is an SGLang server of a release serving 600 streaming requests
// in the window, at its start (end false) or end.
func typical(rel release, end bool) server {
	s := server{rel: rel, model: "qwen3-8b",
		scheds: []sched{{
			running: pick(end, 20, 24), waiting: pick(end, 2, 4), usage: pick(end, 0.55, 0.61), capacity: 450000,
			queue: grow(queueBef, queueDur, end),
			stages: map[string][]ob{
				"prefill_forward": grow(prefillBef, prefillDur, end),
				"request_process": grow(procDur, procDur, end),
				"chunked_prefill": grow(chunkedDur, chunkedDur, end),
			},
			retracted: add(3, 7, end),
		}},
		stream: traffic{
			ttft: grow(ttftBefore, ttftDuring, end), e2e: grow(e2eBefore, e2eDuring, end),
			requests: add(3540, 600, end), promptTokens: add(3.54e6, 900000, end), genTokens: add(1.062e6, 150000, end),
			cachedDevice: add(1e6, 300000, end), cachedHost: add(2e5, 60000, end),
		},
		itl:     grow(itlBefore, itlDuring, end),
		prompt:  grow(promptBef, promptDur, end),
		gen:     grow(genBef, genDur, end),
		uncach:  grow(uncachBef, uncachDur, end),
		aborted: add(30, 12, end),
	}
	return s
}

func pick(end bool, start, stop float64) float64 {
	if end {
		return stop
	}
	return start
}

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func expect(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.IsNaN(want) {
		if !math.IsNaN(got) {
			t.Errorf("%s = %v, want missing (NaN)", what, got)
		}
		return
	}
	if !near(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// checkTypical asserts what every current-release server of typical's
// traffic gives.
func checkTypical(t *testing.T, e *evidence.Evidence) {
	t.Helper()
	v := e.Values
	if e.Target.ServedBy != "sglang" || e.Target.Model != "qwen3-8b" {
		t.Errorf("target %+v", e.Target)
	}
	expect(t, "ttft.count", v.Stage.TTFT.Count, 600)
	expect(t, "ttft.mean", v.Stage.TTFT.Mean, 175.0/600)
	expect(t, "queue.count", v.Stage.Queue.Count, 600)
	expect(t, "queue.mean", v.Stage.Queue.Mean, 0.022)
	// Only stage="prefill_forward": request_process (600 × 2 ms) and
	// chunked_prefill (900 chunks) would change both count and mean.
	expect(t, "prefill.count", v.Stage.Prefill.Count, 600)
	expect(t, "prefill.mean", v.Stage.Prefill.Mean, 0.1)
	expect(t, "e2e.count", v.Service.E2E.Count, 600)
	expect(t, "e2e.mean", v.Service.E2E.Mean, 4.5)
	// SGLang has no decode histogram: Check derives its mean.
	expect(t, "decode.mean", v.Stage.Decode.Mean, 4.5-175.0/600)
	if s, _ := e.SourceOf("stage.decode"); s.Metric != "derived" {
		t.Errorf("decode source %+v", s)
	}
	expect(t, "running.mean", v.Service.Running.Mean, 22)
	expect(t, "running.last", v.Service.Running.Last, 24)
	expect(t, "waiting.mean", v.Service.Waiting.Mean, 3)
	expect(t, "kv_usage.mean", v.Resource.KVUsage.Mean, 0.58)
	// Hit rate from the counters (360 000 cached of 900 000 prompt tokens),
	// never from the cache_hit_rate gauge (0.97, last prefill batch only).
	expect(t, "prefix_hit_rate", v.Resource.PrefixHitRate, 0.4)
	expect(t, "prefix_queries", v.Resource.PrefixQueries, 900000)
	expect(t, "finished", v.Service.Finished, 600)
	expect(t, "request_rate", v.Service.RequestRate, 2)
	expect(t, "aborts", v.Service.Aborts, 12)
	expect(t, "failed_share", v.Service.FailedShare, 12.0/600)
	expect(t, "errors", v.Service.Errors, math.NaN())
	expect(t, "length_share", v.Service.LengthShare, math.NaN())
	expect(t, "preemptions", v.Service.Preemptions, 7)
	expect(t, "prompt_tps", v.Service.PromptTPS, 3000)
	expect(t, "generation_tps", v.Service.GenerationTPS, 500)
	expect(t, "kv_capacity_tokens", v.Cond.KVCapacityTokens, 450000)
	expect(t, "block_size", v.Cond.BlockSize, 1)
	expect(t, "gpu_blocks", v.Cond.GPUBlocks, math.NaN())
	expect(t, "prompt_tokens.count", v.Cond.PromptTokens.Count, 600)
	expect(t, "prompt_tokens.mean", v.Cond.PromptTokens.Mean, 1500)
	expect(t, "output_tokens.mean", v.Cond.OutputTokens.Mean, 250)
	expect(t, "computed_prompt_tokens.mean", v.Cond.ComputedPromptTokens.Mean, 900)
	expect(t, "itl.count", v.Stage.ITL.Count, 70050)
	expect(t, "itl_stalls", v.Stage.ITLStalls, 50)
	expect(t, "stage_metrics", v.Cond.StageMetrics, 1)
	// Inter-token latency counts as TPOT measured apart from TTFT.
	expect(t, "tpot_tracked", v.Cond.TPOTTracked, 1)
	expect(t, "tpot.mean", v.Stage.TPOT.Mean, math.NaN())
	expect(t, "window_seconds", v.Cond.WindowSeconds, window)
	expect(t, "queue share", v.Stage.Share.Queue, 0.022/(175.0/600))
	if len(e.Inconsistencies) > 0 {
		t.Errorf("inconsistencies: %+v", e.Inconsistencies)
	}
	// Provenance names SGLang's families.
	for path, want := range map[string]string{"stage.ttft": "sglang:time_to_first_token_seconds",
		"stage.prefill": "sglang:per_stage_req_latency_seconds", "service.running": "sglang:num_running_reqs",
		"resource.prefix_hit_rate": "sglang:cached_tokens_total", "cond.kv_capacity_tokens": "sglang:max_total_num_tokens"} {
		if s, _ := e.SourceOf(path); s.Metric != strings.Replace(want, "sglang:", prefixOf(e), 1) {
			t.Errorf("%s cites %q, want %q", path, s.Metric, want)
		}
	}
	// What SGLang cannot give is explained in SGLang's terms.
	for _, path := range []string{"stage.tpot", "service.length_share", "cond.gpu_blocks"} {
		if h := e.How(path); !strings.Contains(h, "SGLang") {
			t.Errorf("How(%s) = %q: not SGLang's vocabulary", path, h)
		}
	}
	if k := e.Knob("max_num_seqs"); k != "--max-running-requests" {
		t.Errorf("knob %q", k)
	}
}

// prefixOf tells a direct scrape (sglang:) from the gateway (sglang_).
func prefixOf(e *evidence.Evidence) string {
	if s, _ := e.SourceOf("stage.ttft"); strings.HasPrefix(s.Metric, "sglang_") {
		return "sglang_"
	}
	return "sglang:"
}

func TestV0518EndToEnd(t *testing.T) {
	e := one(t, typical(v0518, false), typical(v0518, true))
	checkTypical(t, e)
	if e.Engine == nil || e.Engine.Name != "sglang" || e.Engine.Title != "SGLang" {
		t.Fatalf("engine vocabulary %+v", e.Engine)
	}
	if len(e.Members) != 0 {
		t.Errorf("one scheduler, %d members", len(e.Members))
	}
}

// v0.4.x servers lack the queue-time, stage, abort, retraction, capacity and
// token-length families: those are gaps with SGLang's upgrade advice, never
// numbers from something else. Tokenizer series carry model_name only.
func TestV04Era(t *testing.T) {
	for _, c := range []struct {
		name string
		rel  release
		// v0.4.3.post3 predates cached_tokens_total (v0.4.3.post4).
		hitRate float64
	}{{"v0.4.5", v045, 0.4}, {"v0.4.3.post3", v043, math.NaN()}} {
		t.Run(c.name, func(t *testing.T) {
			start, end := typical(c.rel, false), typical(c.rel, true)
			e := one(t, start, end)
			v := e.Values
			expect(t, "ttft.count", v.Stage.TTFT.Count, 600)
			expect(t, "ttft.mean", v.Stage.TTFT.Mean, 175.0/600)
			// Quantiles come from this release's own bounds: 0.3 and 0.5
			// are bounds in v0.4.3.post3 (0.2 and 0.4 in v0.4.5).
			if c.rel == v043 {
				expect(t, "ttft.p50", v.Stage.TTFT.P50, 0.1+0.2*(300-0)/500)
			} else {
				expect(t, "ttft.p50", v.Stage.TTFT.P50, 0.1+0.1*(300-0)/300)
			}
			expect(t, "e2e.mean", v.Service.E2E.Mean, 4.5)
			expect(t, "decode.mean", v.Stage.Decode.Mean, 4.5-175.0/600)
			expect(t, "running.mean", v.Service.Running.Mean, 22)
			expect(t, "waiting.mean", v.Service.Waiting.Mean, 3)
			expect(t, "kv_usage.mean", v.Resource.KVUsage.Mean, 0.58)
			expect(t, "request_rate", v.Service.RequestRate, 2)
			expect(t, "itl.count", v.Stage.ITL.Count, 70050)
			expect(t, "prefix_hit_rate", v.Resource.PrefixHitRate, c.hitRate)
			for what, x := range map[string]float64{"queue.mean": v.Stage.Queue.Mean, "prefill.mean": v.Stage.Prefill.Mean,
				"aborts": v.Service.Aborts, "failed_share": v.Service.FailedShare, "preemptions": v.Service.Preemptions,
				"kv_capacity_tokens": v.Cond.KVCapacityTokens, "block_size": v.Cond.BlockSize,
				"prompt_tokens.mean": v.Cond.PromptTokens.Mean, "share.queue": v.Stage.Share.Queue, "front_mean": v.Stage.FrontMean} {
				expect(t, what, x, math.NaN())
			}
			expect(t, "stage_metrics", v.Cond.StageMetrics, 0)
			if len(e.Inconsistencies) > 0 {
				t.Errorf("inconsistencies: %+v", e.Inconsistencies)
			}
			for path, want := range map[string]string{"stage.queue": "v0.5.3", "stage.prefill": "v0.5.4.post2",
				"service.preemptions": "v0.5.7", "cond.kv_capacity_tokens": "v0.5.6", "service.aborts": "v0.4.7"} {
				if h := e.How(path); !strings.Contains(h, want) {
					t.Errorf("How(%s) = %q, want the release that adds it (%s)", path, h, want)
				}
			}
		})
	}
}

// With --enable-priority-scheduling every scheduler series carries
// priority="" and the queue gauges add one series per priority: the total
// is priority="" alone.
func TestPriorityScheduling(t *testing.T) {
	mk := func(end bool) server {
		s := typical(v0518, end)
		s.priority = true
		s.scheds[0].byPriority = map[string][2]float64{
			"0":  {pick(end, 12, 16), pick(end, 0, 1)},
			"10": {pick(end, 8, 8), pick(end, 2, 3)},
		}
		return s
	}
	e := one(t, mk(false), mk(true))
	checkTypical(t, e)
}

// v0.5.17+ labels TTFT, E2E and the request and token counters with
// is_streaming. A non-streaming request reaches the tokenizer in 50-token
// chunks, so its "first token" is the fiftieth: TTFT reads streaming
// requests only, everything else reads both.
func TestIsStreaming(t *testing.T) {
	mk := func(end bool) server {
		s := typical(v0518, end)
		batchTTFT := []ob{{3.5, 100}} // time to the first 50-token chunk
		batchE2E := []ob{{8, 100}}
		s.batch = traffic{ttft: grow([]ob{{3, 10}}, batchTTFT, end), e2e: grow([]ob{{7, 10}}, batchE2E, end),
			requests: add(10, 100, end), promptTokens: add(15000, 150000, end), genTokens: add(2500, 25000, end),
			cachedDevice: add(0, 60000, end)}
		// The scheduler and the length histograms see every request.
		more := func(obs []ob, extra ob) []ob { return append(append([]ob(nil), obs...), extra) }
		if end {
			s.scheds[0].queue = more(s.scheds[0].queue, ob{0.022, 100})
			s.scheds[0].stages["prefill_forward"] = more(s.scheds[0].stages["prefill_forward"], ob{0.1, 100})
			s.prompt = more(s.prompt, ob{1500, 100})
			s.gen = more(s.gen, ob{250, 100})
			s.uncach = more(s.uncach, ob{900, 100})
		}
		s.scheds[0].queue = more(s.scheds[0].queue, ob{0.022, 10})
		s.scheds[0].stages["prefill_forward"] = more(s.scheds[0].stages["prefill_forward"], ob{0.1, 10})
		s.prompt, s.gen, s.uncach = more(s.prompt, ob{1500, 10}), more(s.gen, ob{250, 10}), more(s.uncach, ob{900, 10})
		return s
	}
	e := one(t, mk(false), mk(true))
	v := e.Values
	expect(t, "ttft.count", v.Stage.TTFT.Count, 600)
	expect(t, "ttft.mean", v.Stage.TTFT.Mean, 175.0/600)
	expect(t, "e2e.count", v.Service.E2E.Count, 700)
	expect(t, "e2e.mean", v.Service.E2E.Mean, (2700.0+800)/700)
	expect(t, "finished", v.Service.Finished, 700)
	expect(t, "request_rate", v.Service.RequestRate, 700.0/window)
	expect(t, "prompt_tps", v.Service.PromptTPS, 1.05e6/window)
	expect(t, "prefix_hit_rate", v.Resource.PrefixHitRate, 420000.0/1.05e6)
	expect(t, "queue.count", v.Stage.Queue.Count, 700)
	expect(t, "failed_share", v.Service.FailedShare, 12.0/700)
	// Decode as E2E − TTFT needs both over the same requests: here E2E holds
	// 100 non-streaming requests TTFT leaves out, so it is a gap, not a
	// blend of two populations.
	expect(t, "decode.mean", v.Stage.Decode.Mean, math.NaN())
	// TTFT then covers 600 of the 700 requests the stage times count: it is
	// withheld from every comparison, not set against them.
	if len(e.Inconsistencies) != 1 || e.Inconsistencies[0].Check != "ttft-covers-fewer-requests" {
		t.Errorf("inconsistencies: %+v", e.Inconsistencies)
	}
}

// An offline batch sends no streaming request: TTFT is a gap whose How says
// why, not the time to each request's 50th token.
func TestOnlyNonStreaming(t *testing.T) {
	mk := func(end bool) server {
		s := typical(v0518, end)
		s.batch, s.stream = s.stream, traffic{}
		return s
	}
	e := one(t, mk(false), mk(true))
	v := e.Values
	expect(t, "ttft.count", v.Stage.TTFT.Count, math.NaN())
	expect(t, "ttft.mean", v.Stage.TTFT.Mean, math.NaN())
	expect(t, "decode.mean", v.Stage.Decode.Mean, math.NaN())
	expect(t, "e2e.mean", v.Service.E2E.Mean, 4.5)
	expect(t, "request_rate", v.Service.RequestRate, 2)
	if h := e.How("stage.ttft"); !strings.Contains(h, "streaming") {
		t.Errorf("How(stage.ttft) = %q: does not say non-streaming requests are left out", h)
	}
}

// Through SGLang's model gateway (/engine_metrics) every ':' is an '_' and
// each sample carries worker_addr: one worker reads exactly as a direct
// scrape, and several add up.
func TestGateway(t *testing.T) {
	direct := one(t, typical(v0518, false), typical(v0518, true))
	const w1, w2 = "http://10.0.0.5:30000", "http://10.0.0.6:30000"
	start, end := typical(v0518, false).String(), typical(v0518, true).String()
	evs := build(t, gateway(start, w1), gateway(end, w1))
	if len(evs) != 1 {
		t.Fatalf("want one target, got %d", len(evs))
	}
	gw := evs[0]
	if s, _ := gw.SourceOf("stage.ttft"); s.Metric != "sglang_time_to_first_token_seconds" {
		t.Fatalf("gateway names not read: ttft from %q", s.Metric)
	}
	checkTypical(t, gw)
	for _, f := range evidence.Fields() {
		a, b := direct.Values.Get(f), gw.Values.Get(f)
		if !(a == b || math.IsNaN(a) && math.IsNaN(b)) {
			t.Errorf("%s: direct %v, through the gateway %v", f.Path, a, b)
		}
	}
	if gw.Target.Model != direct.Target.Model || gw.Target.ServedBy != "sglang" {
		t.Errorf("gateway target %+v", gw.Target)
	}

	// Two workers behind one gateway: two servers, so counts and KV capacity
	// add up and KV usage averages.
	second := func(end bool) string {
		s := typical(v0518, end)
		s.scheds[0].running, s.scheds[0].usage = pick(end, 10, 14), pick(end, 0.35, 0.41)
		return s.String()
	}
	evs = build(t, merge(gateway(start, w1), gateway(second(false), w2)), merge(gateway(end, w1), gateway(second(true), w2)))
	if len(evs) != 1 {
		t.Fatalf("want one target, got %d", len(evs))
	}
	v := evs[0].Values
	expect(t, "running.mean", v.Service.Running.Mean, 22+12)
	expect(t, "kv_usage.mean", v.Resource.KVUsage.Mean, (0.58+0.38)/2)
	expect(t, "kv_capacity_tokens", v.Cond.KVCapacityTokens, 2*450000)
	expect(t, "ttft.count", v.Stage.TTFT.Count, 1200)
	expect(t, "request_rate", v.Service.RequestRate, 4)
	expect(t, "preemptions", v.Service.Preemptions, 14)
}

// dpServer is --dp-size 2 --tp-size 2 with --enable-metrics-for-all-schedulers:
// each data-parallel rank's scheduler reports on tp_rank 0 and 1, the same
// numbers twice. Rank 0 runs 10 then 12 requests, rank 1 runs 6 then 8; each
// rank's KV pool holds 200 000 tokens and each scheduled 300 of the 600
// requests.
func dpServer(end bool) server {
	s := typical(v0518, end)
	rank := func(dp string, running, waiting, usage float64, queue []ob, retracted float64) sched {
		return sched{running: running, waiting: waiting, usage: usage, capacity: 200000, queue: queue,
			stages: map[string][]ob{"prefill_forward": scale(grow(prefillBef, prefillDur, end), 0.5)}, retracted: retracted,
			ranks: lbl{"dp_rank": dp}}
	}
	r0 := rank("0", pick(end, 10, 12), pick(end, 1, 3), pick(end, 0.5, 0.6), scale(grow(queueBef, queueDur, end), 0.5), add(1, 4, end))
	r1 := rank("1", pick(end, 6, 8), pick(end, 1, 1), pick(end, 0.3, 0.4), scale(grow(queueBef, queueDur, end), 0.5), add(2, 3, end))
	s.scheds = nil
	for _, r := range []sched{r0, r1} {
		for _, tp := range []string{"0", "1"} {
			c := r
			c.ranks = r.ranks.with("tp_rank", tp)
			s.scheds = append(s.scheds, c)
		}
	}
	return s
}

// Summing over tp_rank would double every scheduler number: running and
// waiting are per scheduler, i.e. per data-parallel rank, and the tp_rank
// copies say the same thing twice. Right: running = Σ over dp_rank of one
// copy each = 11 + 7 = 18 on average (not 36); KV capacity = 2 × 200 000
// (one pool per scheduler); queue time counts each request once (600, not
// 1200, which would also make its count disagree with the other finish-time
// histograms); preemptions 4 + 3 = 7 (not 14).
func TestDataParallel(t *testing.T) {
	e := one(t, dpServer(false), dpServer(true))
	v := e.Values
	expect(t, "running.mean", v.Service.Running.Mean, 18)
	expect(t, "running.last", v.Service.Running.Last, 20)
	expect(t, "waiting.mean", v.Service.Waiting.Mean, 3)
	expect(t, "kv_usage.mean", v.Resource.KVUsage.Mean, 0.45)
	expect(t, "kv_capacity_tokens", v.Cond.KVCapacityTokens, 400000)
	expect(t, "queue.count", v.Stage.Queue.Count, 600)
	expect(t, "queue.mean", v.Stage.Queue.Mean, 0.022)
	expect(t, "prefill.count", v.Stage.Prefill.Count, 600)
	expect(t, "preemptions", v.Service.Preemptions, 7)
	expect(t, "engines", v.Cond.Engines, 2)
	expect(t, "ttft.count", v.Stage.TTFT.Count, 600)
	if len(e.Inconsistencies) > 0 {
		t.Errorf("inconsistencies: %+v", e.Inconsistencies)
	}
	if len(e.Members) != 2 {
		t.Fatalf("want a member per dp_rank, got %d", len(e.Members))
	}
	for i, want := range []struct{ running, capacity, queue float64 }{{11, 200000, 300}, {7, 200000, 300}} {
		m := e.Members[i]
		if m.Target.Engine != []string{"0", "1"}[i] || m.Target.ServedBy != "sglang" {
			t.Errorf("member %d target %+v", i, m.Target)
		}
		expect(t, "member running.mean", m.Values.Service.Running.Mean, want.running)
		expect(t, "member kv_capacity_tokens", m.Values.Cond.KVCapacityTokens, want.capacity)
		expect(t, "member queue.count", m.Values.Stage.Queue.Count, want.queue)
	}
}

// Without --enable-metrics-for-all-schedulers only tp_rank 0 reports: the
// same numbers as above.
func TestDataParallelDefaultReporting(t *testing.T) {
	mk := func(end bool) server {
		s := dpServer(end)
		var keep []sched
		for _, sc := range s.scheds {
			if sc.ranks["tp_rank"] == "0" {
				keep = append(keep, sc)
			}
		}
		s.scheds = keep
		return s
	}
	e := one(t, mk(false), mk(true))
	expect(t, "running.mean", e.Values.Service.Running.Mean, 18)
	expect(t, "kv_capacity_tokens", e.Values.Cond.KVCapacityTokens, 400000)
	expect(t, "queue.count", e.Values.Stage.Queue.Count, 600)
	expect(t, "preemptions", e.Values.Service.Preemptions, 7)
}

// vllmPart is a small vLLM exposition serving the same model name.
func vllmPart(end bool) string {
	x := newExpo()
	l := lbl{"engine": "0", "model_name": "qwen3-8b"}
	x.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", l, pick(end, 5, 9))
	x.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", l, 0)
	x.counter("vllm:request_success_total", "Count of successfully processed requests.", l.with("finished_reason", "stop"), add(100, 150, end))
	x.hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", l,
		[]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0},
		grow([]ob{{0.07, 100}}, []ob{{0.09, 150}}, end))
	return x.String()
}

// One window holding vLLM and SGLang series gives a target per engine, each
// read from its own families only.
func TestBothEngines(t *testing.T) {
	evs := build(t, vllmPart(false)+typical(v0518, false).String(), vllmPart(true)+typical(v0518, true).String())
	if len(evs) != 2 {
		t.Fatalf("want a target per engine, got %d", len(evs))
	}
	by := map[string]*evidence.Evidence{}
	for _, e := range evs {
		by[e.Target.ServedBy] = e
	}
	s, v := by["sglang"], by["vllm"]
	if s == nil || v == nil {
		t.Fatalf("served by: %q and %q", evs[0].Target.ServedBy, evs[1].Target.ServedBy)
	}
	checkTypical(t, s)
	expect(t, "vllm running.mean", v.Values.Service.Running.Mean, 7)
	expect(t, "vllm ttft.count", v.Values.Stage.TTFT.Count, 150)
	expect(t, "vllm ttft.mean", v.Values.Stage.TTFT.Mean, 0.09)
	expect(t, "vllm request_rate", v.Values.Service.RequestRate, 0.5)
	if v.Engine.Name != "vllm" || s.Engine.Name != "sglang" {
		t.Errorf("vocabularies %q and %q", v.Engine.Name, s.Engine.Name)
	}
	if h := v.How("stage.tpot"); strings.Contains(h, "SGLang") {
		t.Errorf("vLLM target explained in SGLang's terms: %q", h)
	}
}

// Every SGLang family is known under both prefixes, as its own engine's.
func TestCatalogueNames(t *testing.T) {
	for _, m := range sglang.Catalogue {
		if len(m.Names)%2 != 0 {
			t.Fatalf("%s: names %v", m.Key, m.Names)
		}
		for _, n := range m.Names {
			if !strings.HasPrefix(n, "sglang:") && !strings.HasPrefix(n, "sglang_") {
				t.Errorf("%s: %q has neither prefix", m.Key, n)
			}
			if strings.HasPrefix(n, "sglang_") && strings.Contains(n, ":") {
				t.Errorf("%q: the gateway leaves no ':'", n)
			}
			if engine.Of(n) != sglang.Engine {
				t.Errorf("%q: not SGLang's", n)
			}
		}
	}
}
