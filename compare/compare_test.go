package compare

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// summary is a distribution's evidence as a diagnosis saves it, from exact
// samples.
func summary(xs []float64) map[string]any {
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 { return s[int(math.Ceil(p*float64(len(s))))-1] }
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return map[string]any{"stage": map[string]any{"ttft": map[string]any{"count": float64(len(s)), "mean": sum / float64(len(s)),
		"p50": q(0.5), "p90": q(0.9), "p95": q(0.95), "p99": q(0.99), "max": s[len(s)-1]}}}
}

// Two samples of one distribution differ beyond the band no more often
// than a 95% band allows: the band is calibrated (or wider), for a
// symmetric, a skewed and a heavy-tailed distribution, small and large.
func TestNoiseBandIsCalibrated(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	draws := map[string]func() float64{
		"normal":      func() float64 { return 1 + 0.1*rng.NormFloat64() },
		"exponential": func() float64 { return rng.ExpFloat64() },
		"lognormal":   func() float64 { return math.Exp(rng.NormFloat64()) },
	}
	for name, draw := range draws {
		for _, n := range []int{200, 2000} {
			for _, stat := range []string{"mean", "p50", "p90", "p99"} {
				const trials = 400
				false_ := 0
				for range trials {
					a, b := make([]float64, n), make([]float64, n)
					for i := range a {
						a[i], b[i] = draw(), draw()
					}
					ea, eb := summary(a), summary(b)
					na, nb := noise(ea, "stage.ttft", stat), noise(eb, "stage.ttft", stat)
					va, vb := *number(ea, "stage.ttft."+stat), *number(eb, "stage.ttft."+stat)
					if math.Abs(va-vb) > math.Hypot(na, nb) {
						false_++
					}
				}
				// 5% expected at most; 8% allows for the trials' own spread.
				if rate := float64(false_) / trials; rate > 0.08 {
					t.Errorf("%s n=%d %s: same distribution judged different in %.1f%% of pairs", name, n, stat, rate*100)
				}
			}
		}
	}
}

// A real shift is found: the mean and p90 of a distribution moved by a
// fifth are judged different in most pairs of 2000 draws.
func TestNoiseBandFindsAShift(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	for _, stat := range []string{"mean", "p90"} {
		found := 0
		for range 200 {
			a, b := make([]float64, 2000), make([]float64, 2000)
			for i := range a {
				a[i], b[i] = math.Exp(rng.NormFloat64()*0.5), 1.2*math.Exp(rng.NormFloat64()*0.5)
			}
			ea, eb := summary(a), summary(b)
			if math.Abs(*number(ea, "stage.ttft."+stat)-*number(eb, "stage.ttft."+stat)) > math.Hypot(noise(ea, "stage.ttft", stat), noise(eb, "stage.ttft", stat)) {
				found++
			}
		}
		if found < 180 {
			t.Errorf("%s: a 20%% shift found in %d of 200 pairs", stat, found)
		}
	}
}

func TestAtInterpolates(t *testing.T) {
	pts := [][2]float64{{0.5, 1}, {0.9, 2}, {0.95, 3}, {0.99, 5}}
	for _, c := range []struct{ p, want float64 }{{0.5, 1}, {0.7, 1.5}, {0.97, 4}, {0.995, 5.25}, {0.1, 0}} {
		if got := at(pts, c.p); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("at(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestFormatChange(t *testing.T) {
	for _, c := range []struct {
		x    float64
		abs  bool
		want string
	}{{0.5, false, "+50%"}, {0.012, false, "+1.2%"}, {-0.3, false, "-30%"}, {1.5, false, "×2.5"}, {2105.6, false, "×2107"},
		{-0.9995, false, "-99.95%"}, {0.05, true, "+5 pt"}, {0, false, "+0.0%"}} {
		if got := FormatChange(c.x, c.abs); got != c.want {
			t.Errorf("FormatChange(%v, %v) = %q, want %q", c.x, c.abs, got, c.want)
		}
	}
}
