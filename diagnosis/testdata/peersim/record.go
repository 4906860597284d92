//go:build ignore

// record.go records diagnosis windows from llm-d-inference-sim, a vLLM-compatible
// serving simulator written by the llm-d project (not by us), as independent
// ground truth for llmdoctor.
//
// For a scenario it starts the simulator on a free loopback port with the
// scenario's flags, drives open-loop load at it (Poisson arrivals, prompts of a
// uniform number of words, which the simulator's dummy tokenizer counts as one
// token each, streaming /v1/completions with ignore_eos so exactly max_tokens
// come back), warms up, then saves /metrics every interval for the window as
// NAME/snap-NNN.prom (raw bytes as served), the client-side results of the
// requests that started inside the window as NAME/bench.json (vllm bench serve
// --save-result --save-detailed format) and NAME/case.yaml (command, load,
// expected verdict, what was observed).
//
// Stdlib only. Run from the module root:
//
//	go run ./diagnosis/testdata/peersim/record.go -list
//	go run ./diagnosis/testdata/peersim/record.go -scenario all
//	go run ./diagnosis/testdata/peersim/record.go -scenario queue-at-cap,burst
//	go run ./diagnosis/testdata/peersim/record.go -name my-case -rate 2 -prompt 200:1000 -output 80:120 \
//	    -sim-flags '--max-num-seqs 8 --latency-calculator per-token --inter-token-latency 15ms'
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Burst is a second Poisson arrival process on top of the base one.
type Burst struct {
	Rate      float64 // req/s during the burst
	OffsetS   float64 // seconds after the window's start (the first snapshot)
	DurationS float64
}

// Scenario is one recorded window.
type Scenario struct {
	Name     string
	SimFlags []string // besides the common flags (model, tokenizer, port, seed, max-model-len)
	Rate     float64  // base arrival rate, req/s, for warmup and window
	Prompt   [2]int   // prompt tokens (words), uniform, inclusive
	Output   [2]int   // max_tokens (= output tokens: ignore_eos), uniform, inclusive
	Burst    *Burst
	WarmupS  float64
	WindowS  float64
	Verdict  string
	Accept   []string
	Why      string // why the label holds, from the configured latencies
}

// per-token prefill, fast: TTFT = 40 ms + 50 us x prompt tokens (50-90 ms for 200-1000 tokens)
func fastPrefill() []string {
	return []string{"--latency-calculator", "per-token", "--prefill-overhead", "40ms",
		"--prefill-time-per-token", "50us", "--prefill-time-std-dev", "5ms"}
}

func itl(mean, std string) []string {
	return []string{"--inter-token-latency", mean, "--inter-token-latency-std-dev", std}
}

