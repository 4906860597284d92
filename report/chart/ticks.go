package chart

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/units"
)

// scale is an axis range with its ticks; lo and hi are the first and last
// tick, so the data fill the axis up to a round number.
type scale struct {
	unit   Unit
	lo, hi float64
	step   float64
	ticks  []float64
}

// step is mant × 10^exp, kept apart so that ticks are computed as exactly
// as floats allow (0.3, not 0.30000000000000004).
type step struct {
	mant float64
	exp  int
}

func (s step) times(i float64) float64 {
	if s.exp < 0 {
		return i * s.mant / math.Pow10(-s.exp)
	}
	return i * s.mant * math.Pow10(s.exp)
}

func (s step) value() float64 { return s.times(1) }

// durSteps are the round steps of a time axis from 10 s to a day.
var durSteps = []float64{10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}

// maxTicks bounds how many ticks an axis shows; with the candidate steps
// growing by at most 2.5×, the first step that fits gives at least 3.
const maxTicks = 6

// newScale chooses the axis range and ticks for data in [lo, hi]. Every
// unit is a magnitude, so the axis includes zero; a ratio within 0..1 spans
// 0–100% so that "full" looks full.
func newScale(u Unit, lo, hi float64) scale {
	if !ok(lo) || !ok(hi) || lo > hi {
		lo, hi = 0, 0
	}
	lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	if u == Ratio && lo >= 0 && hi <= 1 {
		return scale{unit: u, lo: 0, hi: 1, step: 0.2, ticks: []float64{0, 0.2, 0.4, 0.6, 0.8, 1}}
	}
	// Below 1e-100 float64 cannot split the range into ticks; such a range
	// is as good as empty.
	if hi-lo < 1e-100 {
		hi = lo + 1
		if u == Elapsed {
			hi = lo + 60
		}
	}
	return niceScale(u, lo, hi)
}

// niceScale picks the smallest round step (1, 2, 5 × 10^k, or a clock step
// for durations) that covers [lo, hi] with at most maxTicks ticks.
func niceScale(u Unit, lo, hi float64) scale {
	if !ok(lo) || !ok(hi) || lo > hi {
		lo, hi = 0, 1
	}
	// A range too narrow for float64 to split is widened.
	if m := math.Max(math.Abs(lo), math.Abs(hi)); hi-lo <= m*1e-9 {
		pad := math.Max(m*0.1, 1)
		if m == 0 {
			pad = 1
		}
		lo, hi = lo-pad, hi+pad
		if lo >= 0 && u != Seconds && u != Elapsed {
			lo = math.Max(lo, 0)
		}
	}
	dur := u == Seconds || u == Elapsed
	for _, s := range candidates(hi-lo, dur) {
		v := s.value()
		first := math.Floor(lo/v + 1e-9)
		last := math.Ceil(hi/v - 1e-9)
		if last-first+1 > maxTicks {
			continue
		}
		sc := scale{unit: u, step: v, lo: s.times(first), hi: s.times(last)}
		for i := first; i <= last; i++ {
			sc.ticks = append(sc.ticks, s.times(i))
		}
		if len(sc.ticks) < 2 { // only when lo == hi, which is padded above
			break
		}
		return sc
	}
	return scale{unit: u, lo: lo, hi: hi, step: hi - lo, ticks: []float64{lo, hi}}
}

// candidates lists steps in ascending order from well below span/maxTicks
// up to span.
func candidates(span float64, dur bool) []step {
	var out []step
	e := int(math.Floor(math.Log10(span / 60)))
decimal:
	for ; e < 400; e++ {
		for _, m := range []float64{1, 2, 5} {
			s := step{m, e}
			if dur && s.value() >= 10 {
				break decimal
			}
			out = append(out, s)
			if s.value() >= span {
				return out
			}
		}
	}
	for _, v := range durSteps {
		out = append(out, step{v, 0})
		if v >= span {
			return out
		}
	}
	for e := 0; e < 400; e++ { // multiples of days: 2, 5, 10, 20 … days
		for _, m := range []float64{1, 2, 5} {
			if e == 0 && m == 1 {
				continue
			}
			s := step{86400 * m, e}
			out = append(out, s)
			if s.value() >= span {
				return out
			}
		}
	}
	return out
}

