package window

import (
	"math"
	"sort"
)

// Quantile returns the q-quantile of cumulative buckets exactly as PromQL's
// histogram_quantile does for classic histograms: linear interpolation inside
// a bucket, 0 as the lower bound of the first bucket when its bound is
// positive, the second-highest bound when the rank falls in +Inf, NaN without
// a +Inf bucket or without observations. The input is not modified.
func Quantile(q float64, in []Bucket) float64 {
	v, _, _ := QuantileBucket(q, in)
	return v
}

// QuantileBucket is Quantile with the bounds of the bucket the value was
// interpolated in: the value is known only to lie between them. Where
// Quantile answers a bound itself (the rank in the +Inf bucket, a bucket at
// or below zero), both bounds are that answer; NaN where it answers NaN.
func QuantileBucket(q float64, in []Bucket) (v, lo, hi float64) {
	nan := math.NaN()
	if math.IsNaN(q) {
		return nan, nan, nan
	}
	if q < 0 {
		return math.Inf(-1), math.Inf(-1), math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(1), math.Inf(1), math.Inf(1)
	}
	if len(in) == 0 {
		return nan, nan, nan
	}
	b := make([]Bucket, len(in))
	copy(b, in)
	sort.SliceStable(b, func(i, j int) bool { return b[i].UpperBound < b[j].UpperBound })
	if !math.IsInf(b[len(b)-1].UpperBound, 1) {
		return nan, nan, nan
	}
	b = coalesce(b)
	correctPrecision(b, 1e-12)
	ensureMonotonic(b)
	if len(b) < 2 {
		return nan, nan, nan
	}
	obs := b[len(b)-1].Count
	if obs == 0 || math.IsNaN(obs) {
		return nan, nan, nan
	}
	rank := q * obs
	i := sort.Search(len(b)-1, func(i int) bool { return b[i].Count >= rank })
	if i == len(b)-1 {
		x := b[len(b)-2].UpperBound
		return x, x, x
	}
	if i == 0 && b[0].UpperBound <= 0 {
		x := b[0].UpperBound
		return x, x, x
	}
	start, end, count := 0.0, b[i].UpperBound, b[i].Count
	if i > 0 {
		start = b[i-1].UpperBound
		count -= b[i-1].Count
		rank -= b[i-1].Count
	}
	return start + (end-start)*(rank/count), start, end
}

func coalesce(b []Bucket) []Bucket {
	last, n := b[0], 0
	for _, x := range b[1:] {
		if x.UpperBound == last.UpperBound {
			last.Count += x.Count
			continue
		}
		b[n] = last
		last = x
		n++
	}
	b[n] = last
	return b[:n+1]
}

func correctPrecision(b []Bucket, tolerance float64) {
	prev := b[0].Count
	for i := 1; i < len(b); i++ {
		cur := b[i].Count
		delta := math.Abs(cur - prev)
		if delta == 0 {
			continue
		}
		if delta/cur <= tolerance {
			b[i].Count = prev
		} else {
			prev = cur
		}
	}
}

func ensureMonotonic(b []Bucket) {
	max := b[0].Count
	for i := 1; i < len(b); i++ {
		switch {
		case b[i].Count > max:
			max = b[i].Count
		case b[i].Count < max:
			b[i].Count = max
		}
	}
}

// HasInf reports whether the buckets include the +Inf bucket.
func HasInf(b []Bucket) bool {
	for _, x := range b {
		if math.IsInf(x.UpperBound, 1) {
			return true
		}
	}
	return false
}

// CountAbove estimates how many observations exceed x, interpolating linearly
// inside the bucket that holds x (exact when x is a bucket bound), as PromQL's
// histogram_fraction does. NaN without a +Inf bucket or observations.
func CountAbove(x float64, in []Bucket) float64 {
	if len(in) == 0 || !HasInf(in) {
		return math.NaN()
	}
	b := tidy(in)
	total := b[len(b)-1].Count
	if total == 0 || math.IsNaN(total) {
		return math.NaN()
	}
	lower, below := 0.0, 0.0
	for _, bk := range b {
		if x < bk.UpperBound {
			if math.IsInf(bk.UpperBound, 1) || bk.UpperBound == lower {
				return total - below
			}
			frac := (x - lower) / (bk.UpperBound - lower)
			return total - (below + frac*(bk.Count-below))
		}
		lower, below = bk.UpperBound, bk.Count
	}
	return total - below
}

// BoundAtOrAbove returns the smallest finite bucket bound at or above x, so
// that counts above it are exact; false when no finite bound reaches x.
func BoundAtOrAbove(x float64, in []Bucket) (float64, bool) {
	best := math.Inf(1)
	for _, b := range in {
		if b.UpperBound >= x && b.UpperBound < best {
			best = b.UpperBound
		}
	}
	return best, !math.IsInf(best, 1)
}

// ObservedRange bounds the observations of cumulative buckets holding count
// observations: above the bound below the first bucket with any, and at most
// the bound of the first bucket holding them all. A mean outside it means
// _sum and the buckets disagree.
func ObservedRange(in []Bucket, count float64) (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if len(in) == 0 || !(count > 0) {
		return lo, hi
	}
	b := make([]Bucket, len(in))
	copy(b, in)
	sort.SliceStable(b, func(i, j int) bool { return b[i].UpperBound < b[j].UpperBound })
	for i := range b {
		if b[i].Count > 1e-9*count {
			if i > 0 {
				lo = b[i-1].UpperBound
			}
			break
		}
	}
	for i := range b {
		if b[i].Count >= count*(1-1e-9) {
			hi = b[i].UpperBound
			break
		}
	}
	return lo, hi
}

// SumAbove estimates the sum of the observations above x from cumulative
// buckets: each bucket's share above x at its midpoint, as the quantiles
// interpolate; observations past the highest finite bound count at that
// bound, so the estimate errs low. NaN without a +Inf bucket.
func SumAbove(x float64, in []Bucket) float64 {
	if len(in) == 0 || !HasInf(in) {
		return math.NaN()
	}
	b := tidy(in)
	var sum, lower, below float64
	for _, bk := range b {
		n := bk.Count - below
		switch {
		case n <= 0 || bk.UpperBound <= x:
		case math.IsInf(bk.UpperBound, 1):
			sum += n * math.Max(lower, x)
		default:
			lo := math.Max(lower, x)
			frac := (bk.UpperBound - lo) / (bk.UpperBound - lower)
			sum += n * frac * (lo + bk.UpperBound) / 2
		}
		lower, below = bk.UpperBound, bk.Count
	}
	return sum
}

// tidy returns a sorted copy of cumulative buckets with duplicate bounds
// merged and counts made monotonic, as the quantile reads them.
func tidy(in []Bucket) []Bucket {
	b := make([]Bucket, len(in))
	copy(b, in)
	sort.SliceStable(b, func(i, j int) bool { return b[i].UpperBound < b[j].UpperBound })
	b = coalesce(b)
	ensureMonotonic(b)
	return b
}