func seqs(n int) []string { return []string{"--max-num-seqs", strconv.Itoa(n)} }

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var scenarios = []Scenario{
	{
		Name: "healthy-light", SimFlags: join(seqs(32), fastPrefill(), itl("15ms", "2ms")),
		Rate: 1.0, Prompt: [2]int{200, 1000}, Output: [2]int{80, 120}, WarmupS: 15, WindowS: 60,
		Verdict: "none",
		Why:     "TTFT is 40 ms + 50 us/token (50-90 ms), ITL 15 ms, 80-120 tokens (e2e ~1.6 s); 1 req/s keeps ~1.6 of 32 slots busy, nothing waits.",
	},
	{
		Name: "busy-healthy", SimFlags: join(seqs(48), fastPrefill(), itl("15ms", "2ms")),
		Rate: 24, Prompt: [2]int{200, 1000}, Output: [2]int{60, 100}, WarmupS: 15, WindowS: 60,
		Verdict: "none",
		Why:     "Same fast latencies (TTFT 50-90 ms, ITL 15 ms, e2e ~1.3 s); 24 req/s keeps ~30 of 48 slots (~63%) busy: a high batch, but the slots are not exhausted, so nothing waits long and every target holds.",
	},
	{
		Name: "healthy-long-outputs", SimFlags: join(seqs(32), fastPrefill(), itl("10ms", "1ms")),
		Rate: 1.0, Prompt: [2]int{200, 1000}, Output: [2]int{400, 800}, WarmupS: 20, WindowS: 60,
		Verdict: "none",
		Why:     "ITL 10 ms with 400-800 output tokens: decode is ~99% of e2e (4-8 s) but each token is fast, TTFT 50-90 ms, ~6 of 32 slots busy; all targets hold.",
	},
	{
		Name: "queue-at-cap", SimFlags: join(seqs(4), fastPrefill(), itl("15ms", "2ms")),
		Rate: 4.5, Prompt: [2]int{200, 1000}, Output: [2]int{80, 120}, WarmupS: 10, WindowS: 60,
		Verdict: "queueing", Accept: []string{"kv-capacity"},
		Why: "A request holds one of 4 slots for ~1.6 s (TTFT 50-90 ms + 100 x 15 ms), so capacity is ~2.5 req/s; 4.5 req/s arrive (~1.8x), all 4 slots stay full, the waiting queue grows through the window and queue wait (tens of seconds) dwarfs prefill and decode.",
	},
	{
		Name: "queue-moderate", SimFlags: join(seqs(8), fastPrefill(), itl("15ms", "2ms")),
		Rate: 5.4, Prompt: [2]int{200, 1000}, Output: [2]int{80, 120}, WarmupS: 10, WindowS: 60,
		Verdict: "queueing", Accept: []string{"kv-capacity"},
		Why: "8 slots x ~1.6 s per request gives ~5.1 req/s capacity; 5.4 req/s arrive (~1.06x), so the queue builds slowly through the window and queue wait grows to seconds while prefill (50-90 ms) and ITL (15 ms) stay fast.",
	},
	{
		Name: "burst", SimFlags: join(seqs(8), fastPrefill(), itl("15ms", "2ms")),
		Rate: 1.0, Prompt: [2]int{200, 1000}, Output: [2]int{80, 120},
		Burst:   &Burst{Rate: 30, OffsetS: 15, DurationS: 5},
		WarmupS: 15, WindowS: 60,
		Verdict: "queueing", Accept: []string{"kv-capacity"},
		Why: "Base load 1 req/s on 8 slots (~5.1 req/s capacity) is light, but ~150 requests arrive within 5 s from 15 s into the window; they wait up to ~30 s for a slot while prefill (50-90 ms) and ITL (15 ms) stay fast.",
	},
	{
		Name: "long-prompts", SimFlags: join(seqs(16), []string{"--latency-calculator", "per-token",
			"--prefill-overhead", "50ms", "--prefill-time-per-token", "500us", "--prefill-time-std-dev", "100ms"}, itl("15ms", "2ms")),
		Rate: 0.4, Prompt: [2]int{6000, 16000}, Output: [2]int{20, 60}, WarmupS: 20, WindowS: 60,
		Verdict: "prefill", Accept: []string{"prefill-interference"},
		Why: "Prefill is 50 ms + 0.5 ms/token, so 6k-16k token prompts take 3-8 s to a first token; outputs are short (20-60 x 15 ms), load is light (~2.5 of 16 slots), nothing waits: TTFT p99 > 2 s from prefill compute.",
	},
	{
		Name: "slow-ttft-constant", SimFlags: join(seqs(32), []string{"--latency-calculator", "constant",
			"--time-to-first-token", "3s", "--time-to-first-token-std-dev", "300ms"}, itl("15ms", "2ms")),
		Rate: 1.0, Prompt: [2]int{200, 1000}, Output: [2]int{80, 120}, WarmupS: 15, WindowS: 60,
		Verdict: "prefill", Accept: []string{"prefill-interference"},
		Why: "Constant time to first token of 3 s (+-300 ms) regardless of prompt; ITL 15 ms; ~4.5 of 32 slots busy so nothing waits: TTFT p99 > 2 s comes from the (simulated) prefill.",
	},
	{
		Name: "slow-decode", SimFlags: join(seqs(64), fastPrefill(), itl("90ms", "10ms")),
		Rate: 0.6, Prompt: [2]int{200, 1000}, Output: [2]int{150, 300}, WarmupS: 30, WindowS: 60,
		Verdict: "decode", Accept: []string{"memory-bandwidth"},
		Why: "ITL is 90 ms (target 50 ms), 150-300 output tokens, so decode is ~99% of a 13-27 s e2e; TTFT 50-90 ms; ~12 of 64 slots busy, nothing waits.",
	},
	{
		Name: "load-dependent-itl", SimFlags: join(seqs(128), fastPrefill(), itl("15ms", "2ms"),
			[]string{"--time-factor-under-load", "8"}),
		Rate: 10, Prompt: [2]int{200, 1000}, Output: [2]int{80, 120}, WarmupS: 60, WindowS: 60,
		Verdict: "prefill", Accept: []string{"decode", "memory-bandwidth"},
		Why: "Base ITL 15 ms, but --time-factor-under-load 8 scales it by 1+7(running-1)/127; 10 req/s settles near ~80 running of 128 (factor ~5), so ITL is ~75 ms, well over 50 ms, with slots to spare and (almost) no queue: decode is slow because the batch is big. The load factor scales the prefill too (70 ms configured, 320 ms observed), so by the labelling rules our own simulator's ground truth uses (docs/accuracy.md: prefill at least half of a TTFT of 200 ms or more is a prefill problem; decode at 68 ms per token is over the 50 ms target but under the 100 ms of a decode problem) the window is prefill, with decode over its target accepted beside it.",
	},
	{
		Name: "failures", SimFlags: join(seqs(32), fastPrefill(), itl("15ms", "2ms"),
			[]string{"--failure-injection-rate", "25", "--failure-types", "server_error"}),
		Rate: 2.0, Prompt: [2]int{200, 1000}, Output: [2]int{80, 120}, WarmupS: 15, WindowS: 60,
		Verdict: "errors", Accept: []string{"none"},
		Why: "Latencies are the healthy ones (TTFT 50-90 ms, ITL 15 ms, ~3 of 32 slots busy) but 25% of requests are rejected at once with HTTP 503; the simulator counts injected failures in no metric, so only the client results show them (none is acceptable from /metrics alone).",
	},
	{
		Name: "busy-healthy-streaming-long", SimFlags: join(seqs(48), fastPrefill(), itl("10ms", "1ms")),
		Rate: 4.0, Prompt: [2]int{200, 1000}, Output: [2]int{300, 600}, WarmupS: 20, WindowS: 60,
		Verdict: "none",
		Why:     "ITL 10 ms, 300-600 output tokens (e2e 3-6 s), TTFT 50-90 ms; 4 req/s keeps ~18 of 48 slots busy, nothing waits; decode dominates e2e but every target holds.",
	},
	{
		Name: "queue-long-prompts", SimFlags: join(seqs(4), []string{"--latency-calculator", "per-token",
			"--prefill-overhead", "50ms", "--prefill-time-per-token", "300us", "--prefill-time-std-dev", "50ms"}, itl("15ms", "2ms")),
		Rate: 2.1, Prompt: [2]int{3000, 6000}, Output: [2]int{40, 60}, WarmupS: 10, WindowS: 60,
		Verdict: "queueing", Accept: []string{"prefill", "kv-capacity"},
		Why: "Prefill is 50 ms + 0.3 ms/token (1.0-1.85 s for 3k-6k tokens) and decode ~0.75 s, so a request holds one of 4 slots ~2.2 s (capacity ~1.8 req/s); 2.1 req/s arrive, the queue grows and waits of many seconds dominate TTFT, on top of a prefill that is itself near 2 s.",
	},
}

