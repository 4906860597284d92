package window

import (
	"math"
)

// MaxTimelinePoints bounds a timeline: a chart has no use for more, and the
// JSON report carries every curve.
const MaxTimelinePoints = 240

// Timeline pairs a gauge's points (or a per-step value, index i covering
// point i−1 to i) with seconds from the window's start, assuming the points
// are evenly spaced across it. Missing points are left out; past
// MaxTimelinePoints neighbours merge into their maximum, so a spike survives.
// Nil when the window has no known length or fewer than two points.
func (w *Window) Timeline(points []float64) [][2]float64 {
	secs := w.Seconds()
	if math.IsNaN(secs) || secs <= 0 || len(points) < 2 {
		return nil
	}
	step := secs / float64(len(points)-1)
	per := (len(points) + MaxTimelinePoints - 1) / MaxTimelinePoints
	var out [][2]float64
	for i := 0; i < len(points); i += per {
		x, y := math.NaN(), math.NaN()
		for j := i; j < min(i+per, len(points)); j++ {
			if p := points[j]; !math.IsNaN(p) && !math.IsInf(p, 0) && (math.IsNaN(y) || p > y) {
				x, y = float64(j)*step, p
			}
		}
		if !math.IsNaN(y) {
			out = append(out, [2]float64{x, y})
		}
	}
	return out
}
