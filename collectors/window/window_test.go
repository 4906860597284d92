package window

import (
	"math"
	"testing"
)

func TestQuantileMatchesPromQL(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name string
		q    float64
		b    []Bucket
		want float64
	}{
		// 100 observations, uniform in (0,1], (1,2], (2,4]: 25, 25, 50.
		{"median interpolates", 0.5, []Bucket{{1, 25}, {2, 50}, {4, 100}, {inf, 100}}, 2},
		{"first bucket from zero", 0.1, []Bucket{{1, 25}, {2, 50}, {4, 100}, {inf, 100}}, 0.4},
		{"p90 inside bucket", 0.9, []Bucket{{1, 25}, {2, 50}, {4, 100}, {inf, 100}}, 3.6},
		{"rank in +Inf returns second-highest bound", 0.99, []Bucket{{1, 25}, {2, 50}, {inf, 100}}, 2},
		{"no +Inf bucket is NaN", 0.5, []Bucket{{1, 25}, {2, 50}}, math.NaN()},
		{"no observations is NaN", 0.5, []Bucket{{1, 0}, {inf, 0}}, math.NaN()},
		{"only +Inf is NaN", 0.5, []Bucket{{inf, 10}}, math.NaN()},
		{"q below 0", -0.1, []Bucket{{1, 1}, {inf, 1}}, math.Inf(-1)},
		{"q above 1", 1.1, []Bucket{{1, 1}, {inf, 1}}, math.Inf(1)},
		{"unsorted input", 0.5, []Bucket{{inf, 100}, {4, 100}, {1, 25}, {2, 50}}, 2},
		{"empty buckets skipped", 0.5, []Bucket{{1, 0}, {2, 0}, {4, 10}, {8, 10}, {inf, 10}}, 3},
		{"non-monotonic counts are enveloped", 0.6, []Bucket{{1, 10}, {2, 8}, {4, 20}, {inf, 20}}, 2.4},
		{"non-positive first bound returned as is", 0.1, []Bucket{{-1, 5}, {1, 10}, {inf, 10}}, -1},
		{"duplicate bounds coalesce", 0.5, []Bucket{{1, 5}, {1, 5}, {2, 20}, {inf, 20}}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Quantile(c.q, c.b)
			if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(c.want) && math.Abs(got-c.want) > 1e-9) {
				t.Fatalf("Quantile(%v) = %v, want %v", c.q, got, c.want)
			}
		})
	}
}

func TestQuantileDoesNotModifyInput(t *testing.T) {
	b := []Bucket{{math.Inf(1), 100}, {1, 25}, {2, 10}}
	Quantile(0.5, b)
	if b[0].UpperBound != math.Inf(1) || b[2].Count != 10 {
		t.Fatalf("input changed: %v", b)
	}
}

func TestCounterIncrease(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name   string
		in     []float64
		inc    float64
		resets int
	}{
		{"plain", []float64{10, 15, 30}, 20, 0},
		{"reset counts from zero", []float64{100, 120, 5, 25}, 45, 1},
		{"two resets", []float64{50, 2, 1, 4}, 2 + 1 + 3, 2},
		{"gaps are skipped", []float64{10, nan, 20}, 10, 0},
		{"single sample", []float64{10}, 0, 0},
	}
	for _, c := range cases {
		inc, r := CounterIncrease(c.in)
		if inc != c.inc || r != c.resets {
			t.Errorf("%s: got %v/%d, want %v/%d", c.name, inc, r, c.inc, c.resets)
		}
	}
}

func FuzzQuantile(f *testing.F) {
	f.Add(0.5, 1.0, 3.0, 2.0, 5.0, 7.0)
	f.Fuzz(func(t *testing.T, q, b1, c1, b2, c2, total float64) {
		b := []Bucket{{b1, c1}, {b2, c2}, {math.Inf(1), total}}
		got := Quantile(q, b)
		if q >= 0 && q <= 1 && !math.IsNaN(got) && !math.IsInf(got, 0) {
			lo, hi := math.Min(0, math.Min(b1, b2)), math.Max(b1, b2)
			if got < lo-1e-9*math.Abs(lo) || got > hi+1e-9*math.Abs(hi) {
				t.Fatalf("quantile %v outside bucket bounds [%v, %v]", got, lo, hi)
			}
		}
	})
}

func FuzzCounterIncrease(f *testing.F) {
	f.Add(1.0, 2.0, 0.5, 3.0)
	f.Fuzz(func(t *testing.T, a, b, c, d float64) {
		inc, _ := CounterIncrease([]float64{a, b, c, d})
		if inc < 0 && a >= 0 && b >= 0 && c >= 0 && d >= 0 {
			t.Fatalf("negative increase %v from non-negative samples", inc)
		}
	})
}

func TestCountAbove(t *testing.T) {
	inf := math.Inf(1)
	b := []Bucket{{0.1, 50}, {0.5, 90}, {1, 98}, {inf, 100}}
	for _, c := range []struct{ x, want float64 }{{0.5, 10}, {0.75, 6}, {1, 2}, {5, 2}, {0.05, 75}} {
		if got := CountAbove(c.x, b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("CountAbove(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if !math.IsNaN(CountAbove(0.5, b[:3])) {
		t.Error("no +Inf bucket must give NaN")
	}
}

func TestSumAbove(t *testing.T) {
	b := []Bucket{{0.1, 90}, {0.5, 95}, {1, 99}, {math.Inf(1), 100}}
	// 4 observations in (0.5, 1] at 0.75, one past 1 counted at 1.
	if got := SumAbove(0.5, b); math.Abs(got-4) > 1e-9 {
		t.Fatalf("SumAbove(0.5) = %v, want 4", got)
	}
	// Half of (0.5, 1] lies above 0.75: 2 observations at 0.875, plus 1.
	if got := SumAbove(0.75, b); math.Abs(got-2.75) > 1e-9 {
		t.Fatalf("SumAbove(0.75) = %v, want 2.75", got)
	}
	if !math.IsNaN(SumAbove(0.5, b[:3])) {
		t.Fatal("without +Inf the sum is unknown")
	}
}

// Stalls are counted from a bucket bound: where 0.5 s is not one (SGLang's
// ITL buckets have 0.4 and 0.6), the count starts at 0.6 and errs low
// instead of taking slow 0.45 s steps for stalls.
func TestStallsCountFromABound(t *testing.T) {
	sg := []Bucket{{0.4, 90}, {0.6, 100}, {1, 104}, {math.Inf(1), 105}}
	at, ok := BoundAtOrAbove(0.5, sg)
	if !ok || at != 0.6 {
		t.Fatalf("bound %v, want 0.6", at)
	}
	if n := CountAbove(at, sg); n != 5 {
		t.Errorf("stalls %v, want 5 (only those past 0.6 s)", n)
	}
	vl := []Bucket{{0.4, 90}, {0.5, 95}, {0.75, 100}, {math.Inf(1), 105}}
	if at, ok := BoundAtOrAbove(0.5, vl); !ok || at != 0.5 {
		t.Errorf("bound %v, want 0.5 where it is a bound", at)
	}
	// No finite bound reaches 0.5 s: stalls cannot be counted at all.
	if _, ok := BoundAtOrAbove(0.5, []Bucket{{0.1, 1}, {math.Inf(1), 2}}); ok {
		t.Error("a bound was made up past the last finite one")
	}
}