// common simulator flags; the port is appended
var commonFlags = []string{"--model", "sim-model", "--force-dummy-tokenizer", "--max-model-len", "32768", "--seed", "42"}

func main() {
	var (
		scen      = flag.String("scenario", "", "scenario name, comma-separated names, or all")
		list      = flag.Bool("list", false, "list the scenarios and exit")
		simPath   = flag.String("sim", "/work/peersim-build/llm-d-inference-sim", "simulator binary")
		simCommit = flag.String("sim-commit", "eec055a39e6bbc1adbcb54f88f24f36b7f94e781", "simulator commit, written to case.yaml")
		outDir    = flag.String("out", "diagnosis/testdata/peersim", "directory holding the scenario directories")
		interval  = flag.Duration("interval", 5*time.Second, "time between /metrics snapshots")
		drain     = flag.Duration("drain", 4*time.Minute, "longest wait for in-flight requests after the window")
		seed      = flag.Uint64("seed", 0, "load seed (0: from the scenario name)")
		// ad-hoc scenario (with -name), or overrides for a table scenario
		name     = flag.String("name", "", "ad-hoc scenario name (with -sim-flags, -rate, ...)")
		simFlags = flag.String("sim-flags", "", "ad-hoc: simulator flags, space-separated")
		rate     = flag.Float64("rate", 0, "arrival rate req/s (overrides)")
		prompt   = flag.String("prompt", "", "prompt tokens lo:hi (overrides)")
		output   = flag.String("output", "", "output tokens lo:hi (overrides)")
		burst    = flag.String("burst", "", "burst rate:offset_s:duration_s (overrides)")
		warmup   = flag.Float64("warmup", 0, "warmup seconds (overrides)")
		window   = flag.Float64("window", 0, "window seconds (overrides)")
		verdict  = flag.String("verdict", "", "expected verdict (ad-hoc)")
	)
	flag.Parse()
	if *list {
		for _, s := range scenarios {
			b := ""
			if s.Burst != nil {
				b = fmt.Sprintf(" burst %g req/s at +%gs for %gs", s.Burst.Rate, s.Burst.OffsetS, s.Burst.DurationS)
			}
			fmt.Printf("%-28s %-9s rate %g req/s, prompt %d-%d, output %d-%d%s; %s\n", s.Name, s.Verdict, s.Rate,
				s.Prompt[0], s.Prompt[1], s.Output[0], s.Output[1], b, strings.Join(s.SimFlags, " "))
		}
		return
	}
	var todo []Scenario
	switch {
	case *name != "":
		todo = []Scenario{{Name: *name, SimFlags: strings.Fields(*simFlags), Rate: 1, Prompt: [2]int{200, 1000},
			Output: [2]int{80, 120}, WarmupS: 15, WindowS: 60, Verdict: *verdict, Why: "ad-hoc scenario."}}
	case *scen == "all":
		todo = scenarios
	case *scen != "":
		for _, n := range strings.Split(*scen, ",") {
			found := false
			for _, s := range scenarios {
				if s.Name == n {
					todo, found = append(todo, s), true
				}
			}
			if !found {
				fatalf("no scenario %q (see -list)", n)
			}
		}
	default:
		fatalf("give -scenario NAME|all, -name (ad-hoc) or -list")
	}
	for i := range todo {
		s := &todo[i]
		if *rate > 0 {
			s.Rate = *rate
		}
		if *prompt != "" {
			s.Prompt = parseRange(*prompt)
		}
		if *output != "" {
			s.Output = parseRange(*output)
		}
		if *burst != "" {
			p := strings.Split(*burst, ":")
			if len(p) != 3 {
				fatalf("-burst rate:offset:duration")
			}
			s.Burst = &Burst{Rate: atof(p[0]), OffsetS: atof(p[1]), DurationS: atof(p[2])}
		}
		if *warmup > 0 {
			s.WarmupS = *warmup
		}
		if *window > 0 {
			s.WindowS = *window
		}
		if *simFlags != "" && *name == "" {
			s.SimFlags = strings.Fields(*simFlags)
		}
	}
	for _, s := range todo {
		sd := *seed
		if sd == 0 {
			h := fnv.New64a()
			h.Write([]byte(s.Name))
			sd = h.Sum64()
		}
		if err := record(s, *simPath, *simCommit, *outDir, *interval, *drain, sd); err != nil {
			fatalf("%s: %v", s.Name, err)
		}
	}
}

