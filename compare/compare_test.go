package compare

import (
	"maps"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// summary is a distribution's evidence as a diagnosis saves it, from exact
// samples.
func summary(xs []float64) advisor.TargetReport {
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 { return s[int(math.Ceil(p*float64(len(s))))-1] }
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return advisor.TargetReport{Evidence: map[string]any{"stage": map[string]any{"ttft": map[string]any{"count": float64(len(s)), "mean": sum / float64(len(s)),
		"p50": q(0.5), "p90": q(0.9), "p95": q(0.95), "p99": q(0.99), "max": s[len(s)-1]}}}}
}

// sampleSizes are the sizes of the samples the band is calibrated on: 200
// draws, and in the heavy tier 2000 as well.
func sampleSizes() []int {
	if testkit.Heavy() {
		return []int{200, 2000}
	}
	return []int{200}
}

// Two samples of one distribution differ beyond the band no more often
// than a 95% band allows: the band is calibrated (or wider), for a
// symmetric, a skewed and a heavy-tailed distribution, small and (in the
// heavy tier) large.
func TestNoiseBandIsCalibrated(t *testing.T) {
	var rng *rand.Rand
	draws := map[string]func() float64{
		"normal":      func() float64 { return 1 + 0.1*rng.NormFloat64() },
		"exponential": func() float64 { return rng.ExpFloat64() },
		"lognormal":   func() float64 { return math.Exp(rng.NormFloat64()) },
		// Requests that time out at 30 s: a tail past p99 the body says
		// nothing of.
		"timeouts": func() float64 {
			if rng.Float64() < 0.005 {
				return 30
			}
			return math.Exp(rng.NormFloat64() * 0.5)
		},
	}
	for _, name := range slices.Sorted(maps.Keys(draws)) {
		draw := draws[name]
		rng = rand.New(rand.NewSource(7)) // each distribution its own draws, whatever the order
		for _, n := range sampleSizes() {
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
					va, vb := *value(ea, "stage.ttft."+stat), *value(eb, "stage.ttft."+stat)
					if math.Abs(va-vb) > math.Hypot(na, nb) {
						false_++
					}
				}
				// 5% expected at most; 8% allows for the trials' own spread.
				t.Logf("%s n=%d %s: %.1f%%", name, n, stat, 100*float64(false_)/trials)
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
			if math.Abs(*value(ea, "stage.ttft."+stat)-*value(eb, "stage.ttft."+stat)) > math.Hypot(noise(ea, "stage.ttft", stat), noise(eb, "stage.ttft", stat)) {
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

// Without a largest value (a Prometheus histogram whose top occupied
// bucket is +Inf), what lies past p99 is unknown: the bands of the mean
// and p99 are unknown, not extrapolated; p50 and p90 keep theirs. Per-token
// figures without a request count have no band either.
func TestNoiseUnknownTail(t *testing.T) {
	r := summary([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	ttft := r.Evidence["stage"].(map[string]any)["ttft"].(map[string]any)
	delete(ttft, "max")
	ttft["count"] = 2000.0
	for stat, known := range map[string]bool{"mean": false, "p99": false, "p50": true, "p90": true} {
		if got := noise(r, "stage.ttft", stat); math.IsNaN(got) == known {
			t.Errorf("%s without a max: band %v", stat, got)
		}
	}
	r.Resolution = map[string][2]float64{"stage.ttft.max": {20, 25}}
	if got := noise(r, "stage.ttft", "mean"); math.IsNaN(got) {
		t.Error("the top bucket's bound gives the mean a band")
	}
	itl := advisor.TargetReport{Evidence: map[string]any{"stage": map[string]any{"itl": map[string]any{"count": 5e5, "mean": 0.02,
		"p50": 0.018, "p90": 0.03, "p95": 0.04, "p99": 0.06, "max": 0.2}}}}
	if got := noise(itl, "stage.itl", "mean"); !math.IsNaN(got) {
		t.Errorf("ITL without a request count: band %v", got)
	}
	itl.Evidence["service"] = map[string]any{"finished": 1000.0}
	if got := noise(itl, "stage.itl", "mean"); math.IsNaN(got) || got < 0.001 {
		t.Errorf("ITL over 1000 requests: band %v", got)
	}
}

// A withheld node is not compared, and a figure whose band is unknown makes
// the target inconclusive, never no change; a gate on it is unevaluated.
func TestWithheldAndUnknownAreNotNoChange(t *testing.T) {
	mk := func(q float64, withheld bool) *advisor.Diagnosis {
		r := advisor.TargetReport{Evidence: map[string]any{"stage": map[string]any{"queue": map[string]any{"count": 500.0, "mean": q,
			"p50": q, "p90": 2 * q, "p95": 3 * q, "p99": 4 * q}}}}
		if withheld {
			r.Inconsistencies = []evidence.Inconsistency{{Check: "x", Fields: []string{"stage.queue"}}}
		}
		return &advisor.Diagnosis{Targets: []advisor.TargetReport{r}}
	}
	c := Compare(mk(1, false), mk(1, false), "a", "b", Options{})
	if v := c.Targets[0].Verdict; v != Inconclusive {
		t.Errorf("no max, no requests: %s (%s)", v, c.Targets[0].Why)
	}
	if !c.Gate(map[string]float64{"queue_mean": 0.1}) || len(c.Unevaluated) != 1 {
		t.Errorf("a gate on an unknown band: unevaluated %v", c.Unevaluated)
	}
	c = Compare(mk(1, true), mk(5, false), "a", "b", Options{})
	if len(c.Targets[0].Latency) != 0 || c.Targets[0].Verdict != Inconclusive {
		t.Errorf("withheld before: %+v", c.Targets[0])
	}
}

// A change of serving engine is named among the settings that changed.
func TestServingEngineChangeIsNamed(t *testing.T) {
	mk := func(by string, q float64) *advisor.Diagnosis {
		r := summary([]float64{q, 2 * q, 3 * q, 4 * q, 5 * q, 6 * q, 7 * q, 8 * q, 9 * q, 10 * q})
		r.Target.ServedBy = by
		return &advisor.Diagnosis{Targets: []advisor.TargetReport{r}}
	}
	c := Compare(mk("vllm", 1), mk("sglang", 10), "a", "b", Options{})
	tg := c.Targets[0]
	if len(tg.Settings) != 1 || tg.Settings[0] != "serving engine vllm → sglang" {
		t.Fatalf("settings %v", tg.Settings)
	}
	if tg.Verdict != Changed || !strings.Contains(tg.Why, "serving engine vllm → sglang") {
		t.Errorf("%s: %q", tg.Verdict, tg.Why)
	}
}