// labels formats the ticks of sc: one decimal place more only where the
// step needs it, so 0, 0.5s, 1s, 1.5s rather than 0.00s, 0.50s.
func (sc scale) labels() []string {
	top := 0.0
	for _, t := range sc.ticks {
		top = math.Max(top, math.Abs(t))
	}
	out := make([]string, len(sc.ticks))
	for i, t := range sc.ticks {
		out[i] = tickLabel(t, sc.step, top, sc.unit)
	}
	return out
}

// tickLabel formats tick v of an axis whose largest tick is top. Counts
// take their suffix tick by tick (800, 1k, 1.2k); a duration axis keeps one
// unit throughout (0, 0.5s, 1s) so that the labels line up.
func tickLabel(v, step, top float64, u Unit) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	switch u {
	case Ratio:
		if a >= 1e4 {
			return sci(v*100) + "%"
		}
		return fixed(v*100, decimals(step*100)) + "%"
	case Seconds, Elapsed:
		switch {
		case a >= 1e8:
			return sci(v) + "s"
		case step >= 1:
			return units.ShortDuration(time.Duration(math.Round(v)) * time.Second)
		}
		for _, p := range []struct {
			scale  float64
			suffix string
		}{{1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}, {1e-9, "ns"}} {
			if top >= p.scale || p.suffix == "ns" {
				d := decimals(step / p.scale)
				if d < 0 {
					return sci(v) + "s"
				}
				return fixed(v/p.scale, d) + p.suffix
			}
		}
	}
	// Count and Tokens: 850, 1.2k, 3M.
	if a >= 1e15 {
		return sci(v)
	}
	for _, p := range []struct {
		scale  float64
		suffix string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}, {1, ""}} {
		if a >= p.scale || p.scale == 1 {
			d := decimals(step / p.scale)
			if d < 0 {
				return sci(v)
			}
			return fixed(v/p.scale, d) + p.suffix
		}
	}
	return sci(v)
}

// decimals is how many decimal places show a multiple of step exactly, or
// -1 when more than six would be needed.
func decimals(step float64) int {
	for d := 0; d <= 6; d++ {
		x := step * math.Pow10(d)
		if r := math.Round(x); r >= 1 && math.Abs(x-r) <= 1e-6*x {
			return d
		}
	}
	return -1
}

// fixed formats x with at most d decimals, dropping trailing zeros.
func fixed(x float64, d int) string {
	s := strconv.FormatFloat(x, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// sci is the fallback for magnitudes no suffix covers.
func sci(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }

// value formats a data value (bar ends, legends, text alternatives) the
// way the rest of the report does.
func value(x float64, u Unit) string {
	if !ok(x) {
		return "n/a"
	}
	switch u {
	case Seconds:
		if math.Abs(x) >= 1e8 {
			return sci(x) + "s"
		}
		return units.Duration(x)
	case Ratio:
		if math.Abs(x) >= 1e4 {
			return sci(x*100) + "%"
		}
		return units.Percent(x)
	case Elapsed:
		return elapsed(x)
	}
	return compact(x)
}

// elapsed formats a span of seconds as it is typed: 30s, 14m30s, 1h.
func elapsed(x float64) string {
	switch a := math.Abs(x); {
	case a >= 1e8:
		return sci(x) + "s"
	case a < 1 && a > 0:
		return units.Duration(x)
	}
	return units.ShortDuration(time.Duration(math.Round(x)) * time.Second)
}

// compact formats a count: 3.46, 850, 1.2k, 3.4M, 1.2B.
func compact(x float64) string {
	a := math.Abs(x)
	sign := ""
	if x < 0 {
		sign = "-"
	}
	switch {
	case a < 1e3:
		return units.Number(x)
	case a < 1e9:
		return sign + units.Tokens(a)
	case a < 1e12:
		return sign + strconv.FormatFloat(a/1e9, 'f', 1, 64) + "B"
	case a < 1e15:
		return sign + strconv.FormatFloat(a/1e12, 'f', 1, 64) + "T"
	}
	return sci(x)
}
