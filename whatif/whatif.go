// Package whatif predicts what a diagnosis's next steps would do. From a
// target's evidence it calibrates a scenario of the continuous-batching
// simulator — arrival rate, prompt and output lengths, prefix reuse, the
// engine's limits, KV capacity and a step cost fitted to the observed times
// — replays it unchanged, and only when the replay reproduces the window
// within a tolerance simulates each step's change and reports the new
// latencies. Every replay is read the way a diagnosis reads a server: the
// simulator's metrics go through the scrape collector and the same
// histograms, so observed and replayed figures share their buckets.
package whatif

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/simrun"
)

// Schema names the JSON contract of a whatif result.
const Schema = "llmdoctor.whatif/v1"

// DefaultTolerance is the largest relative replay error at which predictions
// are made: the validation in docs/whatif.md says how far they then miss.
const DefaultTolerance = 0.25

// Options tune a calibration.
type Options struct {
	// Rules and Config read the replays (their rules are not what matters:
	// the evidence is).
	Rules  *rules.Set
	Config *rules.Config
	// Tolerance is the largest replay error at which predictions are made;
	// zero takes DefaultTolerance.
	Tolerance float64
	// Assume sets engine settings the evidence cannot show: max_num_seqs,
	// max_num_batched_tokens, chunked_prefill (0 or 1). They win over what
	// is inferred.
	Assume map[string]float64
	// Seed of the simulator's random draws.
	Seed int64
	// MaxSteps, when positive, predicts only that many steps.
	MaxSteps int
}

// Assumable are the settings Options.Assume may give.
var Assumable = []string{"max_num_seqs", "max_num_batched_tokens", "chunked_prefill"}

// Result is whatif over every target of a diagnosis.
type Result struct {
	Schema  string    `json:"schema"`
	Targets []*Target `json:"targets"`
}

// Target is one target's calibration, replay and predictions.
type Target struct {
	Target evidence.Target `json:"target"`
	// Settings are what the calibrated scenario used, each with where it
	// came from.
	Settings []Setting `json:"settings"`
	// Replay compares the unchanged replay with what was observed.
	Replay []Fit `json:"replay"`
	// Error is the largest relative error of Replay.
	Error float64 `json:"replay_error"`
	// Tolerance is the largest Error at which predictions are made.
	Tolerance  float64 `json:"tolerance"`
	Reproduced bool    `json:"reproduced"`
	// Missed names the counted figure the replay missed most, when it was
	// not reproduced.
	Missed string `json:"missed,omitempty"`
	// Why says why the window could not be calibrated or reproduced.
	Why string `json:"why,omitempty"`
	// Steps are the next steps with a change to simulate, in order.
	Steps []Prediction `json:"steps"`

	scenario *sim.Scenario
	fitted   fitted
	// baseline is the unchanged scenario run as the predictions are.
	baseline map[string]any
}

// Setting is one input of the calibrated scenario.
type Setting struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	From  string  `json:"from"`
}

// Fit is one observed figure beside its replay.
type Fit struct {
	Name     string  `json:"name"`
	Observed float64 `json:"observed"`
	Replayed float64 `json:"replayed"`
	Error    float64 `json:"error"`
	// Held is set on a figure the replay was made to match, which is
	// therefore no test of it.
	Held bool `json:"held,omitempty"`
	// Missing: the replay has no such figure (Replayed is 0, Error 1).
	Missing bool `json:"missing,omitempty"`
	// Shown is set on a figure shown but not counted in the replay's error:
	// the waiting gauge, sampled a few dozen times, says less about the
	// queue than the queue-time histogram, which is counted instead; a
	// figure the evidence contradicts (TTFT p99 above end-to-end p99) is no
	// test either.
	Shown bool `json:"shown,omitempty"`
}

// Prediction is one next step's simulated change.
type Prediction struct {
	Step   string          `json:"step"`
	Whatif string          `json:"whatif"`
	Effect *advisor.Effect `json:"effect,omitempty"`
	// Change is what was simulated, in absolute settings.
	Change *Change `json:"change,omitempty"`
	// Why says why no effect is given.
	Why string `json:"why,omitempty"`
}

