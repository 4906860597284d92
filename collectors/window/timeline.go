package window

import (
	"math"
)

// MaxTimelinePoints bounds a timeline: a chart has no use for more, and the
// JSON report carries every curve.
const MaxTimelinePoints = 240

// Timeline pairs a gauge's points (or a per-step value, index i covering
// point i−1 to i, placed at point i) with seconds from the window's start:
// the points' real times when the window has them (Times), else even
// spacing across the window, exact when only the spacing is known. A gap
// in the times stays a gap in x, so a chart breaks its line there. Missing
// points are left out; past MaxTimelinePoints, each run of neighbours keeps
// its lowest and its highest point, in time order, so neither a spike nor a
// dip is lost. Nil when the window has no known length, fewer than two
// points, or times for a different number of points.
func (w *Window) Timeline(points []float64) [][2]float64 {
	xs := w.x(len(points))
	if xs == nil {
		return nil
	}
	per := 1
	if len(points) > MaxTimelinePoints {
		per = (2*len(points) + MaxTimelinePoints - 1) / MaxTimelinePoints
	}
	var out [][2]float64
	for i := 0; i < len(points); i += per {
		lo, hi := -1, -1
		for j := i; j < min(i+per, len(points)); j++ {
			p := points[j]
			if math.IsNaN(p) || math.IsInf(p, 0) {
				continue
			}
			if lo < 0 || p < points[lo] {
				lo = j
			}
			if hi < 0 || p > points[hi] {
				hi = j
			}
		}
		switch {
		case lo < 0:
		case lo == hi:
			out = append(out, [2]float64{xs[lo], points[lo]})
		default:
			a, b := min(lo, hi), max(lo, hi)
			out = append(out, [2]float64{xs[a], points[a]}, [2]float64{xs[b], points[b]})
		}
	}
	return out
}
