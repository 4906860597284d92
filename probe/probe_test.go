package probe

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// quick are options that keep a probe of the test server short.
func quick(target string) Options {
	return Options{Target: target, Lengths: []int{64, 256, 512}, Repeats: 2, Warmup: 2, SweepOutput: 4,
		PromptTokens: 64, OutputTokens: 8, StepRequests: 8, StepTime: 10 * time.Second, Seed: 1, NoMetrics: true,
		Limits: Limits{Requests: 200, Rate: 1000, Concurrency: 8, Duration: time.Minute, OutputTokens: 64,
			PromptTokens: 4096, ErrorRate: 0.05, RequestTimeout: 10 * time.Second}}
}

func TestProbeMeasuresWhatTheServerDoes(t *testing.T) {
	// Timings coarse enough that a loaded machine's scheduling jitter
	// (a few ms) stays small beside them; docs/probe.md holds the probe
	// to 10 % against the simulators.
	s := &stream{base: 20 * time.Millisecond, perToken: 200 * time.Microsecond, gap: 15 * time.Millisecond,
		slots: make(chan struct{}, 2)}
	srv := newStream(t, s)
	o := quick(srv.URL)
	o.SLO = SLO{TTFTP99: 100 * time.Millisecond}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "fake-model" || res.Stopped != "" {
		t.Fatalf("model %q stopped %q", res.Model, res.Stopped)
	}
	if int64(res.Sent) != s.requests.Load() {
		t.Errorf("the probe counted %d requests, the server %d", res.Sent, s.requests.Load())
	}
	f := res.Sweep.Fit
	if f == nil {
		t.Fatalf("no fit: %s", res.Sweep.FitNote)
	}
	if got, want := f.PerKToken, 0.200; math.Abs(got-want) > 0.25*want {
		t.Errorf("prefill per 1k tokens %.4fs, configured %.4fs", got, want)
	}
	if res.ITL == nil || math.Abs(res.ITL.P50-0.015) > 0.25*0.015 {
		t.Errorf("inter-token latency alone %+v, configured 15ms", res.ITL)
	}
	// Two slots, a request takes about 140 ms: at concurrency 2 nothing
	// waits (TTFT about 35 ms); at 3 and 4 a request waits for a whole
	// one (about 175 ms, past the 100 ms target). The ladder 1, 2, 4
	// breaks at 4 and refines to 3.
	c := res.Capacity
	if c == nil || c.Load != 2 || c.Broke < 0 || res.Steps[c.Broke].Load != 3 || c.AtLeast {
		t.Fatalf("capacity %+v; steps %+v", c, loads(res))
	}
	if res.DiagnosedStep != c.Broke || res.Steps[c.Broke].Verdict == "" {
		t.Errorf("diagnosed step %d, want the one that broke the SLO (%d) with a verdict", res.DiagnosedStep, c.Broke)
	}
}

func loads(res *Result) []string {
	var out []string
	for _, s := range res.Steps {
		out = append(out, strings.Join(append([]string{time.Duration(s.TTFT.P99 * 1e9).String()}, s.Misses...), " "))
	}
	return out
}

func TestRequestLimitIsNeverExceeded(t *testing.T) {
	for _, limit := range []int{1, 5, 17, 40} {
		s := &stream{base: time.Millisecond, gap: 200 * time.Microsecond}
		srv := newStream(t, s)
		o := quick(srv.URL)
		o.Limits.Requests = limit
		o.Concurrency = []int{1, 4, 8}
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.requests.Load(); got > int64(limit) || int64(res.Sent) != got {
			t.Errorf("limit %d: the server saw %d requests, the probe counted %d", limit, got, res.Sent)
		}
		if res.Stopped != StopRequests {
			t.Errorf("limit %d: stopped %q", limit, res.Stopped)
		}
	}
}

func TestInterruptReportsWhatWasMeasured(t *testing.T) {
	s := &stream{base: time.Millisecond, gap: 2 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ladder int64
	s.onRequest = func(n int64) {
		// Warm-up 2 + sweep 6, then the ladder: stop in its third step.
		if n == 8+8+8+4 {
			ladder = n
			cancel()
		}
	}
	srv := newStream(t, s)
	o := quick(srv.URL)
	begin := time.Now()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if ladder == 0 || res.Stopped != StopInterrupted {
		t.Fatalf("stopped %q after %d requests", res.Stopped, s.requests.Load())
	}
	if time.Since(begin) > 5*time.Second {
		t.Errorf("took %s to stop", time.Since(begin))
	}
	if res.Sweep.Fit == nil || len(res.Steps) < 2 || res.Steps[0].Completed == 0 {
		t.Errorf("what was measured before the stop is missing: fit %v, %d steps", res.Sweep.Fit, len(res.Steps))
	}
	if got := s.requests.Load(); got > ladder+int64(o.Limits.Concurrency) {
		t.Errorf("%d requests sent after the interrupt", got-ladder)
	}
}

func TestAPIKeyIsSentAndNeverShown(t *testing.T) {
	const key = "sk-probe-SECRET-7731"
	s := &stream{base: time.Millisecond, gap: time.Millisecond, key: key}
	srv := newStream(t, s)
	o := quick(srv.URL)
	o.APIKey = key
	o.Limits.Requests = 20
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed > 0 {
		t.Fatalf("%d requests failed: the key was not sent", res.Failed)
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), key) || strings.Contains(string(b), "SECRET") {
		t.Error("the result holds the API key")
	}
	o.APIKey = "sk-wrong-SECRET-0000"
	_, err = Run(context.Background(), o)
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("a refused key: %v", err)
	}
}

