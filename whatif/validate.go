package whatif

//go:generate go run ./gendocs ../docs/whatif.md

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/sim"
)

// The validation set: random simulator scenarios, each diagnosed, its top
// priced step predicted from a calibration, and the prediction checked by
// running the scenario itself with the same change. Scenarios are drawn in
// batches until ValidationWant predictions were made.
const (
	ValidationSeed  = 1
	ValidationWant  = 60
	validationBatch = 40
	validationMax   = 800
)

// Case is one validation scenario.
type Case struct {
	Index    int
	Scenario string
	// Bottleneck is the diagnosis's verdict.
	Bottleneck string
	// Whatif is the top next step's change; empty when no step has one.
	Whatif string
	// Why says why nothing was predicted.
	Why         string
	ReplayError float64
	Reproduced  bool
	// Missed is the figure a replay that was not reproduced missed most.
	Missed string
	Change string
	// Note is the effect's note (requests still wait, …).
	Note string
	// Figures are predicted and measured after the change, by name.
	Predicted, Actual, Observed map[string]float64
}

// Predicted reports whether the case made a prediction.
func (c Case) PredictedAny() bool { return len(c.Predicted) > 0 }

// Error is the relative error of one predicted figure, NaN when absent.
func (c Case) Error(name string) float64 {
	p, a := c.Predicted[name], c.Actual[name]
	if _, ok := c.Predicted[name]; !ok || math.IsNaN(a) || a <= 0 {
		return math.NaN()
	}
	return math.Abs(p-a) / a
}

// validationScenario draws scenario i; it depends on nothing else.
func validationScenario(seed int64, i int) *sim.Scenario {
	r := rand.New(rand.NewSource(seed*7919 + int64(i)))
	return sim.RandomScenario(r, i)
}

// Validate draws scenarios from seed, a batch at a time on a few
// goroutines, until want of them made a prediction (or max were drawn). It
// returns every case drawn, in order.
func Validate(ctx context.Context, seed int64, want, most int, o Options) ([]Case, error) {
	var out []Case
	predicted := 0
	for start := 0; predicted < want && start < most; start += validationBatch {
		n := min(validationBatch, most-start)
		batch := make([]Case, n)
		errs := make([]error, n)
		next := make(chan int)
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					batch[i], errs[i] = validateOne(ctx, validationScenario(seed, start+i), start+i, o)
				}
			}()
		}
		for i := 0; i < n; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return nil, err
			}
			if batch[i].PredictedAny() {
				predicted++
			}
		}
		out = append(out, batch...)
	}
	return out, nil
}

func validateOne(ctx context.Context, sc *sim.Scenario, i int, o Options) (Case, error) {
	c := Case{Index: i, Scenario: sc.Name}
	d, err := simulate(ctx, sc, o)
	if err != nil {
		return c, fmt.Errorf("%s: %w", sc.Name, err)
	}
	if len(d.Targets) == 0 {
		c.Why = "no target"
		return c, nil
	}
	t := &d.Targets[0]
	c.Bottleneck = t.Primary.Bottleneck
	for _, s := range t.Next {
		if s.Whatif != "" {
			c.Whatif = s.Whatif
			break
		}
	}
	if c.Whatif == "" {
		c.Why = "no next step names a change"
		return c, nil
	}
	o.MaxSteps = 1
	cal := Calibrate(ctx, t, o)
	c.ReplayError, c.Reproduced, c.Missed = cal.Error, cal.Reproduced, cal.Missed
	if len(cal.Steps) == 0 || cal.Steps[0].Effect == nil {
		c.Why = cal.Why
		if len(cal.Steps) > 0 {
			c.Why = strings.TrimPrefix(cal.Steps[0].Why, "not predicted: ")
		}
		return c, nil
	}
	p := cal.Steps[0]
	c.Change, c.Note = p.Effect.Change, p.Effect.Note
	truth, err := simulate(ctx, p.Change.Apply(sc), o)
	if err != nil {
		return c, fmt.Errorf("%s with %s: %w", sc.Name, p.Effect.Change, err)
	}
	if len(truth.Targets) == 0 {
		c.Why = "the changed scenario has no target"
		return c, nil
	}
	c.Predicted, c.Actual, c.Observed = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, f := range p.Effect.Figures {
		c.Predicted[f.Name], c.Observed[f.Name] = f.Predicted, f.Observed
	}
	for _, f := range predicted {
		c.Actual[f.name] = evidence.TreeNumber(truth.Targets[0].Evidence, f.path)
	}
	return c, nil
}

// quantile of xs (sorted in place), NaN when empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sort.Float64s(xs)
	return xs[min(len(xs)-1, int(q*float64(len(xs))))]
}

