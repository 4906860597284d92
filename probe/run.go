package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/requests"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/rules"
)

// Why a probe ended before its plan.
const (
	StopInterrupted = "interrupted"
	StopDuration    = "duration limit reached"
	StopRequests    = "request limit reached"
	StopErrors      = "error rate above the limit"
	StopFirst       = "the first request failed"
)

// Run probes the target: a warm-up, the prompt-length sweep, then the
// load ladder, each within the limits. It returns what was measured even
// when it stops early (ctx cancelled, a limit reached; Result.Stopped says
// why); an error only when nothing could be measured: bad options, a
// target that does not answer /v1/models, a model it does not serve.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.Defaults()
	plan, err := MakePlan(o)
	if err != nil {
		return nil, err
	}
	set, cfg := o.Rules, o.Config
	if set == nil {
		if set, err = rules.Load(); err != nil {
			return nil, err
		}
	}
	if cfg == nil {
		cfg = &rules.Config{}
	}
	// The rules judge healthy against the probe's SLO, so that a step and
	// its diagnosis agree on what meeting it means.
	c2 := *cfg
	c2.SLO.TTFTP99, c2.SLO.TPOT, c2.SLO.E2EP99, c2.SLOFrom = o.SLO.TTFTP99, o.SLO.TPOTP50, o.SLO.E2EP99, "the probe's SLO"
	if c2.SLO.TPOT == 0 && o.SLO.ITLP99 == 0 {
		c2.SLO.TPOT = cfg.SLO.TPOT
	}
	cfg = &c2
	httpc := o.Client
	if httpc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = o.Limits.Concurrency + 4
		httpc = &http.Client{Timeout: o.Limits.RequestTimeout, Transport: tr}
		defer tr.CloseIdleConnections()
	}
	c := &Client{Base: plan.Target, Chat: o.Chat, Model: o.Model, APIKey: o.APIKey, Header: o.Header, HTTP: httpc}
	r := &runner{o: o, plan: plan, c: c, set: set, cfg: cfg,
		res: &Result{Schema: Schema, Target: plan.Target, API: plan.API, Plan: plan, DiagnosedStep: -1}}
	r.left.Store(int64(o.Limits.Requests))
	// A burst of one slot per concurrent request: a step's start is not
	// held back, its sustained rate is.
	r.limiter = rate.NewLimiter(rate.Limit(o.Limits.Rate), max(1, min(o.Limits.Concurrency, int(o.Limits.Rate))))
	seed := o.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	r.prompts = newPrompts(seed, o.Prefix)
	r.rng = rand.New(rand.NewSource(seed + 1))

	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	models, err := c.Models(mctx)
	cancel()
	if err != nil {
		return nil, err
	}
	if c.Model == "" {
		c.Model = models[0].ID
		if len(models) > 1 {
			r.note("the server lists %d models; probing the first, %s (--model picks another)", len(models), c.Model)
		}
	} else if !servesModel(models, c.Model) {
		return nil, fmt.Errorf("the server does not list model %q (it lists %s)", c.Model, modelIDs(models))
	}
	r.res.Model = c.Model
	for _, m := range models {
		if m.ID == c.Model && m.MaxModelLen > 0 {
			r.maxLen = m.MaxModelLen
		}
	}

	ctx, stop := context.WithTimeout(ctx, o.Limits.Duration)
	defer stop()
	r.start = time.Now()
	r.res.Started = r.start
	r.findMetrics(ctx)
	r.run(ctx)
	r.res.Seconds = time.Since(r.start).Seconds()
	r.finish()
	return r.res, nil
}

type runner struct {
	o       Options
	plan    Plan
	c       *Client
	set     *rules.Set
	cfg     *rules.Config
	res     *Result
	start   time.Time
	maxLen  int
	left    atomic.Int64
	limiter *rate.Limiter

	mu      sync.Mutex // guards what follows, and res's counters
	prompts *prompts
	rng     *rand.Rand
	backoff time.Duration
	resume  time.Time
	stopped string
	waited  int // requests the rate limit held back in the current step

	metrics, gpus   []string
	scrapeClient    *http.Client
	launchInput     *diagnosis.Input
	launchDiagnosis *advisor.Diagnosis
	diagnoses       []stepDiagnosis
}

func (r *runner) note(format string, args ...any) {
	r.res.Notes = append(r.res.Notes, fmt.Sprintf(format, args...))
}