func fatalf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "record: "+f+"\n", a...)
	os.Exit(1)
}

func atof(s string) float64 {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		fatalf("bad number %q", s)
	}
	return x
}

func parseRange(s string) [2]int {
	p := strings.Split(s, ":")
	if len(p) != 2 {
		fatalf("range lo:hi, got %q", s)
	}
	lo, err1 := strconv.Atoi(p[0])
	hi, err2 := strconv.Atoi(p[1])
	if err1 != nil || err2 != nil || lo < 1 || hi < lo {
		fatalf("range lo:hi, got %q", s)
	}
	return [2]int{lo, hi}
}

// result is one request as the client saw it.
type result struct {
	start        time.Time
	inWindow     bool
	promptWords  int
	maxTokens    int
	promptTokens int // from usage, -1 if none
	outTokens    int // from usage, -1 if none
	chunks       int // token chunks received
	ttft         float64
	itls         []float64
	e2e          float64
	err          string
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func record(s Scenario, simPath, simCommit, outDir string, interval, drain time.Duration, seed uint64) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	args := append(append(append([]string{}, commonFlags...), "--port", strconv.Itoa(port)), s.SimFlags...)
	command := simPath + " " + strings.Join(args, " ")
	logf, err := os.CreateTemp("", "peersim-"+s.Name+"-*.log")
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(simPath, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	fmt.Printf("== %s: %s (log %s)\n", s.Name, command, logf.Name())

	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000,
		DisableCompression: true, IdleConnTimeout: 90 * time.Second}}
	if err := waitReady(client, base, exited); err != nil {
		return fmt.Errorf("simulator not ready: %v (log %s)", err, logf.Name())
	}

	dir := filepath.Join(outDir, s.Name)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var rmu sync.Mutex // guards rng
	start := time.Now()
	t0 := start.Add(dur(s.WarmupS)) // window start: first snapshot
	tEnd := t0.Add(dur(s.WindowS))  // window end: last snapshot; arrivals stop
	nSnap := int(math.Round(s.WindowS/interval.Seconds())) + 1
	tEnd = t0.Add(time.Duration(nSnap-1) * interval)

	var (
		mu      sync.Mutex
		results []*result
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	launch := func(at time.Time) {
		rmu.Lock()
		pw := s.Prompt[0] + rng.IntN(s.Prompt[1]-s.Prompt[0]+1)
		mt := s.Output[0] + rng.IntN(s.Output[1]-s.Output[0]+1)
		body := makeBody(rng, pw, mt)
		rmu.Unlock()
		r := &result{start: time.Now(), promptWords: pw, maxTokens: mt, promptTokens: -1, outTokens: -1}
		r.inWindow = !r.start.Before(t0) && r.start.Before(tEnd)
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(ctx, client, base, body, r)
		}()
	}
	arrivals := func(from, until time.Time, rate float64, rseed uint64) {
		if rate <= 0 {
			return
		}
		ar := rand.New(rand.NewPCG(rseed, rseed+1))
		t := from
		for {
			t = t.Add(time.Duration(ar.ExpFloat64() / rate * float64(time.Second)))
			if !t.Before(until) {
				return
			}
			time.Sleep(time.Until(t))
			launch(t)
		}
	}
	var gen sync.WaitGroup
	gen.Add(1)
	go func() { defer gen.Done(); arrivals(start, tEnd, s.Rate, seed+11) }()
	if s.Burst != nil {
		gen.Add(1)
		bs := t0.Add(dur(s.Burst.OffsetS))
		be := bs.Add(dur(s.Burst.DurationS))
		if be.After(tEnd) {
			be = tEnd
		}
		go func() { defer gen.Done(); time.Sleep(time.Until(bs)); arrivals(bs, be, s.Burst.Rate, seed+23) }()
	}

	// snapshots
	offsets := make([]float64, 0, nSnap)
	var first time.Time
	for k := 0; k < nSnap; k++ {
		at := t0.Add(time.Duration(k) * interval)
		time.Sleep(time.Until(at))
		taken := time.Now()
		b, err := scrape(client, base)
		if err != nil {
			return fmt.Errorf("snapshot %d: %v", k, err)
		}
		if k == 0 {
			first = taken
		}
		offsets = append(offsets, math.Round(taken.Sub(first).Seconds()*1000)/1000)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("snap-%03d.prom", k)), b, 0o644); err != nil {
			return err
		}
		mu.Lock()
		n := len(results)
		mu.Unlock()
		fmt.Printf("  snap %02d at +%6.2fs  sent %d  %s\n", k, offsets[k], n, gauges(b))
	}
	gen.Wait()

	// let every request finish, bounded
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drain):
		fmt.Printf("  drain timeout: cancelling the requests still running\n")
		cancel()
		<-done
	}

	var win []*result
	for _, r := range results {
		if r.inWindow {
			win = append(win, r)
		}
	}
	sort.Slice(win, func(i, j int) bool { return win[i].start.Before(win[j].start) })
	benchStats, err := writeBench(filepath.Join(dir, "bench.json"), s, win, t0)
	if err != nil {
		return err
	}
	srv := serverSummary(dir, nSnap)
	obs := observed(benchStats, srv)
	if err := writeCase(filepath.Join(dir, "case.yaml"), s, simCommit, command, interval, offsets, obs); err != nil {
		return err
	}
	fmt.Printf("  %s\n", obs.text())
	return nil
}

