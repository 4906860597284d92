package whatif

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/sim"
)

// Change is a settings change in absolute terms, so that the same change can
// be applied to the calibrated scenario and, in validation, to the scenario
// that made the window.
type Change struct {
	MaxNumSeqs          int     `json:"max_num_seqs,omitempty"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens,omitempty"`
	ChunkedPrefill      bool    `json:"chunked_prefill,omitempty"`
	PrefixCaching       bool    `json:"prefix_caching,omitempty"`
	FP8KV               bool    `json:"fp8_kv,omitempty"`
	RateFactor          float64 `json:"rate_factor,omitempty"`
	// Words says it: "max_num_seqs 32 → 128".
	Words string `json:"words"`
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// changeFor turns a step's whatif name into a change of the calibrated
// scenario, or says why it cannot be priced.
func (t *Target) changeFor(whatif string) (Change, error) {
	e := t.scenario.Engine
	c := Change{}
	var words []string
	setSeqs := func(n int) {
		c.MaxNumSeqs = n
		words = append(words, fmt.Sprintf("max_num_seqs %d → %d", e.MaxNumSeqs, n))
	}
	setBudget := func(n int) {
		c.MaxNumBatchedTokens = n
		words = append(words, fmt.Sprintf("max_num_batched_tokens %d → %d", e.MaxNumBatchedTokens, n))
	}
	switch whatif {
	case "more_seqs":
		fits := int(float64(e.GPUBlocks*e.BlockSize) / math.Max(t.fitted.meanRequest, 1))
		n := min(4*e.MaxNumSeqs, fits)
		if n <= e.MaxNumSeqs {
			return c, fmt.Errorf("the KV cache holds %d requests of the mean size, no more than max_num_seqs %d already allows", fits, e.MaxNumSeqs)
		}
		setSeqs(n)
		setBudget(max(e.MaxNumBatchedTokens, 2*e.MaxNumBatchedTokens))
	case "fewer_seqs":
		if e.MaxNumSeqs < 2 {
			return c, fmt.Errorf("max_num_seqs is already 1")
		}
		setSeqs(e.MaxNumSeqs / 2)
	case "larger_token_budget":
		setBudget(2 * e.MaxNumBatchedTokens)
	case "smaller_token_budget":
		c.ChunkedPrefill = true
		if !e.ChunkedPrefill {
			words = append(words, "chunked prefill on")
		}
		setBudget(2048)
	case "chunked_prefill":
		if e.ChunkedPrefill && e.MaxNumBatchedTokens <= 8192 {
			return c, fmt.Errorf("chunked prefill is already on with a budget of %d tokens", e.MaxNumBatchedTokens)
		}
		c.ChunkedPrefill = true
		if !e.ChunkedPrefill {
			words = append(words, "chunked prefill on")
		}
		if e.MaxNumBatchedTokens > 8192 {
			setBudget(8192)
		}
	case "prefix_caching":
		if !e.PrefixCaching {
			return c, fmt.Errorf("how much of the prompts could be shared cannot be seen while prefix caching is off")
		}
		return c, fmt.Errorf("prefix caching is on: what it would serve from prompts made identical cannot be seen")
	case "fp8_kv":
		c.FP8KV = true
		words = append(words, "KV cache fp8 (twice the blocks, half the bytes per token)")
	case "one_more_replica":
		n := t.fitted.engines
		c.RateFactor = n / (n + 1)
		words = append(words, fmt.Sprintf("%d → %d replicas", int(n), int(n)+1))
	default:
		return c, fmt.Errorf("no simulation for %q", whatif)
	}
	c.Words = strings.Join(words, ", ")
	return c, nil
}

// Apply makes the change on a scenario: the calibrated one, or a scenario
// of the simulator's own model. A fitted cost reads half as many bytes per
// context token under fp8; a modelled one learns it from the data type.
func (c Change) Apply(sc *sim.Scenario) *sim.Scenario {
	out := *sc
	e := &out.Engine
	if e.Cost != nil {
		cost := *e.Cost
		e.Cost = &cost
	}
	if c.MaxNumSeqs > 0 {
		e.MaxNumSeqs = c.MaxNumSeqs
	}
	if c.MaxNumBatchedTokens > 0 {
		e.MaxNumBatchedTokens = c.MaxNumBatchedTokens
	}
	if c.ChunkedPrefill {
		e.ChunkedPrefill = true
	}
	if c.PrefixCaching {
		e.PrefixCaching = true
	}
	if c.FP8KV {
		if e.Cost != nil {
			e.GPUBlocks *= 2
			e.Cost.PerContext /= 2
		} else {
			e.KVCacheDTypeBytes = 1
		}
	}
	if c.RateFactor > 0 {
		out.Workload.Rate *= c.RateFactor
		steps := make([]sim.RateStep, len(out.Workload.Steps))
		for i, s := range out.Workload.Steps {
			steps[i] = sim.RateStep{At: s.At, Rate: s.Rate * c.RateFactor}
		}
		out.Workload.Steps = steps
	}
	return &out
}

// predict simulates one step's change from a fresh start at the arrival
// rate (the change takes effect at a restart) and reads the figures an effect reports.
func (t *Target) predict(ctx context.Context, p Prediction, obs map[string]any, o Options) Prediction {
	c, err := t.changeFor(p.Whatif)
	if err != nil {
		p.Why = "not predicted: " + err.Error()
		return p
	}
	if t.baseline == nil {
		// The unchanged scenario under the same protocol: what "no
		// effect" looks like, so a change that moves nothing is not
		// shown as moving a figure by the replay's own error.
		base, err := measure(ctx, restarted(t.scenario), o)
		if err != nil {
			p.Why = "not predicted: the simulation failed: " + err.Error()
			return p
		}
		t.baseline = base
	}
	rep, err := measure(ctx, restarted(c.Apply(t.scenario)), o)
	if err != nil {
		p.Why = "not predicted: the simulation failed: " + err.Error()
		return p
	}
	p.Effect, p.Change = effectOf(c, obs, t.baseline, rep, t.Error), &c
	return p
}

// restarted is a scenario as it runs after a restart with new settings:
// arrivals open at the estimated rate, from an empty engine, warmed up.
func restarted(sc *sim.Scenario) *sim.Scenario {
	out := *sc
	out.Workload.Concurrency = 0
	out.Warmup = replayWarmup
	return &out
}

// unchangedWithin is how close to the unchanged run a predicted figure
// must be to be reported as not moved by the change.
const unchangedWithin = 0.1

// effectOf sets the observed figures beside the predicted ones. A figure
// the change does not move (within 10% of the unchanged run) is predicted
// to stay what was observed.
func effectOf(c Change, obs, base, rep map[string]any, replayError float64) *advisor.Effect {
	ef := &advisor.Effect{Change: c.Words, ReplayError: replayError, Figures: []advisor.EffectFigure{}}
	for _, f := range predicted {
		o, b, r := evidence.TreeNumber(obs, f.path), evidence.TreeNumber(base, f.path), evidence.TreeNumber(rep, f.path)
		if !finite(o) || !finite(r) {
			continue
		}
		fig := advisor.EffectFigure{Name: f.name, Observed: o, Predicted: r}
		if finite(b) && b > 0 && math.Abs(r/b-1) < unchangedWithin {
			fig.Predicted, fig.Unchanged = o, true
		}
		ef.Figures = append(ef.Figures, fig)
	}
	switch first, last, mean := evidence.TreeNumber(rep, "service.waiting.min"), evidence.TreeNumber(rep, "service.waiting.last"),
		evidence.TreeNumber(rep, "service.waiting.mean"); {
	case last > 2*first+10:
		ef.Note = "the queue still grows through the simulated window: no steady state, the figures grow with time"
	case mean >= 1:
		// Near capacity a few percent of error in the fitted step cost
		// decides whether a queue forms: the figures are least sure here.
		ef.Note = fmt.Sprintf("requests still wait after the change (%.0f on average): near capacity, where small errors in the fit move TTFT most", mean)
	}
	return ef
}