func TestRefusalsBackOffAndCount(t *testing.T) {
	s := &stream{base: time.Millisecond, gap: time.Millisecond, status: func(n int64) int {
		if n > 4 && n%3 == 0 {
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	}}
	srv := newStream(t, s)
	o := quick(srv.URL)
	o.Concurrency = []int{1}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Refused == 0 || res.Refused != res.Failed {
		t.Errorf("refused %d, failed %d", res.Refused, res.Failed)
	}
}

func TestLaunchRunsAtAShareOfTheCapacity(t *testing.T) {
	s := &stream{base: 2 * time.Millisecond, gap: time.Millisecond, slots: make(chan struct{}, 4)}
	srv := newStream(t, s)
	o := quick(srv.URL)
	o.Limits.Requests = 600
	o.Launch = -0.8
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Launch != -0.8 || res.Plan.LaunchRequests != LaunchRequests {
		t.Errorf("plan launch %g × %d", res.Plan.Launch, res.Plan.LaunchRequests)
	}
	c, l := res.Capacity, res.Launch
	if c == nil || l == nil {
		t.Fatalf("capacity %+v, launch %+v, notes %q", c, l, res.Notes)
	}
	if !l.OpenLoop || math.Abs(l.Load-0.8*c.Throughput) > 1e-9 {
		t.Errorf("launch load %g (open loop %v), want 0.8 × %g", l.Load, l.OpenLoop, c.Throughput)
	}
	if l.Completed < LaunchRequests || !l.MeetsSLO {
		t.Errorf("launch completed %d (want ≥ %d), meets the SLO %v: %v", l.Completed, LaunchRequests, l.MeetsSLO, l.Misses)
	}
	// Poisson arrivals at the asked rate: over 200 the mean gap is within
	// a few of its standard errors.
	if got := float64(l.Sent) / l.Seconds; got > 1.5*l.Load {
		t.Errorf("launch sent %.1f/s, asked %.1f/s", got, l.Load)
	}
	if int64(res.Sent) != s.requests.Load() || res.Sent > o.Limits.Requests {
		t.Errorf("sent %d, server saw %d, limit %d", res.Sent, s.requests.Load(), o.Limits.Requests)
	}
	for _, st := range res.Steps {
		if st.Start == l.Start {
			t.Errorf("the launch run is among the ladder's steps")
		}
	}
}

func TestLaunchNeedsACapacity(t *testing.T) {
	s := &stream{base: 2 * time.Millisecond, gap: time.Millisecond}
	srv := newStream(t, s)
	o := quick(srv.URL)
	o.Concurrency = []int{1}
	o.SLO = SLO{TTFTP99: time.Millisecond} // nothing meets it
	o.Launch = -0.8
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Capacity != nil || res.Launch != nil {
		t.Fatalf("capacity %+v, launch %+v", res.Capacity, res.Launch)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "launch run") {
		t.Errorf("no note says the launch run did not run: %q", res.Notes)
	}
}

// A load that met the SLO above one that missed it is not the capacity:
// the capacity is the highest load below the first miss.
func TestCapacityStopsAtTheFirstMiss(t *testing.T) {
	step := func(load float64, meets bool) Step {
		return Step{Load: load, Completed: 24, Throughput: load, MeetsSLO: meets}
	}
	c := findCapacity([]Step{step(1, true), step(2, true), step(8, true), step(4, false), step(3, true)})
	if c == nil || c.Load != 3 || c.Broke != 3 || c.AtLeast {
		t.Fatalf("capacity %+v, want load 3 broken at step 3 (load 4)", c)
	}
	if c := findCapacity([]Step{step(1, false), step(2, true)}); c != nil {
		t.Errorf("capacity %+v above a miss at the lowest load", c)
	}
}

// Refinement does not eat the pre-launch run's requests.
func TestRefinementKeepsTheLaunchRunsRequests(t *testing.T) {
	// Two slots, a request about 27 ms: concurrency 4 waits a whole one.
	s := &stream{base: 5 * time.Millisecond, perToken: 20 * time.Microsecond, gap: 3 * time.Millisecond,
		slots: make(chan struct{}, 2)}
	srv := newStream(t, s)
	o := quick(srv.URL)
	o.SLO = SLO{TTFTP99: 20 * time.Millisecond}
	o.Launch = -0.8
	// Warm-up 2, sweep 6, ladder 8+8+16: 40; the launch keeps 200; the
	// refinement to 3 (12 requests) does not fit in 245.
	o.Limits.Requests = 245
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Capacity; c == nil || c.Broke < 0 {
		t.Fatalf("capacity %+v: the test needs a load that broke the SLO", c)
	}
	for _, st := range res.Steps {
		if st.Refined {
			t.Errorf("a refined load %g ran with %d requests left for a 200-request launch run", st.Load, o.Limits.Requests-res.Sent)
		}
	}
	if res.Launch == nil || res.Launch.Sent != LaunchRequests || !strings.Contains(strings.Join(res.Notes, "\n"), "keeps 200 requests for the pre-launch run") {
		t.Errorf("launch %+v, notes %q", res.Launch, res.Notes)
	}
}
