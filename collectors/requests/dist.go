// Package requests reads request-level sources: `vllm bench serve` result
// JSON of every vintage, and per-request JSONL or CSV exported from a client
// or gateway. Each request is read once, streaming, so memory stays flat
// however large the file.
package requests

import (
	"math"
	"sort"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// ExactLimit is how many values a distribution keeps exactly; beyond it
// values go into a DDSketch whose quantiles are within SketchAccuracy
// (relative) of the true value.
const (
	ExactLimit     = 100_000
	SketchAccuracy = 0.01
)

// dist is one distribution: exact while small, sketched when large; count,
// sum and max always exact.
type dist struct {
	exact  []float64
	sketch *ddsketch.DDSketch
	fast   sketchFast
	n, sum float64
	max    float64
}

// sketchFast adds to a sketch's positive store directly: what
// DDSketch.Add does for a value in its range, without two interface calls.
type sketchFast struct {
	m        *mapping.CubicallyInterpolatedMapping
	pos      *store.DenseStore
	min, max float64 // the mapping's indexable range
}

func (d *dist) add(x float64) { d.addBin(x, binUnknown) }

// binUnknown: a value's sketch bin is not known beforehand.
const binUnknown = math.MinInt

// sketchBin is the bin addSketch puts x in, binUnknown when it is not one
// of the positive store's; m is the mapping newSketch makes.
func sketchBin(m *mapping.CubicallyInterpolatedMapping, x float64) int {
	x = math.Max(x, 1e-9)
	if x > m.MinIndexableValue() && x <= m.MaxIndexableValue() {
		return m.Index(x)
	}
	return binUnknown
}

// addBin is add, with x's sketch bin when it was found beforehand (gap
// workers do, off the tokenizer's core).
func (d *dist) addBin(x float64, bin int) {
	if !evidence.Present(x) || x < 0 {
		return
	}
	d.n++
	d.sum += x
	if d.n == 1 || x > d.max {
		d.max = x
	}
	if d.sketch == nil {
		d.exact = append(d.exact, x)
		if len(d.exact) <= ExactLimit {
			return
		}
		d.sketch, d.fast = newSketch()
		for _, v := range d.exact {
			d.addSketch(v)
		}
		d.exact = nil
		return
	}
	if bin != binUnknown {
		d.fast.pos.Add(bin)
		return
	}
	d.addSketch(x)
}

// newSketch: the cubically interpolated mapping keeps DDSketch's relative
// accuracy without a math.Log per value (the default mapping's cost); a
// dense store is a plain array of the few thousand bins latencies need.
func newSketch() (*ddsketch.DDSketch, sketchFast) {
	m := sketchMapping()
	pos := store.NewDenseStore()
	return ddsketch.NewDDSketch(m, pos, store.NewDenseStore()),
		sketchFast{m: m, pos: pos, min: m.MinIndexableValue(), max: m.MaxIndexableValue()}
}

func sketchMapping() *mapping.CubicallyInterpolatedMapping {
	m, err := mapping.NewCubicallyInterpolatedMapping(SketchAccuracy)
	if err != nil {
		panic(err) // SketchAccuracy is a valid constant
	}
	return m
}

// addSketch: DDSketch covers positive values; zero is its own bucket.
func (d *dist) addSketch(x float64) {
	x = math.Max(x, 1e-9)
	if f := &d.fast; x > f.min && x <= f.max {
		f.pos.Add(f.m.Index(x))
		return
	}
	_ = d.sketch.Add(x) // out of range: the sketch refuses it, as it always did
}

// Exact reports whether the quantiles are exact.
func (d *dist) Exact() bool { return d.sketch == nil }

// Dist summarises: quantiles by linear interpolation between order
// statistics (numpy's default, as vllm bench serve reports them).
func (d *dist) Dist() evidence.Dist {
	out := evidence.Dist{Count: d.n, Mean: math.NaN(), P50: math.NaN(), P90: math.NaN(), P95: math.NaN(),
		P99: math.NaN(), Max: math.NaN()}
	if d.n == 0 {
		return out
	}
	out.Mean, out.Max = d.sum/d.n, d.max
	q := func(p float64) float64 {
		if d.sketch != nil {
			v, err := d.sketch.GetValueAtQuantile(p)
			if err != nil {
				return math.NaN()
			}
			return v
		}
		return quantile(d.exact, p)
	}
	if d.sketch == nil {
		sort.Float64s(d.exact)
	}
	out.P50, out.P90, out.P95, out.P99 = q(0.5), q(0.9), q(0.95), q(0.99)
	return out
}

// quantile of sorted values, numpy-style linear interpolation.
func quantile(s []float64, p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	pos := p * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

func sortFloats(s []float64) { sort.Float64s(s) }