// fitted is what the calibration inferred beside the scenario, for changes.
type fitted struct {
	engines     float64
	meanRequest float64 // prompt + output tokens
	// saturated: the queue never emptied; the replay is a closed loop of
	// inSystem requests, the predictions open at rate.
	saturated, growing bool
	// growth and firstWaiting are a growing queue's, per engine.
	growth, firstWaiting float64
	// contextMeasured: the KV bytes read per context token came from
	// DCGM's memory traffic, not from the fit.
	contextMeasured bool
	// floorKnown: the weights' read time came from the decode floor.
	floorKnown bool
	inSystem   float64
	rate       float64
}

// Run calibrates every target of d and, where the replay reproduces it,
// puts each priced step's effect on d's next steps.
func Run(ctx context.Context, d *advisor.Diagnosis, o Options) *Result {
	if o.Tolerance <= 0 {
		o.Tolerance = DefaultTolerance
	}
	res := &Result{Schema: Schema, Targets: []*Target{}}
	for i := range d.Targets {
		t := Calibrate(ctx, &d.Targets[i], o)
		res.Targets = append(res.Targets, t)
		for _, p := range t.Steps {
			for j := range d.Targets[i].Next {
				if s := &d.Targets[i].Next[j]; s.Do == p.Step && p.Effect != nil {
					s.Effect = p.Effect
				}
			}
		}
		switch {
		case t.Why != "":
			d.Notes = append(d.Notes, fmt.Sprintf("whatif for %s: %s", name(t.Target), t.Why))
		case priced(t) > 0:
			d.Notes = append(d.Notes, fmt.Sprintf("whatif for %s: replay of the window within %s (tolerance %s); predicted effects are beside the steps",
				name(t.Target), units.WholePercent(t.Error), units.WholePercent(t.Tolerance)))
		case len(t.Steps) > 0:
			d.Notes = append(d.Notes, fmt.Sprintf("whatif for %s: replay of the window within %s, but no step's change could be priced: %s",
				name(t.Target), units.WholePercent(t.Error), strings.TrimPrefix(t.Steps[0].Why, "not predicted: ")))
		}
	}
	return res
}

func priced(t *Target) int {
	n := 0
	for _, s := range t.Steps {
		if s.Effect != nil {
			n++
		}
	}
	return n
}

func name(t evidence.Target) string {
	if t.Model != "" {
		return t.Model
	}
	return "the target"
}

