package validation

import (
	"context"
	"fmt"
	"math"

	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/sim"
)

// OwnCase is the built-in simulator with a fitted step cost: a step takes
// Fixed + max(Memory, PerToken × tokens computed), so a prompt alone costs
// PerToken a token (once PerToken × tokens passes Memory) and a decode
// alone Memory + PerToken + Fixed.
type OwnCase struct {
	Name       string
	Cost       sim.StepCost
	MaxNumSeqs int
	SLO        string
}

// OwnCases are the built-in simulator's configurations.
var OwnCases = []OwnCase{
	{Name: "fitted-8", Cost: sim.StepCost{Fixed: 0.002, Memory: 0.015, PerToken: 0.0002}, MaxNumSeqs: 8, SLO: "ttft_p99=1600ms"},
	{Name: "fitted-4", Cost: sim.StepCost{Fixed: 0.003, Memory: 0.025, PerToken: 0.0004}, MaxNumSeqs: 4, SLO: "ttft_p99=2500ms"},
}

// Scenario is the case's engine with no traffic of its own.
func (c OwnCase) Scenario() *sim.Scenario {
	cost := c.Cost
	return &sim.Scenario{Name: c.Name, Model: "fitted-model", Seed: 1,
		Engine: sim.EngineConfig{MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: 8192, ChunkedPrefill: true,
			Cost: &cost, GPUBlocks: 1 << 17},
		Workload: sim.Workload{External: true}}
}

// Config says the case's configuration in a line.
func (c OwnCase) Config() string {
	return fmt.Sprintf("engine.cost {fixed: %gs, memory: %gs, per_token: %gs}, max_num_seqs %d, chunked prefill, 8192-token budget",
		c.Cost.Fixed, c.Cost.Memory, c.Cost.PerToken, c.MaxNumSeqs)
}

// ProbeOptions are how every validation probe runs: the defaults a user
// gets, with rate and concurrency limits high enough not to hold the
// ladder back, and a fixed seed.
func ProbeOptions(target, slo string) (probe.Options, error) {
	s, err := probe.ParseSLO(slo, probe.SLO{})
	if err != nil {
		return probe.Options{}, err
	}
	l := probe.DefaultLimits()
	l.Rate, l.Concurrency = 200, 16
	return probe.Options{Target: target, SLO: s, Limits: l, KeepRequests: true, Seed: 7}, nil
}

// ProbeOwn serves the case's simulator on a loopback port in real time and
// probes it over HTTP.
func ProbeOwn(ctx context.Context, c OwnCase) (*probe.Result, error) {
	e, err := sim.New(c.Scenario(), false)
	if err != nil {
		return nil, err
	}
	url, stop, err := sim.ServeLoopback(sim.NewServer(e, 0, 1))
	if err != nil {
		return nil, err
	}
	defer stop()
	o, err := ProbeOptions(url, c.SLO)
	if err != nil {
		return nil, err
	}
	return probe.Run(ctx, o)
}

// Own validates recorded probes of the built-in simulator: the configured
// prefill cost and decode step from the cost, the capacity from the same
// engine run offline (virtual time, no HTTP) at each concurrency with the
// ladder's workload.
func Own(dir string) ([]Row, error) {
	var rows []Row
	for _, c := range OwnCases {
		res, err := ReadResult(dir + "/" + c.Name + ".json.gz")
		if err != nil {
			return nil, err
		}
		row, err := OwnRow(c, res)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// OwnRow validates one probe of a case (recorded or live).
func OwnRow(c OwnCase, res *probe.Result) (Row, error) {
	slo, err := probe.ParseSLO(c.SLO, probe.SLO{})
	if err != nil {
		return Row{}, err
	}
	if err := probe.Reanalyze(res, slo); err != nil {
		return Row{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	row := measured(res)
	row.Name, row.Server, row.Config, row.SLO = c.Name, "llmdoctor sim", c.Config(), slo.String()
	row.Prefill = c.Cost.PerToken * 1000
	row.ITL = c.Cost.Memory + c.Cost.PerToken + c.Cost.Fixed
	load, rate, table, err := Implied(c, res.Plan, slo)
	if err != nil {
		return Row{}, err
	}
	row.ImpliedLoad, row.ImpliedRate = load, rate
	row.How = fmt.Sprintf("the same engine run offline in virtual time, closed loop, %d–%d-token prompts and %d output tokens: TTFT p99 by concurrency %s; the highest within the SLO is %g, at %.2f requests/s",
		res.Plan.PromptTokens[0], res.Plan.PromptTokens[1], res.Plan.OutputTokens, table, load, rate)
	return row, nil
}

// Implied runs the case's engine offline at concurrency 1 to 16 with the
// plan's ladder workload and returns the highest concurrency whose TTFT p99
// meets the SLO (every lower one meeting it too), its rate, and the p99s.
func Implied(c OwnCase, plan probe.Plan, slo probe.SLO) (load, rate float64, table string, err error) {
	lo, hi := plan.PromptTokens[0], plan.PromptTokens[1]
	var parts []sim.Weight
	for n := lo; n <= hi; n += (hi - lo) / 8 {
		parts = append(parts, sim.Weight{Weight: 1, Length: sim.Length{Dist: "fixed", Value: n}})
	}
	for conc := 1; conc <= 16; conc++ {
		sc := c.Scenario()
		sc.Workload = sim.Workload{Concurrency: conc, Prompt: sim.Length{Dist: "mix", Parts: parts},
			Output: sim.Length{Dist: "fixed", Value: plan.OutputTokens}}
		e, err := sim.New(sc, true)
		if err != nil {
			return 0, 0, "", err
		}
		// 400 requests after the first wave.
		for len(e.Records) < 400+2*conc {
			e.AdvanceTo(e.Now() + 10)
		}
		var ttft, e2e []float64
		for _, r := range e.Records[2*conc:] {
			ttft = append(ttft, r.TTFT)
			e2e = append(e2e, r.E2E)
		}
		p := probe.Summarise(ttft)
		table += fmt.Sprintf("%s%d: %.0fms", map[bool]string{true: "", false: ", "}[conc == 1], conc, p.P99*1000)
		if slo.TTFTP99 > 0 && p.P99 > slo.TTFTP99.Seconds() {
			break
		}
		load, rate = float64(conc), float64(conc)/probe.Summarise(e2e).Mean
	}
	if load == 0 {
		return 0, math.NaN(), table, nil
	}
	return load, rate, table, nil
}