// Errors gathers one figure's relative errors over the cases that predicted.
func Errors(cs []Case, name string) []float64 {
	var out []float64
	for _, c := range cs {
		if e := c.Error(name); !math.IsNaN(e) {
			out = append(out, e)
		}
	}
	return out
}

// Direction is the share of predictions that moved a figure the way the
// change did (both down, both up, or both within 10%).
func Direction(cs []Case, name string) float64 {
	var n, ok float64
	for _, c := range cs {
		p, a, o := c.Predicted[name], c.Actual[name], c.Observed[name]
		if !c.PredictedAny() || math.IsNaN(a) || !(o > 0) {
			continue
		}
		n++
		if sign(p/o) == sign(a/o) {
			ok++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return ok / n
}

func sign(ratio float64) int {
	switch {
	case ratio < 0.9:
		return -1
	case ratio > 1.1:
		return 1
	}
	return 0
}

// figureNames are the predicted figures, in the order reports show them.
var figureNames = []string{"ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "e2e_p50", "e2e_p99"}

// Summary is one figure's prediction error over the validation set.
type Summary struct {
	Name           string
	N              int
	Median, P90    float64
	Within25, Fold float64 // shares within ±25% and within a factor of 2
	Direction      float64
}

// Summarize gives each predicted figure's error distribution.
func Summarize(cs []Case) []Summary {
	var out []Summary
	for _, name := range figureNames {
		es := Errors(cs, name)
		s := Summary{Name: name, N: len(es), Median: quantile(es, 0.5), P90: quantile(es, 0.9), Direction: Direction(cs, name)}
		var w, f float64
		for _, c := range cs {
			p, a := c.Predicted[name], c.Actual[name]
			if e := c.Error(name); !math.IsNaN(e) {
				if e <= 0.25 {
					w++
				}
				if p > 0 && a > 0 && math.Abs(math.Log2(p/a)) <= 1 {
					f++
				}
			}
		}
		if s.N > 0 {
			s.Within25, s.Fold = w/float64(s.N), f/float64(s.N)
		}
		out = append(out, s)
	}
	return out
}

// Demo is a built-in scenario's first priced step, predicted and measured.
type Demo struct {
	Scenario, Change string
	Figures          []DemoFigure
}

// DemoFigure is one figure of a Demo.
type DemoFigure struct {
	Name                        string
	Observed, Predicted, Actual float64
}

// RunDemo predicts a built-in scenario's first priced step and measures it
// by running the scenario with the change.
func RunDemo(ctx context.Context, name string, o Options) (Demo, error) {
	sc, err := sim.Load(name)
	if err != nil {
		return Demo{}, err
	}
	d, err := simulate(ctx, sc, o)
	if err != nil {
		return Demo{}, fmt.Errorf("%s: no diagnosis: %w", name, err)
	}
	if len(d.Targets) == 0 {
		return Demo{}, fmt.Errorf("%s: no diagnosis: no target", name)
	}
	o.MaxSteps = 1
	cal := Calibrate(ctx, &d.Targets[0], o)
	if len(cal.Steps) == 0 || cal.Steps[0].Effect == nil {
		why := cal.Why
		if len(cal.Steps) > 0 {
			why = cal.Steps[0].Why
		}
		return Demo{}, fmt.Errorf("%s: no prediction: %s", name, why)
	}
	p := cal.Steps[0]
	truth, err := simulate(ctx, p.Change.Apply(sc), o)
	if err != nil {
		return Demo{}, fmt.Errorf("%s with %s: %w", name, p.Effect.Change, err)
	}
	if len(truth.Targets) == 0 {
		return Demo{}, fmt.Errorf("%s with %s: no target", name, p.Effect.Change)
	}
	out := Demo{Scenario: name, Change: p.Effect.Change}
	for _, f := range p.Effect.Figures {
		for _, want := range predicted {
			if want.name == f.Name {
				out.Figures = append(out.Figures, DemoFigure{f.Name, f.Observed, f.Predicted, evidence.TreeNumber(truth.Targets[0].Evidence, want.path)})
			}
		}
	}
	return out, nil
}

// Page runs the validation and the queue-bound demo's check and renders
// docs/whatif.md.
func Page(ctx context.Context, o Options) (string, error) {
	cs, err := Validate(ctx, ValidationSeed, ValidationWant, validationMax, o)
	if err != nil {
		return "", err
	}
	demo, err := RunDemo(ctx, "queue-bound", o)
	if err != nil {
		return "", err
	}
	return ValidationReport(cs, demo, DefaultTolerance), nil
}

// ValidationReport writes docs/whatif.md from the validation set and the
// demo's check.
func ValidationReport(cs []Case, demo Demo, tolerance float64) string {
	var b strings.Builder
	pf := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	var withChange, reproduced, predicted int
	declined := map[string]int{}
	kinds := map[string]int{}
	for _, c := range cs {
		if c.Whatif == "" {
			continue
		}
		withChange++
		if c.Reproduced {
			reproduced++
		}
		if c.PredictedAny() {
			predicted++
			kinds[c.Whatif]++
			continue
		}
		why := c.Why
		switch {
		case c.Missed != "":
			why = "the replay missed " + c.Missed
		case strings.HasPrefix(why, "cannot calibrate"):
			why = "cannot calibrate"
		case strings.Contains(why, "contradicts itself"):
			why = "the evidence contradicts itself"
		case strings.HasPrefix(why, "the replay failed"):
			why = "the replay failed"
		case c.Reproduced:
			// One reason, whatever its numbers: budgets and counts vary.
			why = "the change cannot be priced: " + digits.ReplaceAllString(why, "N")
		}
		declined[why]++
	}
	pf("# How far whatif's predictions miss\n\n")
	pf("<!-- Generated by `go generate ./whatif`; a test fails when it is stale. -->\n\n")
	pf("`llmdoctor whatif` (and `diagnose --whatif`) fits a scenario of the continuous-batching simulator to a\n")
	pf("window's evidence, replays it unchanged, and only when every counted figure of the replay is within\n")
	pf("%.0f%% of the observed one predicts what each next step's change would do. Counted are TTFT, ITL and\n", 100*tolerance)
	pf("E2E at mean and p99, mean queue time, mean running requests, KV peak and the finished rate; a\n")
	pf("quantile anywhere inside the histogram bucket it was observed in counts as met, and the mean\n")
	pf("inter-token time, which the step cost is fitted to, counts as a check that the fit converged. The\n")
	pf("waiting gauge is shown, not counted. This page checks those predictions\n")
	pf("against ground truth: random scenarios of the simulator (seed %d, the space docs/accuracy.md draws\n", ValidationSeed)
	pf("from: models, GPUs, tensor parallelism, engine limits, chunked prefill, prefix reuse, lengths,\n")
	pf("bursty arrivals, load from light to overloaded) are each diagnosed end to end, the top next step that\n")
	pf("names a change is predicted from the calibration, and then the scenario itself is run with exactly\n")
	pf("that change and measured through the same metrics path.\n\n")
	pf("**%d scenarios drawn; %d had a next step naming a change; %d of those replayed within tolerance\n", len(cs), withChange, reproduced)
	pf("and %d were predicted.** The rest were declined, which is the point of the replay: a window the\n", predicted)
	pf("calibration cannot reproduce gets no numbers.\n\n")
	pf("## Prediction error\n\n")
	pf("Error is |predicted − measured| ÷ measured, per figure, over the %d predictions. Latency\n", predicted)
	pf("quantiles come from the engine's histograms on both sides, so a figure's own bucket width is part\n")
	pf("of the error. *Direction* is the share where prediction and measurement agree on down, up or\n")
	pf("unchanged (within 10%%) against the observed window.\n\n")
	pf("| figure | predictions | median error | p90 error | within ±25%% | within ×2 | direction |\n")
	pf("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range Summarize(cs) {
		pf("| %s | %d | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% |\n", s.Name, s.N, 100*s.Median, 100*s.P90, 100*s.Within25, 100*s.Fold, 100*s.Direction)
	}
	var queued, clear []Case
	for _, c := range cs {
		if c.PredictedAny() && c.Note != "" {
			queued = append(queued, c)
		} else if c.PredictedAny() {
			clear = append(clear, c)
		}
	}
	q := func(cs []Case, p float64) float64 { return quantile(Errors(cs, "ttft_p99"), p) }
	pf("\n%d of the %d predictions say that requests still wait after the change (the effect's note: near\n", len(queued), predicted)
	pf("capacity, where a small error in the fitted step cost moves TTFT most). Their TTFT p99 error is\n")
	pf("%.0f%% at the median and %.0f%% at p90, against %.0f%% and %.0f%% for the %d that leave no queue.\n",
		100*q(queued, 0.5), 100*q(queued, 0.9), 100*q(clear, 0.5), 100*q(clear, 0.9), len(clear))
	if q(queued, 0.9) > 1.5*q(clear, 0.9) {
		pf("The largest misses are among them: read a prediction with that note as a direction, not a number.\n")
	}
	pf("\nPredictions by change: %s.\n\n", counts(kinds))
	pf("Declined: %s.\n\n", counts(declined))
	pf("## The queue-bound demo\n\n")
	pf("`llmdoctor whatif --scenario %s` predicts its first next step (%s); the same change\n", demo.Scenario, demo.Change)
	pf("run in the simulator measures:\n\n")
	pf("| figure | observed | predicted | measured | error |\n|---|---:|---:|---:|---:|\n")
	for _, f := range demo.Figures {
		e := "—"
		if f.Actual > 0 {
			e = fmt.Sprintf("%.0f%%", 100*math.Abs(f.Predicted-f.Actual)/f.Actual)
		}
		pf("| %s | %s | %s | %s | %s |\n", f.Name, FigureText(f.Name, f.Observed), FigureText(f.Name, f.Predicted), FigureText(f.Name, f.Actual), e)
	}
	pf("\n## The worst predictions\n\n")
	type miss struct {
		c    Case
		name string
		e    float64
	}
	var ms []miss
	for _, c := range cs {
		if !c.PredictedAny() {
			continue
		}
		worst := miss{c: c}
		for _, n := range figureNames {
			if e := c.Error(n); e > worst.e {
				worst.name, worst.e = n, e
			}
		}
		ms = append(ms, worst)
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].e > ms[j].e })
	pf("| scenario | change | figure | observed | predicted | measured | replay error |\n|---|---|---|---:|---:|---:|---:|\n")
	for _, m := range ms[:min(len(ms), 8)] {
		pf("| %s | %s | %s | %s | %s | %s | %.0f%% |\n", m.c.Scenario, m.c.Change, m.name, FigureText(m.name, m.c.Observed[m.name]),
			FigureText(m.name, m.c.Predicted[m.name]), FigureText(m.name, m.c.Actual[m.name]), 100*m.c.ReplayError)
	}
	worst := ms[:min(len(ms), 8)]
	noted := 0
	for _, m := range worst {
		if m.c.Note != "" {
			noted++
		}
	}
	pf("\n%d of these %d carry the note that requests still wait after the change.", noted, len(worst))
	if 2*noted > len(worst) {
		pf(" Most large misses are\nwindows near capacity: where a change leaves the engine close to saturated, a few percent of error in\n")
		pf("the fitted step cost decides whether a queue forms, and the queue decides TTFT. The replay cannot see\n")
		pf("that error, because it runs at the observed operating point.")
	}
	pf("\n\n")
	pf("## Where the simulator is too simple to trust\n\n")
	pf("This validation runs the calibration against the simulator's own physics, so it measures how well a\n")
	pf("fit to one window extrapolates to another setting, not how faithful the simulator is to vLLM. What it\n")
	pf("leaves out, and what would make it better:\n\n")
	pf("- **Step cost is a roofline with four fitted numbers** (CPU time, memory time of the weights,\n")
	pf("  memory time per token of context, compute per token). Real kernels change speed with batch shape (CUDA graph sizes,\n")
	pf("  attention kernels by context length, MoE expert load). A per-step time histogram from the engine,\n")
	pf("  or a short benchmark sweep of batch sizes, would fit it instead of extrapolating.\n")
	pf("- **One operating point.** The window shows the step time at one batch size; how it grows with the\n")
	pf("  batch comes from DCGM's memory traffic when it is there and from the fit's split otherwise, which\n")
	pf("  is a guess. Windows at two loads (see `compare`) would pin it.\n")
	pf("- **Lengths are lognormal, fitted to coarse buckets** (1-2-5 token buckets): a mixture of short\n")
	pf("  chats and long documents is flattened. Request logs with lengths would give the real distribution.\n")
	pf("- **Arrivals are Poisson or gamma-bursty at a constant rate**; diurnal swings, retries and\n")
	pf("  client-side concurrency limits are not modelled. A closed-loop client shows up only as a queue.\n")
	pf("- **The scheduler is FCFS continuous batching** with recompute preemption; no priorities, no\n")
	pf("  swap to CPU, no speculative decoding, no async scheduling, no disaggregated prefill.\n")
	pf("- **Prefix reuse is one shared prefix** sized to the observed hit rate; how much more could be\n")
	pf("  shared when caching is off, or prompts made identical, cannot be seen, so those steps are not priced.\n")
	pf("- **One more replica splits the rate evenly**, as a perfect load balancer would; real routing is\n")
	pf("  lumpier, so the tail gains less.\n")
	pf("- **One engine.** A target that sums several engines or replicas is refused (group by instance to\n")
	pf("  calibrate each); this page validates single-engine windows only, tensor parallelism included.\n")
	pf("- **MoE expert reads** grow with the tokens in a step (more experts touched); the fitted roofline\n")
	pf("  reads the same weights every step, so MoE windows with mixed prefill and decode replay worse.\n")
	pf("- **Engine settings the metrics do not show** (max_num_seqs, the token budget, chunked prefill)\n")
	pf("  are inferred or searched for; `--assume` sets them when you know them, and then they are not guessed.\n")
	return b.String()
}

var digits = regexp.MustCompile(`[0-9]+`)

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