func dur(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)) }

func waitReady(c *http.Client, base string, exited chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("the simulator exited")
		default:
		}
		resp, err := c.Get(base + "/v1/models")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("no /v1/models within 60 s")
}

func scrape(c *http.Client, base string) ([]byte, error) {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return b, nil
}

var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike
november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu river stone cloud
field light water forest paper garden window silver market engine signal orange yellow winter summer`)

// makeBody: a prompt of n words separated by spaces is n tokens to the
// simulator's dummy tokenizer (one token per \w+ run with its trailing space).
func makeBody(rng *rand.Rand, n, maxTokens int) []byte {
	var sb strings.Builder
	sb.Grow(n * 8)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[rng.IntN(len(words))])
	}
	b, _ := json.Marshal(map[string]any{
		"model": "sim-model", "prompt": sb.String(), "max_tokens": maxTokens, "ignore_eos": true,
		"temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true},
	})
	return b
}

type chunk struct {
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// do sends one streaming completion and fills r. TTFT is from sending to the
// first token chunk (so it includes any queue wait), e2e to the last token
// chunk; the ITLs are the gaps between token chunks. The closing chunk
// (empty text with a finish_reason) and the usage chunk are not tokens.
func do(ctx context.Context, c *http.Client, base string, body []byte, r *result) {
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	st := time.Now()
	r.start = st
	resp, err := c.Do(req)
	if err != nil {
		r.err = "request failed: " + err.Error()
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		r.err = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
		return
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var last time.Time
	for {
		line, err := br.ReadBytes('\n')
		now := time.Now()
		line = bytes.TrimSpace(line)
		if bytes.HasPrefix(line, []byte("data:")) {
			data := bytes.TrimSpace(line[5:])
			if string(data) == "[DONE]" {
				break
			}
			var ch chunk
			if e := json.Unmarshal(data, &ch); e != nil {
				r.err = "bad chunk: " + e.Error()
				return
			}
			if len(ch.Error) > 0 && string(ch.Error) != "null" {
				r.err = "stream error: " + string(ch.Error)
				return
			}
			if ch.Usage != nil {
				r.promptTokens, r.outTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
			}
			if len(ch.Choices) > 0 && (ch.Choices[0].Text != "" || ch.Choices[0].FinishReason == nil) {
				if r.chunks == 0 {
					r.ttft = now.Sub(st).Seconds()
				} else {
					r.itls = append(r.itls, now.Sub(last).Seconds())
				}
				r.chunks++
				last = now
			}
		}
		if err != nil {
			if err != io.EOF {
				r.err = "stream read: " + err.Error()
				return
			}
			break
		}
	}
	if r.chunks == 0 {
		r.err = "no tokens"
		return
	}
	r.e2e = last.Sub(st).Seconds()
}

// ---- bench.json ----

type dist struct{ mean, median, std, p90, p99, max float64 }

func stats(xs []float64) dist {
	if len(xs) == 0 {
		return dist{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	m := sum / float64(len(s))
	var v float64
	for _, x := range s {
		v += (x - m) * (x - m)
	}
	return dist{mean: m, median: pct(s, 50), std: math.Sqrt(v / float64(len(s))), p90: pct(s, 90), p99: pct(s, 99), max: s[len(s)-1]}
}

// pct: numpy's default (linear) percentile of sorted s.
func pct(s []float64, p float64) float64 {
	if len(s) == 1 {
		return s[0]
	}
	h := p / 100 * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

func r6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
func r5(x float64) float64 { return math.Round(x*1e5) / 1e5 }

type clientStats struct {
	n, completed, failed    int
	ttft, e2e, tpot, itl    dist
	outMismatch, inMismatch int
	duration                float64
}

func writeBench(path string, s Scenario, win []*result, t0 time.Time) (clientStats, error) {
	var cs clientStats
	cs.n = len(win)
	var (
		inputLens, outputLens []int
		ttfts, starts, ttftOK []float64
		e2es, tpots, itlFlat  []float64
		itls                  = [][]float64{}
		errs                  []string
		inTok, outTok         int
		lastEnd               float64
	)
	for _, r := range win {
		st := r.start.Sub(t0).Seconds()
		starts = append(starts, r6(st))
		in := r.promptWords
		if r.promptTokens >= 0 {
			in = r.promptTokens
			if r.promptTokens != r.promptWords {
				cs.inMismatch++
			}
		}
		inputLens = append(inputLens, in)
		if r.err != "" {
			cs.failed++
			ttfts = append(ttfts, 0)
			outputLens = append(outputLens, 0)
			itls = append(itls, []float64{})
			errs = append(errs, r.err)
			if end := st; end > lastEnd {
				lastEnd = end
			}
			continue
		}
		cs.completed++
		out := r.chunks
		if r.outTokens >= 0 {
			out = r.outTokens
			if r.outTokens != r.chunks {
				cs.outMismatch++
			}
		}
		inTok += in
		outTok += out
		outputLens = append(outputLens, out)
		ttfts = append(ttfts, r6(r.ttft))
		ttftOK = append(ttftOK, r.ttft)
		e2es = append(e2es, r.e2e)
		g := make([]float64, len(r.itls))
		for i, x := range r.itls {
			g[i] = r5(x)
		}
		itls = append(itls, g)
		itlFlat = append(itlFlat, r.itls...)
		if out > 1 {
			tpots = append(tpots, (r.e2e-r.ttft)/float64(out-1))
		}
		errs = append(errs, "")
		if end := st + r.e2e; end > lastEnd {
			lastEnd = end
		}
	}
	cs.duration = math.Max(lastEnd, s.WindowS)
	cs.ttft, cs.e2e, cs.tpot, cs.itl = stats(ttftOK), stats(e2es), stats(tpots), stats(itlFlat)
	out := map[string]any{
		"date": t0.UTC().Format("20060102-150405"), "backend": "openai", "endpoint_type": "openai",
		"label": "peersim-" + s.Name, "model_id": "sim-model", "tokenizer_id": "sim-model",
		"num_prompts": cs.n, "request_rate": s.Rate, "burstiness": 1.0, "max_concurrency": nil,
		"duration": r6(cs.duration), "completed": cs.completed, "failed": cs.failed,
		"total_input_tokens": inTok, "total_output_tokens": outTok,
		"request_throughput": r6(float64(cs.completed) / cs.duration), "request_goodput": nil,
		"output_throughput": r6(float64(outTok) / cs.duration), "total_token_throughput": r6(float64(inTok+outTok) / cs.duration),
		"input_lens": inputLens, "output_lens": outputLens, "ttfts": ttfts, "itls": itls,
		"start_times": starts, "errors": errs,
	}
	for name, d := range map[string]dist{"ttft": cs.ttft, "tpot": cs.tpot, "itl": cs.itl, "e2el": cs.e2e} {
		out["mean_"+name+"_ms"], out["median_"+name+"_ms"] = r6(d.mean*1000), r6(d.median*1000)
		out["std_"+name+"_ms"], out["p90_"+name+"_ms"], out["p99_"+name+"_ms"] = r6(d.std*1000), r6(d.p90*1000), r6(d.p99*1000)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return cs, err
	}
	return cs, os.WriteFile(path, append(b, '\n'), 0o644)
}

// ---- server-side summary from the snapshots ----

type serverStats struct {
	ok                                 bool
	runMean, runMax, waitMean, waitMax float64
	ttft, e2e, queue, itl, prefill     [2]float64 // delta sum, delta count
	queueFamily                        bool
	success                            float64
	kvMax                              float64
}

// families sums every sample of each metric name (labels ignored).
func families(b []byte) map[string]float64 {
	m := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		f := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
		if len(f) == 0 {
			continue
		}
		x, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		m[name] += x
	}
	return m
}

func gauges(b []byte) string {
	m := families(b)
	return fmt.Sprintf("running %g waiting %g", m["vllm:num_requests_running"], m["vllm:num_requests_waiting"])
}

func serverSummary(dir string, n int) serverStats {
	var s serverStats
	var fams []map[string]float64
	for k := 0; k < n; k++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("snap-%03d.prom", k)))
		if err != nil {
			return s
		}
		fams = append(fams, families(b))
	}
	if len(fams) < 2 {
		return s
	}
	s.ok = true
	for _, m := range fams {
		r, w := m["vllm:num_requests_running"], m["vllm:num_requests_waiting"]
		s.runMean += r / float64(len(fams))
		s.waitMean += w / float64(len(fams))
		s.runMax, s.waitMax = math.Max(s.runMax, r), math.Max(s.waitMax, w)
		s.kvMax = math.Max(s.kvMax, m["vllm:kv_cache_usage_perc"])
		if _, ok := m["vllm:request_queue_time_seconds_count"]; ok {
			s.queueFamily = true
		}
	}
	a, z := fams[0], fams[len(fams)-1]
	d := func(name string) [2]float64 {
		return [2]float64{z[name+"_sum"] - a[name+"_sum"], z[name+"_count"] - a[name+"_count"]}
	}
	s.ttft, s.e2e, s.queue = d("vllm:time_to_first_token_seconds"), d("vllm:e2e_request_latency_seconds"), d("vllm:request_queue_time_seconds")
	s.itl, s.prefill = d("vllm:inter_token_latency_seconds"), d("vllm:request_prefill_time_seconds")
	s.success = z["vllm:request_success_total"] - a["vllm:request_success_total"]
	return s
}

// ---- case.yaml ----

type obsv struct {
	c clientStats
	s serverStats
}

func observed(c clientStats, s serverStats) obsv { return obsv{c, s} }

func mean2(x [2]float64) float64 {
	if x[1] <= 0 {
		return math.NaN()
	}
	return x[0] / x[1]
}

func f3(x float64) string {
	if math.IsNaN(x) {
		return "null"
	}
	return strconv.FormatFloat(math.Round(x*1000)/1000, 'f', -1, 64)
}

func (o obsv) text() string {
	c, s := o.c, o.s
	t := fmt.Sprintf("Observed: %d requests started in the window, %d failed; client TTFT mean %s s (p99 %s s), e2e mean %s s (p99 %s s), median ITL %s ms",
		c.n, c.failed, f3(c.ttft.mean), f3(c.ttft.p99), f3(c.e2e.mean), f3(c.e2e.p99), f3(c.itl.median*1000))
	if s.ok {
		q := "no request waited (queue-time family absent)"
		if s.queueFamily {
			q = fmt.Sprintf("queue time mean %s s over %g requests that waited", f3(mean2(s.queue)), s.queue[1])
		}
		t += fmt.Sprintf("; server TTFT mean %s s, e2e mean %s s, ITL mean %s ms, %s; running mean %s (max %g), waiting mean %s (max %g).",
			f3(mean2(s.ttft)), f3(mean2(s.e2e)), f3(mean2(s.itl)*1000), q, f3(s.runMean), s.runMax, f3(s.waitMean), s.waitMax)
	}
	return t
}

func q(s string) string { return strconv.Quote(s) }

func writeCase(path string, s Scenario, simCommit, command string, interval time.Duration, offsets []float64, o obsv) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Recorded by diagnosis/testdata/peersim/record.go -scenario %s\n", s.Name)
	fmt.Fprintf(&b, "name: %s\n", s.Name)
	fmt.Fprintf(&b, "simulator: llm-d-inference-sim\n")
	fmt.Fprintf(&b, "sim_commit: %s\n", simCommit)
	fmt.Fprintf(&b, "command: %s\n", q(command))
	fmt.Fprintf(&b, "load:\n")
	fmt.Fprintf(&b, "  endpoint: /v1/completions (stream, include_usage, ignore_eos)\n")
	fmt.Fprintf(&b, "  arrivals: poisson\n")
	fmt.Fprintf(&b, "  rate_rps: %g\n", s.Rate)
	fmt.Fprintf(&b, "  prompt_tokens: [%d, %d]\n", s.Prompt[0], s.Prompt[1])
	fmt.Fprintf(&b, "  output_tokens: [%d, %d]\n", s.Output[0], s.Output[1])
	if s.Burst != nil {
		fmt.Fprintf(&b, "  burst: {rate_rps: %g, offset_s: %g, duration_s: %g}\n", s.Burst.Rate, s.Burst.OffsetS, s.Burst.DurationS)
	} else {
		fmt.Fprintf(&b, "  burst: null\n")
	}
	fmt.Fprintf(&b, "  warmup_s: %g\n", s.WarmupS)
	fmt.Fprintf(&b, "  window_s: %g\n", float64(len(offsets)-1)*interval.Seconds())
	fmt.Fprintf(&b, "  interval_s: %g\n", interval.Seconds())
	var offs []string
	for _, x := range offsets {
		offs = append(offs, strconv.FormatFloat(x, 'f', -1, 64))
	}
	fmt.Fprintf(&b, "scrape_offsets_s: [%s]\n", strings.Join(offs, ", "))
	fmt.Fprintf(&b, "verdict: %s\n", s.Verdict)
	acc := "[]"
	if len(s.Accept) > 0 {
		acc = "[" + strings.Join(s.Accept, ", ") + "]"
	}
	fmt.Fprintf(&b, "accept: %s\n", acc)
	fmt.Fprintf(&b, "reading: %s\n", q(s.Why+" "+o.text()))
	c, sv := o.c, o.s
	fmt.Fprintf(&b, "observed:\n")
	fmt.Fprintf(&b, "  requests: %d\n  failed: %d\n", c.n, c.failed)
	fmt.Fprintf(&b, "  client_ttft_s: {mean: %s, median: %s, p99: %s}\n", f3(c.ttft.mean), f3(c.ttft.median), f3(c.ttft.p99))
	fmt.Fprintf(&b, "  client_e2e_s: {mean: %s, median: %s, p99: %s}\n", f3(c.e2e.mean), f3(c.e2e.median), f3(c.e2e.p99))
	fmt.Fprintf(&b, "  client_itl_ms: {mean: %s, median: %s, p99: %s}\n", f3(c.itl.mean*1000), f3(c.itl.median*1000), f3(c.itl.p99*1000))
	fmt.Fprintf(&b, "  client_tpot_ms: {mean: %s, median: %s}\n", f3(c.tpot.mean*1000), f3(c.tpot.median*1000))
	if sv.ok {
		fmt.Fprintf(&b, "  server_ttft_mean_s: %s\n", f3(mean2(sv.ttft)))
		fmt.Fprintf(&b, "  server_e2e_mean_s: %s\n", f3(mean2(sv.e2e)))
		fmt.Fprintf(&b, "  server_itl_mean_ms: %s\n", f3(mean2(sv.itl)*1000))
		fmt.Fprintf(&b, "  server_queue_mean_s: %s\n", f3(mean2(sv.queue)))
		fmt.Fprintf(&b, "  server_queue_count: %g\n", sv.queue[1])
		fmt.Fprintf(&b, "  server_ttft_count: %g\n", sv.ttft[1])
		fmt.Fprintf(&b, "  server_success_count: %g\n", sv.success)
		fmt.Fprintf(&b, "  running: {mean: %s, max: %g}\n", f3(sv.runMean), sv.runMax)
		fmt.Fprintf(&b, "  waiting: {mean: %s, max: %g}\n", f3(sv.waitMean), sv.waitMax)
		fmt.Fprintf(&b, "  kv_cache_usage_max: %g\n", sv.kvMax)
	}
	fmt.Fprintf(&b, "  note: \"server_* are deltas between the first and last snapshot; client_* over the requests that started in the window\"\n")
	if c.inMismatch > 0 || c.outMismatch > 0 {
		fmt.Fprintf(&b, "  token_count_mismatches: {prompt: %d, output: %d}\n", c.inMismatch, c.outMismatch)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