// Calibrate fits a scenario to one target, replays it and, when the replay
// is within tolerance, predicts each step that names a change.
func Calibrate(ctx context.Context, t *advisor.TargetReport, o Options) *Target {
	if o.Tolerance <= 0 {
		o.Tolerance = DefaultTolerance
	}
	out := &Target{Target: t.Target, Tolerance: o.Tolerance, Settings: []Setting{}, Replay: []Fit{}, Steps: []Prediction{}}
	for _, s := range t.Next {
		if s.Whatif != "" && (o.MaxSteps <= 0 || len(out.Steps) < o.MaxSteps) {
			out.Steps = append(out.Steps, Prediction{Step: s.Do, Whatif: s.Whatif})
		}
	}
	for _, in := range t.Inconsistencies {
		// Quantiles misplaced in their buckets are shown, not fitted
		// (compareFigures), and a front end's time withheld is left out of
		// the fit: the rest of the window still calibrates.
		if in.Check == "quantiles-out-of-order" || in.Check == "requests-outlast-window" {
			continue
		}
		out.Why = "the evidence contradicts itself (" + in.Note + "), so no scenario can be fitted to it"
		return out.unpriced()
	}
	sc, f, settings, err := scenarioOf(t, o)
	out.Settings = settings
	if err != nil {
		out.Why = "cannot calibrate: " + err.Error()
		return out.unpriced()
	}
	best, err := search(ctx, t, sc, f, o)
	if err != nil {
		out.Why = "the replay failed: " + err.Error()
		return out.unpriced()
	}
	searched := "searched: " + best.words
	for i, st := range out.Settings {
		switch {
		case st.Name == "max_num_batched_tokens" && best.scenario.Engine.MaxNumBatchedTokens != sc.Engine.MaxNumBatchedTokens:
			out.Settings[i] = Setting{st.Name, float64(best.scenario.Engine.MaxNumBatchedTokens), searched}
		case st.Name == "chunked_prefill" && best.scenario.Engine.ChunkedPrefill != sc.Engine.ChunkedPrefill:
			out.Settings[i] = Setting{st.Name, b2f(best.scenario.Engine.ChunkedPrefill), searched}
		}
	}
	if w := best.scenario.Workload; w.Arrival == "bursty" {
		out.Settings = append(out.Settings, Setting{"arrival_burst_shape", w.BurstShape, searched + " (gamma gaps; 1 is Poisson)"})
	}
	if best.tried > 1 {
		out.Settings = append(out.Settings, Setting{"variants_replayed", best.tried, "settings the metrics cannot show, tried in turn; the best replay wins"})
	}
	sc = best.scenario
	out.scenario, out.fitted = sc, f
	out.Settings = append(out.Settings,
		Setting{"step_fixed_seconds", sc.Engine.Cost.Fixed, fixedFrom(f)},
		Setting{"step_memory_seconds", sc.Engine.Cost.Memory, memoryFrom(f)},
		Setting{"step_seconds_per_token", sc.Engine.Cost.PerToken, "fitted to the observed prefill time per computed prompt token"},
		Setting{"step_seconds_per_1k_context_tokens", 1000 * sc.Engine.Cost.PerContext, contextFrom(f)})
	out.Replay, out.Error = best.fits, best.err
	if len(out.Replay) == 0 {
		out.Why = "no latency figure was observed to compare a replay with"
		return out.unpriced()
	}
	out.Reproduced = out.Error <= o.Tolerance
	if !out.Reproduced {
		worst := Fit{}
		for _, f := range out.Replay {
			if !f.Held && !f.Shown && f.Error >= worst.Error {
				worst = f
			}
		}
		out.Missed = worst.Name
		out.Why = fmt.Sprintf("the window could not be reproduced: the replay's %s is %s against %s observed (%s off, tolerance %s)",
			worst.Name, FigureText(worst.Name, worst.Replayed), FigureText(worst.Name, worst.Observed), units.WholePercent(worst.Error), units.WholePercent(o.Tolerance))
		return out.unpriced()
	}
	for i := range out.Steps {
		out.Steps[i] = out.predict(ctx, out.Steps[i], t.Evidence, o)
	}
	return out
}

func (t *Target) unpriced() *Target {
	for i := range t.Steps {
		t.Steps[i].Why = "not predicted: " + t.Why
	}
	return t
}

// figures are what a replay must reproduce, with the floor under which a
// difference is not relative (a queue of 0.2 against 0.5 requests is no 150%
// miss).
var figures = []struct {
	name, path string
	floor      float64
	// perEngine: a sum over engines, which the one-engine replay divides.
	perEngine bool
}{
	{"ttft_mean", "stage.ttft.mean", 0.005, false},
	{"ttft_p99", "stage.ttft.p99", 0.005, false},
	{"itl_mean", "stage.itl.mean", 0.001, false},
	{"itl_p99", "stage.itl.p99", 0.001, false},
	{"e2e_mean", "service.e2e.mean", 0.05, false},
	{"e2e_p99", "service.e2e.p99", 0.05, false},
	{"queue_mean", "stage.queue.mean", 0.05, false},
	// Gauges sampled a few dozen times: a few requests either way is noise.
	{"running_mean", "service.running.mean", 3, true},
	{"waiting_mean", "service.waiting.mean", 3, true},
	{"kv_peak", "resource.kv_usage.max", 0.5, false},
	{"finished_rate", "service.request_rate", 0.01, true},
}

// predicted are the figures an effect reports.
var predicted = []struct{ name, path string }{
	{"ttft_p50", "stage.ttft.p50"}, {"ttft_p99", "stage.ttft.p99"},
	{"itl_p50", "stage.itl.p50"}, {"itl_p99", "stage.itl.p99"},
	{"e2e_p50", "service.e2e.p50"}, {"e2e_p99", "service.e2e.p99"},
}

