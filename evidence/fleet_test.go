package evidence

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
)

// naiveOutlier is the definition Fleet implements: each member against the
// median of all the others, the largest ratio kept.
func naiveOutlier(xs []float64, smooth float64) (float64, int) {
	best, at := math.NaN(), -1
	for i, x := range xs {
		var others []float64
		for j, y := range xs {
			if j != i && Present(y) {
				others = append(others, y)
			}
		}
		if !Present(x) || len(others) == 0 {
			continue
		}
		sort.Float64s(others)
		med := others[len(others)/2]
		if len(others)%2 == 0 {
			med = (others[len(others)/2-1] + others[len(others)/2]) / 2
		}
		if med+smooth <= 0 {
			continue
		}
		if r := (x + smooth) / (med + smooth); !(r <= best) {
			best, at = r, i
		}
	}
	return best, at
}

// Fleet's one-sort median of the others gives the same ratio and outlier as
// sorting the others of every member, with ties, gaps and one member.
func TestFleetOutlierMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 500; trial++ {
		n := 1 + rng.Intn(9)
		e := New(Target{Model: "m"})
		xs := make([]float64, n)
		for i := range xs {
			switch rng.Intn(5) {
			case 0:
				xs[i] = math.NaN()
			case 1:
				xs[i] = float64(rng.Intn(3)) // ties and zeros
			default:
				xs[i] = rng.Float64() * 10
			}
			m := New(Target{Model: "m", Instance: fmt.Sprintf("10.0.0.%d:8000", i)})
			m.Values.Stage.TTFT.P99 = xs[i]
			m.Values.Service.Waiting.Mean = xs[i]
			e.Members = append(e.Members, m)
		}
		Fleet(e)
		for _, c := range []struct {
			smooth float64
			got    float64
			name   string
		}{{0, e.Values.Service.TTFTP99OutlierRatio, e.Text["service.ttft_p99_outlier"]}, {1, e.Values.Service.WaitingOutlierRatio, e.Text["service.waiting_outlier"]}} {
			want, at := naiveOutlier(xs, c.smooth)
			if n < 2 {
				want, at = math.NaN(), -1
			}
			if Present(want) != Present(c.got) || Present(want) && math.Abs(want-c.got) > 1e-12 {
				t.Fatalf("values %v smooth %g: ratio %v, want %v", xs, c.smooth, c.got, want)
			}
			// Members with equal values tie; the ratio names one of them.
			if at >= 0 && xs[at] != e.Members[indexOf(e, c.name)].Values.Stage.TTFT.P99 {
				t.Fatalf("values %v smooth %g: outlier %q, want value %v", xs, c.smooth, c.name, xs[at])
			}
		}
	}
}

func indexOf(e *Evidence, inst string) int {
	for i, m := range e.Members {
		if m.Target.Instance == inst {
			return i
		}
	}
	return -1
}
