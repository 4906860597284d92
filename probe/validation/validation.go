// Package validation holds the probe to servers whose timing is known: the
// independent simulator llm-d-inference-sim, configured with a prefill cost
// per token, an inter-token latency and --max-num-seqs (its probes are
// recorded, since it cannot run in CI), and the built-in simulator,
// probed live over HTTP. For each it compares the fitted prefill cost, the
// inter-token latency alone and the capacity at an SLO with what the
// configuration implies; docs/probe.md is generated from it.
package validation

//go:generate go run ./gen -record

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmdoctor/llmdoctor/probe"
)

// Tolerances the issue set: the fitted prefill cost and the inter-token
// latency within 10 % of the configured, the capacity within 20 % of what
// the configuration implies.
const (
	PrefillTolerance  = 0.10
	ITLTolerance      = 0.10
	CapacityTolerance = 0.20
)

// Row is one validated probe.
type Row struct {
	Name, Server string
	// Config is how the server was configured (flags or scenario).
	Config string
	// Configured and measured prefill cost per 1k prompt tokens, and
	// inter-token latency alone, seconds.
	Prefill, FitPrefill, FitErr float64
	ITL, MeasuredITL            float64
	// Implied and measured capacity: concurrency and requests per second.
	ImpliedLoad, ImpliedRate float64
	Load, Rate               float64
	// How says how the implied capacity follows from the configuration.
	How  string
	SLO  string
	Sent int
	// Verdict is the probe's diagnosis at the load that broke the SLO.
	Verdict string
}

// Err are the relative errors.
func (r Row) PrefillErr() float64 { return rel(r.FitPrefill, r.Prefill) }
func (r Row) ITLErr() float64     { return rel(r.MeasuredITL, r.ITL) }
func (r Row) RateErr() float64    { return rel(r.Rate, r.ImpliedRate) }

// OK reports whether every figure is within its tolerance.
func (r Row) OK() bool {
	return r.PrefillErr() <= PrefillTolerance && r.ITLErr() <= ITLTolerance && r.RateErr() <= CapacityTolerance &&
		r.Load == r.ImpliedLoad
}

func rel(got, want float64) float64 {
	if want == 0 || math.IsNaN(got) {
		return math.Inf(1)
	}
	return math.Abs(got-want) / want
}

// PeerCase is one recorded configuration of llm-d-inference-sim with the
// per-token latency calculator: TTFT = Overhead + prompt × PerToken, then a
// token every ITL, at most MaxNumSeqs requests at once (the rest wait).
type PeerCase struct {
	Name       string
	Flags      string
	Overhead   float64
	PerToken   float64
	ITL        float64
	MaxNumSeqs int
	SLO        string
}

// PeerCases are the configurations record.sh records.
var PeerCases = []PeerCase{
	{Name: "per-token-8", Flags: "--max-num-seqs 8 --latency-calculator per-token --prefill-overhead 20ms --prefill-time-per-token 200us --prefill-time-std-dev 5ms --inter-token-latency 15ms --inter-token-latency-std-dev 2ms",
		Overhead: 0.020, PerToken: 0.0002, ITL: 0.015, MaxNumSeqs: 8, SLO: "ttft_p99=300ms"},
	{Name: "per-token-4", Flags: "--max-num-seqs 4 --latency-calculator per-token --prefill-overhead 50ms --prefill-time-per-token 500us --prefill-time-std-dev 10ms --inter-token-latency 30ms --inter-token-latency-std-dev 3ms",
		Overhead: 0.050, PerToken: 0.0005, ITL: 0.030, MaxNumSeqs: 4, SLO: "ttft_p99=800ms"},
}

// Peer reads the recorded probes in dir and validates them.
func Peer(dir string) ([]Row, error) {
	var rows []Row
	for _, c := range PeerCases {
		res, err := ReadResult(filepath.Join(dir, c.Name+".json.gz"))
		if err != nil {
			return nil, err
		}
		slo, err := probe.ParseSLO(c.SLO, probe.SLO{})
		if err != nil {
			return nil, err
		}
		if err := probe.Reanalyze(res, slo); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		row := measured(res)
		row.Name, row.Server, row.Config, row.SLO = c.Name, "llm-d-inference-sim", c.Flags, slo.String()
		row.Prefill, row.ITL = c.PerToken*1000, c.ITL
		// With S requests at most in flight and no queue below S, the SLO
		// on TTFT holds up to concurrency S and breaks past it (a request
		// then waits for a slot); the rate there is S ÷ the mean request:
		// overhead + prompt × per-token + (output − 1) × ITL, over the
		// prompts and outputs the probe sent at that load.
		prompt, output := meanTokens(res, float64(c.MaxNumSeqs))
		e2e := c.Overhead + prompt*c.PerToken + (output-1)*c.ITL
		row.ImpliedLoad, row.ImpliedRate = float64(c.MaxNumSeqs), float64(c.MaxNumSeqs)/e2e
		row.How = fmt.Sprintf("max-num-seqs %d ÷ (%s + %.0f prompt tokens × %s + %.0f × %s) = %d ÷ %.3fs",
			c.MaxNumSeqs, ms(c.Overhead), prompt, us(c.PerToken), output-1, ms(c.ITL), c.MaxNumSeqs, e2e)
		rows = append(rows, row)
	}
	return rows, nil
}

// measured are a result's own figures.
func measured(res *probe.Result) Row {
	row := Row{FitPrefill: math.NaN(), MeasuredITL: math.NaN(), Rate: math.NaN(), Sent: res.Sent}
	if f := res.Sweep.Fit; f != nil {
		row.FitPrefill, row.FitErr = f.PerKToken, f.PerKTokenErr
	}
	if res.ITL != nil {
		row.MeasuredITL = res.ITL.Mean
	}
	if c := res.Capacity; c != nil {
		row.Load, row.Rate = c.Load, c.Throughput
	}
	if res.Diagnosis != nil && len(res.Diagnosis.Targets) > 0 {
		p := res.Diagnosis.Targets[0].Primary
		row.Verdict = p.Bottleneck + " (" + p.Status + ")"
	}
	return row
}

// meanTokens are the mean prompt and output tokens of the step at load.
func meanTokens(res *probe.Result, load float64) (prompt, output float64) {
	var n float64
	for _, st := range res.Steps {
		if st.Load != load {
			continue
		}
		for _, s := range st.Requests {
			if s.OK() {
				prompt += float64(s.Prompt)
				output += float64(s.Output)
				n++
			}
		}
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	return prompt / n, output / n
}

// ReadResult reads a probe's JSON, gzipped or not.
func ReadResult(path string) (*probe.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer func() { _ = z.Close() }() // read only; a bad stream fails Decode
		r = z
	}
	var res probe.Result
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if res.Schema != probe.Schema {
		return nil, fmt.Errorf("%s: schema %q, want %s", path, res.Schema, probe.Schema)
	}
	return &res, nil
}

func ms(s float64) string { return fmt.Sprintf("%gms", math.Round(s*1e4)/10) }
func us(s float64) string { return fmt.Sprintf("%gµs", math.Round(s*1e7)/10) }