// compareFigures sets the replay beside the observation. A quantile's error
// counts only beyond the bucket it was interpolated in: a histogram cannot
// tell values inside one bucket apart. A closed-loop replay holds the queue
// by construction, so its waiting figure is shown but does not count.
func compareFigures(t *advisor.TargetReport, rep map[string]any, fit fitted) ([]Fit, float64) {
	var out []Fit
	worst := 0.0
	heldQueue := fit.saturated && !fit.growing
	for _, f := range figures {
		o := evidence.TreeNumber(t.Evidence, f.path)
		if !finite(o) {
			continue
		}
		if f.perEngine {
			o /= fit.engines
		}
		r := evidence.TreeNumber(rep, f.path)
		e, missing := 1.0, !finite(r)
		if missing {
			r = 0
		} else {
			d := math.Abs(r - o)
			if b, ok := t.Resolution[f.path]; ok && b[0] <= o && o <= b[1] {
				d = math.Max(0, math.Max(b[0]-r, r-b[1]))
			}
			e = d / math.Max(math.Abs(o), f.floor)
		}
		row := Fit{Name: f.name, Observed: o, Replayed: r, Error: e, Missing: missing}
		withheld := false
		for _, in := range t.Inconsistencies {
			withheld = withheld || slices.Contains(in.Fields, f.path) || slices.Contains(in.Fields, evidence.Node(f.path))
		}
		switch {
		case withheld:
			// A figure the evidence contradicts is no test of the replay.
			row.Shown = true
		case heldQueue && f.name == "waiting_mean":
			row.Held = true
		case f.name == "waiting_mean":
			row.Shown = true
		default:
			worst = math.Max(worst, e)
		}
		out = append(out, row)
	}
	return out, worst
}

// FigureText prints a replay figure in its unit: a share for the KV peak,
// a count for the gauges, a rate for finished requests, a time otherwise.
func FigureText(name string, x float64) string {
	switch {
	case !finite(x):
		return "missing"
	case strings.HasPrefix(name, "kv"):
		return units.Percent(x)
	case strings.HasPrefix(name, "running") || strings.HasPrefix(name, "waiting"):
		return units.Number(x) + " requests"
	case strings.HasSuffix(name, "_rate"):
		return units.Number(x) + "/s"
	}
	return units.Duration(x)
}

// replayWindow caps the simulated window: the figures are rates and
// quantiles, which a quarter of an hour of the same traffic reproduces.
const (
	replayWindow = 15 * time.Minute
	replayWarmup = 2 * time.Minute
)

// measure simulates sc and returns the evidence of its target.
func measure(ctx context.Context, sc *sim.Scenario, o Options) (map[string]any, error) {
	d, err := simulate(ctx, sc, o)
	if err != nil {
		return nil, err
	}
	if len(d.Targets) == 0 {
		return nil, fmt.Errorf("the simulated window has no target")
	}
	return d.Targets[0].Evidence, nil
}

// simulate diagnoses sc's window as a server's would be (package simrun):
// its /metrics, scraped in process, through the scrape collector and the
// rules.
func simulate(ctx context.Context, sc *sim.Scenario, o Options) (*advisor.Diagnosis, error) {
	return simrun.Diagnose(ctx, sc, simrun.Options{Rules: o.Rules, Config: o.Config})
}

func fixedFrom(f fitted) string {
	if f.contextMeasured {
		return "a step's CPU work: what the inter-token time leaves over the memory time"
	}
	return "a step's CPU work (assumed)"
}

func contextFrom(f fitted) string {
	if f.contextMeasured {
		return "KV read per step: DCGM's memory traffic per step less the weights, per token of the batch's context"
	}
	return "KV read per step, fitted to the observed inter-token time at the observed batch (no DCGM memory traffic to measure it)"
}

func memoryFrom(f fitted) string {
	if f.floorKnown {
		return "weights read per step: the decode floor at 85% of peak bandwidth"
	}
	return "weights read per step, fitted to the observed inter-token time (no decode floor: needs DCGM and the weights' size)"
}