func (r *runner) progress(format string, args ...any) {
	if r.o.Progress != nil {
		r.o.Progress(fmt.Sprintf(format, args...))
	}
}

func (r *runner) stop(why string) {
	r.mu.Lock()
	if r.stopped == "" {
		r.stopped = why
	}
	r.mu.Unlock()
}

func (r *runner) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped != ""
}

// send sends one request of about tokens prompt tokens within the limits.
// It reports false, sending nothing, when a limit or ctx stops it.
func (r *runner) send(ctx context.Context, tokens, output int) (Sample, bool) {
	if r.isStopped() {
		return Sample{}, false
	}
	if rv := r.limiter.Reserve(); rv.OK() {
		if d := rv.Delay(); d > 0 {
			if d > 10*time.Millisecond {
				r.mu.Lock()
				r.waited++
				r.mu.Unlock()
			}
			if !sleep(ctx, d) {
				rv.Cancel()
				return Sample{}, false
			}
		}
	}
	r.mu.Lock()
	wait := time.Until(r.resume)
	r.mu.Unlock()
	if wait > 0 && !sleep(ctx, wait) {
		return Sample{}, false
	}
	if ctx.Err() != nil {
		return Sample{}, false
	}
	// The request limit: taken before the request goes, never given back.
	if r.left.Add(-1) < 0 {
		r.stop(StopRequests)
		return Sample{}, false
	}
	if r.maxLen > 0 {
		tokens = min(tokens, r.maxLen-output-8)
	}
	r.mu.Lock()
	prompt, _ := r.prompts.make(tokens)
	r.res.Sent++
	r.mu.Unlock()
	s := r.c.Complete(ctx, r.start, prompt, output)
	s.Asked = tokens
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case s.Refused:
		r.res.Refused++
		r.res.Failed++
		r.backoff = min(8*time.Second, max(250*time.Millisecond, 2*r.backoff))
		r.resume = time.Now().Add(r.backoff)
	case !s.OK():
		r.res.Failed++
	default:
		r.backoff = 0
	}
	return s, true
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (r *runner) run(ctx context.Context) {
	if !r.warmup(ctx) {
		return
	}
	r.sweep(ctx)
	r.ladder(ctx)
	if r.o.Launch != 0 {
		r.launch(ctx)
	}
}

// launch runs the pre-launch step: open-loop Poisson arrivals at the
// launch rate (or a share of the capacity), with enough requests for a
// p99, after the ladder. It is kept apart from the ladder's steps.
func (r *runner) launch(ctx context.Context) {
	if r.isStopped() || ctx.Err() != nil {
		return
	}
	rate := r.o.Launch
	if rate < 0 {
		c := findCapacity(r.res.Steps)
		if c == nil || c.Throughput <= 0 {
			r.note("no load met the SLO: the launch run at a share of the capacity did not run")
			return
		}
		rate = -r.o.Launch * c.Throughput
	}
	rate = min(rate, r.o.Limits.Rate)
	n := max(LaunchRequests, r.o.StepRequests)
	// Its time is what its requests take at its rate, with room for the
	// last to finish, not the ladder's step time.
	span := max(r.o.StepTime, time.Duration(1.5*float64(n)/rate*float64(time.Second))+r.o.Limits.RequestTimeout)
	st, w, ok := r.runStep(ctx, rate, n, true, span)
	if !ok {
		return
	}
	d, in := r.diagnoseStep(&st, w)
	r.res.Launch = &st
	r.launchDiagnosis, r.launchInput = d, in
	if ctx.Err() != nil {
		r.stopForContext(ctx)
	}
}

// warmup sends short and long prompts, discarded from the figures, and
// learns how the server counts the probe's words.
func (r *runner) warmup(ctx context.Context) bool {
	r.progress("warm-up: %d requests", r.o.Warmup)
	var pairs [][2]float64
	lengths := []int{64, 512}
	for i := 0; i < r.o.Warmup; i++ {
		n := min(lengths[i%2], r.o.Limits.PromptTokens)
		r.mu.Lock()
		words := r.prompts.words(n)
		r.mu.Unlock()
		s, ok := r.send(ctx, n, min(8, r.o.Limits.OutputTokens))
		if !ok {
			return r.interrupted(ctx)
		}
		if !s.OK() {
			if i == 0 && !s.Refused && !s.Cut {
				r.stop(StopFirst)
				r.note("the first request failed: %s", s.Error)
				return false
			}
			continue
		}
		if s.Usage && s.Prompt > 0 {
			// The words the prompt held: the planned count, at least the head's.
			pairs = append(pairs, [2]float64{float64(max(words, 7)), float64(s.Prompt)})
		}
	}
	r.res.Tokens.Usage = len(pairs) > 0
	if !r.res.Tokens.Usage {
		r.note("the server reported no token counts (usage): prompt lengths are the planned ones, by words")
	}
	r.mu.Lock()
	r.prompts.calibrate(pairs)
	r.res.Tokens.Fixed, r.res.Tokens.PerWord = r.prompts.Fixed, r.prompts.PerWord
	r.mu.Unlock()
	return ctx.Err() == nil
}

