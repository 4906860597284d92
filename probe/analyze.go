package probe

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Percentiles summarise one latency over a step's requests. P99Low and
// P99High are a 95 % band for the p99 from the sample size (order
// statistics); P99Open: the band's top is above every value seen.
type Percentiles struct {
	N       int     `json:"n"`
	Mean    float64 `json:"mean"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	P99Low  float64 `json:"p99_low"`
	P99High float64 `json:"p99_high"`
	P99Open bool    `json:"p99_open,omitempty"`
}

// Summarise computes percentiles (linear interpolation between ranks).
func Summarise(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	p := Percentiles{N: len(s), Mean: sum / float64(len(s)), P50: rank(s, 0.5), P90: rank(s, 0.9),
		P99: rank(s, 0.99), Max: s[len(s)-1]}
	lo, hi := quantileBand(len(s), 0.99)
	p.P99Low = s[lo]
	if hi >= len(s) {
		p.P99High, p.P99Open = s[len(s)-1], true
	} else {
		p.P99High = s[hi]
	}
	return p
}

func rank(s []float64, q float64) float64 {
	if len(s) == 1 {
		return s[0]
	}
	x := q * float64(len(s)-1)
	i := int(x)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	f := x - float64(i)
	return s[i]*(1-f) + s[i+1]*f
}

// quantileBand gives the 0-based ranks bounding the q-quantile of n values
// with about 95 % confidence (normal approximation of the binomial); hi
// may be n, past the largest value.
func quantileBand(n int, q float64) (lo, hi int) {
	m := float64(n) * q
	sd := math.Sqrt(float64(n) * q * (1 - q))
	lo = int(math.Floor(m-1.96*sd)) - 1
	hi = int(math.Ceil(m + 1.96*sd))
	return max(0, min(lo, n-1)), max(0, hi)
}

// Fit is TTFT against prompt length: TTFT = Intercept + PerKToken × tokens
// ÷ 1000, seconds. The errors are standard errors of the least-squares
// estimates; R2 how much of TTFT's spread the line explains.
type Fit struct {
	PerKToken    float64 `json:"prefill_per_1k_tokens"`
	Intercept    float64 `json:"intercept"`
	PerKTokenErr float64 `json:"prefill_per_1k_tokens_err"`
	InterceptErr float64 `json:"intercept_err"`
	R2           float64 `json:"r2"`
	Points       int     `json:"points"`
	// MinTokens and MaxTokens are the prompt lengths the fit spans.
	MinTokens int `json:"min_prompt_tokens"`
	MaxTokens int `json:"max_prompt_tokens"`
}

// fitTTFT fits the sweep's points (prompt tokens, TTFT seconds). It needs
// at least three points on two lengths.
func fitTTFT(pts [][2]float64) (*Fit, error) {
	if len(pts) < 3 {
		return nil, fmt.Errorf("%d sweep requests completed; a fit needs 3", len(pts))
	}
	var n, sx, sy float64
	minX, maxX := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		n++
		sx += p[0]
		sy += p[1]
		minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
	}
	mx, my := sx/n, sy/n
	var sxx, sxy, syy float64
	for _, p := range pts {
		sxx += (p[0] - mx) * (p[0] - mx)
		sxy += (p[0] - mx) * (p[1] - my)
		syy += (p[1] - my) * (p[1] - my)
	}
	if sxx == 0 || maxX < 1.5*minX {
		return nil, fmt.Errorf("the sweep's prompts span %.0f to %.0f tokens; a fit needs a wider span", minX, maxX)
	}
	slope := sxy / sxx
	icpt := my - slope*mx
	var ssr float64
	for _, p := range pts {
		d := p[1] - icpt - slope*p[0]
		ssr += d * d
	}
	f := &Fit{PerKToken: slope * 1000, Intercept: icpt, Points: len(pts), MinTokens: int(minX), MaxTokens: int(maxX)}
	if syy > 0 {
		f.R2 = math.Max(0, 1-ssr/syy)
	}
	if len(pts) > 2 {
		s2 := ssr / (n - 2)
		f.PerKTokenErr = math.Sqrt(s2/sxx) * 1000
		f.InterceptErr = math.Sqrt(s2 * (1/n + mx*mx/sxx))
	}
	return f, nil
}

// judge says which SLO targets a step misses, by its point estimates.
func judge(s *Step, slo SLO) {
	s.Misses = nil
	check := func(name string, target time.Duration, got float64, have bool) {
		if target > 0 && have && got > target.Seconds() {
			s.Misses = append(s.Misses, fmt.Sprintf("%s %s > %s", name, fmtSeconds(got), target))
		}
	}
	check("ttft_p99", slo.TTFTP99, s.TTFT.P99, s.TTFT.N > 0)
	check("itl_p99", slo.ITLP99, s.ITL.P99, s.ITL.N > 0)
	check("tpot_p50", slo.TPOTP50, s.TPOT.P50, s.TPOT.N > 0)
	check("e2e_p99", slo.E2EP99, s.E2E.P99, s.E2E.N > 0)
	s.MeetsSLO = len(s.Misses) == 0 && s.Completed > 0 && !s.TooManyErrors
	// Surely: the p99 bands' tops meet the targets too.
	s.SurelyMeets = s.MeetsSLO
	for _, x := range []struct {
		t time.Duration
		p Percentiles
	}{{slo.TTFTP99, s.TTFT}, {slo.ITLP99, s.ITL}, {slo.E2EP99, s.E2E}} {
		if x.t > 0 && x.p.N > 0 && (x.p.P99Open || x.p.P99High > x.t.Seconds()) {
			s.SurelyMeets = false
		}
	}
}

// meetsPerRequest says whether one request met the SLO's targets as a
// single request can: its TTFT, its mean time per output token, its
// largest gap and its end-to-end time.
func meetsPerRequest(x Sample, slo SLO) bool {
	if !x.OK() {
		return false
	}
	if slo.TTFTP99 > 0 && x.TTFT > slo.TTFTP99.Seconds() {
		return false
	}
	if slo.TPOTP50 > 0 && x.Output >= 2 && x.TPOT() > slo.TPOTP50.Seconds() {
		return false
	}
	if slo.ITLP99 > 0 {
		for _, g := range x.ITLs {
			if g > slo.ITLP99.Seconds() {
				return false
			}
		}
	}
	return !(slo.E2EP99 > 0 && x.E2E > slo.E2EP99.Seconds())
}

// Knee is the load past which latency rises faster than throughput.
type Knee struct {
	// Step is the index of the last step before the knee.
	Step int     `json:"step"`
	Load float64 `json:"load"`
	// Elasticity is, from that step to the next, the rise in mean
	// end-to-end latency ÷ the rise in throughput (both as logarithms):
	// above 1, more of the added load became waiting than work.
	Elasticity float64 `json:"elasticity"`
}

// findKnee walks the steps in load order.
func findKnee(steps []Step) *Knee {
	idx := ByLoad(steps)
	for k := 1; k < len(idx); k++ {
		a, b := steps[idx[k-1]], steps[idx[k]]
		if a.Completed == 0 || b.Completed == 0 || a.Throughput <= 0 || b.Throughput <= 0 {
			continue
		}
		dl := math.Log(b.E2E.Mean / a.E2E.Mean)
		dx := math.Log(b.Throughput / a.Throughput)
		if dl > 0.05 && (dx <= 0 || dl > dx) {
			e := math.Inf(1)
			if dx > 0 {
				e = dl / dx
			}
			return &Knee{Step: idx[k-1], Load: a.Load, Elasticity: finite(e)}
		}
	}
	return nil
}

func finite(x float64) float64 {
	if math.IsInf(x, 1) {
		return 999
	}
	return x
}

// ByLoad returns step indexes ordered by load (refined steps land between
// the ones they refine).
func ByLoad(steps []Step) []int {
	idx := make([]int, len(steps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return steps[idx[a]].Load < steps[idx[b]].Load })
	return idx
}

// Capacity is the highest load whose step met the SLO.
type Capacity struct {
	// Step is its index; Load its concurrency or rate.
	Step     int     `json:"step"`
	Load     float64 `json:"load"`
	OpenLoop bool    `json:"open_loop"`
	// Throughput is completed requests per second at that load; Low and
	// High its 95 % band from the step's request count.
	Throughput float64 `json:"throughput"`
	Low        float64 `json:"throughput_low"`
	High       float64 `json:"throughput_high"`
	Goodput    float64 `json:"goodput"`
	// OutputTokens is output tokens per second at that load.
	OutputTokens float64 `json:"output_tokens_per_s"`
	// Broke is the index of the next load up, which missed the SLO; -1:
	// no step missed it (the ladder stopped first), so capacity is at
	// least this.
	Broke   int  `json:"broke"`
	AtLeast bool `json:"at_least"`
	// Surely: the step's p99 bands meet the SLO too.
	Surely bool `json:"surely"`
}

// findCapacity picks the highest load that met the SLO with every load
// below it, and the next load up, which did not.
func findCapacity(steps []Step) *Capacity {
	idx := ByLoad(steps)
	// The highest load below the first that missed: a load above a miss
	// that met the SLO (noise, or a burst that fell another way) is not
	// what a launch can count on.
	best := -1
	for _, i := range idx {
		if steps[i].Completed == 0 {
			continue
		}
		if !steps[i].MeetsSLO {
			break
		}
		best = i
	}
	if best < 0 {
		return nil
	}
	s := steps[best]
	c := &Capacity{Step: best, Load: s.Load, OpenLoop: s.OpenLoop, Throughput: s.Throughput, Goodput: s.Goodput,
		OutputTokens: s.OutputTokens, Broke: -1, Surely: s.SurelyMeets}
	if s.Completed > 0 {
		rel := 1.96 / math.Sqrt(float64(s.Completed))
		c.Low, c.High = s.Throughput*math.Max(0, 1-rel), s.Throughput*(1+rel)
	}
	for _, i := range idx {
		if steps[i].Load > s.Load && !steps[i].MeetsSLO && steps[i].Completed > 0 {
			c.Broke = i
			break
		}
	}
	c.AtLeast = c.Broke < 0 || s.ClientLimited
	return c
}

func fmtSeconds(s float64) string {
	switch {
	case s >= 10:
		return fmt.Sprintf("%.1fs", s)
	case s >= 1:
		return fmt.Sprintf("%.2fs", s)
	case s >= 0.01:
		return fmt.Sprintf("%.0fms", s*1000)
	}
	return fmt.Sprintf("%.1fms", s*1000)
}

// summariseStep computes a step's figures from its requests and judges
// them against the SLO.
func summariseStep(st *Step, slo SLO, errorRate float64) {
	var ttft, itl, tpot, e2e []float64
	var outTokens float64
	good := 0
	last := 0.0
	st.Sent, st.Refused, st.Failed, st.Completed = 0, 0, 0, 0
	for _, s := range st.Requests {
		st.Sent++
		if s.Refused {
			st.Refused++
		}
		if !s.OK() {
			if !s.Cut {
				st.Failed++
			}
			continue
		}
		st.Completed++
		ttft = append(ttft, s.TTFT)
		e2e = append(e2e, s.E2E)
		itl = append(itl, s.ITLs...)
		if s.Output >= 2 {
			tpot = append(tpot, s.TPOT())
		}
		outTokens += float64(s.Output)
		if meetsPerRequest(s, slo) {
			good++
		}
		last = math.Max(last, s.Start+s.E2E)
	}
	st.TTFT, st.ITL, st.TPOT, st.E2E = Summarise(ttft), Summarise(itl), Summarise(tpot), Summarise(e2e)
	st.Throughput, st.OutputTokens, st.Goodput = 0, 0, 0
	span := last - st.Start
	if span <= 0 {
		span = st.Seconds
	}
	if span > 0 && st.Completed > 0 {
		st.Throughput = float64(st.Completed) / span
		// A closed loop keeps Load requests in flight: by Little's law its
		// steady rate is Load ÷ mean end-to-end, which the step's ramp and
		// its last, thinning wave do not bias.
		if !st.OpenLoop && st.E2E.Mean > 0 && !st.ClientLimited {
			st.Throughput = math.Min(st.Load, float64(st.Completed)) / st.E2E.Mean
		}
		k := st.Throughput / float64(st.Completed)
		st.OutputTokens = outTokens * k
		st.Goodput = float64(good) * k
	}
	st.TooManyErrors = false
	if done := st.Completed + st.Failed; done > 0 && float64(st.Failed)/float64(done) > errorRate {
		st.TooManyErrors = true
	}
	judge(st, slo)
}

// sweepPoints are the sweep's completed requests as (prompt tokens, TTFT):
// the server's count when it gave one, else the planned length.
func sweepPoints(ss []Sample) [][2]float64 {
	var pts [][2]float64
	for _, s := range ss {
		if !s.OK() {
			continue
		}
		x := float64(s.Prompt)
		if !s.Usage || s.Prompt <= 0 {
			x = float64(s.Asked)
		}
		pts = append(pts, [2]float64{x, s.TTFT})
	}
	return pts
}

// derive computes what the whole probe shows from its sweep and steps: the
// fit, the decode floor, the knee and the capacity.
func derive(res *Result) {
	res.Sweep.Fit, res.Sweep.FitNote = nil, ""
	if f, err := fitTTFT(sweepPoints(res.Sweep.Samples)); err != nil {
		res.Sweep.FitNote = err.Error()
	} else {
		res.Sweep.Fit = f
	}
	var gaps []float64
	for _, s := range res.Sweep.Samples {
		if s.OK() {
			gaps = append(gaps, s.ITLs...)
		}
	}
	for _, st := range res.Steps {
		if !st.OpenLoop && st.Load == 1 {
			for _, s := range st.Requests {
				if s.OK() {
					gaps = append(gaps, s.ITLs...)
				}
			}
		}
	}
	res.ITL = nil
	if len(gaps) > 0 {
		p := Summarise(gaps)
		res.ITL = &p
	}
	res.Knee = findKnee(res.Steps)
	res.Capacity = findCapacity(res.Steps)
}

// Reanalyze recomputes a result's figures from the requests it kept
// (Options.KeepRequests), against slo: the same computation the probe
// made, so a recorded probe can be judged again without its server. The
// steps' diagnoses are not redone (they need the engine's metrics).
func Reanalyze(res *Result, slo SLO) error {
	for i := range res.Steps {
		st := &res.Steps[i]
		if len(st.Requests) == 0 && st.Sent > 0 {
			return fmt.Errorf("step %d kept no requests: record the probe with its requests kept", i)
		}
		summariseStep(st, slo, res.Plan.Limits.ErrorRate)
	}
	res.Plan.SLO = slo
	derive(res)
	return nil
}