func (r *runner) interrupted(ctx context.Context) bool {
	if ctx.Err() != nil {
		r.stopForContext(ctx)
	}
	return false
}

func (r *runner) stopForContext(ctx context.Context) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.stop(StopDuration)
	} else {
		r.stop(StopInterrupted)
	}
}

// sweep sends each length Repeats times at concurrency 1, the lengths
// interleaved so that drift does not tilt the fit.
func (r *runner) sweep(ctx context.Context) {
	r.progress("prompt-length sweep: %d lengths × %d at concurrency 1", len(r.plan.Lengths), r.o.Repeats)
	for k := 0; k < r.o.Repeats; k++ {
		for _, n := range r.plan.Lengths {
			s, ok := r.send(ctx, n, r.o.SweepOutput)
			if !ok {
				r.interrupted(ctx)
				return
			}
			if !s.Cut {
				r.res.Sweep.Samples = append(r.res.Sweep.Samples, s)
			}
		}
	}
}

// ladder raises the load until the SLO breaks, a limit is reached or the
// plan ends, then refines between the last load that met the SLO and the
// first that did not.
func (r *runner) ladder(ctx context.Context) {
	var broke bool
	for i, load := range r.plan.Loads {
		if r.isStopped() || ctx.Err() != nil {
			break
		}
		st := r.step(ctx, load, r.plan.StepRequests[i], false)
		if st == nil {
			break
		}
		if !st.MeetsSLO {
			broke = true
			break
		}
	}
	if broke && r.plan.Refine && !r.plan.OpenLoop {
		r.refine(ctx)
	}
	if ctx.Err() != nil {
		r.stopForContext(ctx)
	}
}

// refine bisects the concurrency between the capacity (the highest load
// below the first that missed the SLO) and that first miss, down to a
// step of an eighth of the lower load (at least 1), at most three steps.
func (r *runner) refine(ctx context.Context) {
	for range 3 {
		c := findCapacity(r.res.Steps)
		if c == nil || c.Broke < 0 {
			return
		}
		lo, hi := c.Load, r.res.Steps[c.Broke].Load
		if hi-lo <= math.Max(1, lo/8) {
			return
		}
		mid := math.Round((lo + hi) / 2)
		if mid <= lo || mid >= hi || r.isStopped() || ctx.Err() != nil {
			return
		}
		n := stepRequests(r.o.StepRequests, mid, false, r.o.StepTime)
		// The pre-launch run's requests are kept for it.
		if left := int(r.left.Load()) - r.plan.LaunchRequests; r.plan.Launch != 0 && left < n {
			r.note("concurrency %g was not measured: the request limit keeps %d requests for the pre-launch run", mid, r.plan.LaunchRequests)
			return
		}
		if r.step(ctx, mid, n, true) == nil {
			return
		}
	}
}

// step runs one load of the ladder and keeps it.
func (r *runner) step(ctx context.Context, load float64, n int, refined bool) *Step {
	st, w, ok := r.runStep(ctx, load, n, r.plan.OpenLoop, r.o.StepTime)
	if !ok {
		return nil
	}
	st.Refined = refined
	r.res.Steps = append(r.res.Steps, st)
	i := len(r.res.Steps) - 1
	if d, in := r.diagnoseStep(&r.res.Steps[i], w); d != nil {
		r.diagnoses = append(r.diagnoses, stepDiagnosis{i, d, in})
	}
	if st.TooManyErrors {
		r.stop(StopErrors)
	}
	if ctx.Err() != nil {
		r.stopForContext(ctx)
	}
	return &r.res.Steps[i]
}

// runStep runs one load: closed loop (load requests in flight, each
// replaced when it ends) or open loop (Poisson arrivals at load per
// second), until its n requests are done or stepTime passes; the engine's
// metrics are scraped meanwhile. It reports false when ctx stopped it
// before any request completed.
func (r *runner) runStep(ctx context.Context, load float64, n int, open bool, stepTime time.Duration) (Step, *window.Window, bool) {
	st := Step{Load: load, OpenLoop: open, Start: time.Since(r.start).Seconds()}
	kind := "concurrency"
	if st.OpenLoop {
		kind = "rate"
	}
	r.progress("load %s %g: %d requests", kind, load, n)
	sctx, cancel := context.WithTimeout(ctx, stepTime)
	defer cancel()
	r.mu.Lock()
	r.waited = 0
	r.mu.Unlock()
	scraped := r.scrapeDuring(sctx)
	t0 := time.Now()
	var (
		mu      sync.Mutex
		samples []Sample
		wg      sync.WaitGroup
	)
	record := func(s Sample) {
		mu.Lock()
		samples = append(samples, s)
		mu.Unlock()
	}
	held := 0
	if st.OpenLoop {
		slots := make(chan struct{}, r.o.Limits.Concurrency)
		next := time.Now()
		for i := 0; i < n; i++ {
			r.mu.Lock()
			gap := r.rng.ExpFloat64() / load
			r.mu.Unlock()
			next = next.Add(time.Duration(gap * float64(time.Second)))
			if !sleep(sctx, time.Until(next)) {
				break
			}
			select {
			case slots <- struct{}{}:
			default:
				held++
				select {
				case slots <- struct{}{}:
				case <-sctx.Done():
				}
			}
			if sctx.Err() != nil {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				if s, ok := r.send(sctx, r.ladderTokens(), r.o.OutputTokens); ok {
					record(s)
				}
			}()
		}
	} else {
		var started atomic.Int64
		for range int(load) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for started.Add(1) <= int64(n) {
					s, ok := r.send(sctx, r.ladderTokens(), r.o.OutputTokens)
					if !ok {
						return
					}
					record(s)
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(t0)
	w := scraped()
	if ctx.Err() != nil && len(samples) == 0 {
		return st, nil, false
	}
	st.Seconds = elapsed.Seconds()
	sort.Slice(samples, func(i, j int) bool { return samples[i].Start < samples[j].Start })
	st.Requests = samples
	r.mu.Lock()
	waited := r.waited
	r.mu.Unlock()
	st.ClientLimited = float64(waited) > 0.1*float64(max(1, len(samples))) || float64(held) > 0.1*float64(max(1, len(samples)))
	if sctx.Err() != nil && ctx.Err() == nil && len(samples) < n {
		r.note("%s %g: the step's time (%s) ran out after %d of %d requests", kind, load, stepTime, len(samples), n)
	}
	summariseStep(&st, r.o.SLO, r.o.Limits.ErrorRate)
	return st, w, true
}

// ladderTokens draws a ladder prompt's length, uniform over the plan's range.
func (r *runner) ladderTokens() int {
	lo, hi := r.plan.PromptTokens[0], r.plan.PromptTokens[1]
	r.mu.Lock()
	defer r.mu.Unlock()
	return lo + r.rng.Intn(hi-lo+1)
}

func servesModel(ms []Model, id string) bool {
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}

func modelIDs(ms []Model) string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	sort.Strings(ids)
	if len(ids) > 5 {
		ids = append(ids[:5], "…")
	}
	return fmt.Sprint(ids)
}

// records turns samples into request records for the pipeline.
func records(ss []Sample) []requests.Record {
	var out []requests.Record
	yes := true
	for _, s := range ss {
		if s.Cut {
			continue
		}
		rec := requests.Record{ID: "", Start: s.Start, Prompt: float64(s.Prompt), Output: float64(s.Output),
			TTFT: s.TTFT, E2E: s.E2E, ITLs: s.ITLs, Streaming: &yes, Error: s.Error,
			Queue: math.NaN(), Prefill: math.NaN(), Decode: math.NaN(), ServerTTFT: math.NaN(), MaxTokens: math.NaN()}
		if !s.Usage {
			rec.Prompt = float64(s.Asked)
		}
		if s.MaxTokens > 0 {
			rec.MaxTokens = float64(s.MaxTokens)
		}
		if !s.OK() {
			rec.TTFT, rec.E2E = math.NaN(), math.NaN()
		}
		out = append(out, rec)
	}
	return out
}
