package evidence

import (
	"math"
	"sort"
)

// Fleet compares each instance member with the median of the others: one
// replica far above its peers is load imbalance or a sick instance. It sets
// service.instances and the outlier ratios on e.
func Fleet(e *Evidence) {
	var inst []*Evidence
	for _, m := range e.Members {
		if m.Target.Instance != "" && m.Target.Engine == "" {
			inst = append(inst, m)
		}
	}
	v := &e.Values.Service
	v.Instances = float64(max(1, len(inst)))
	e.Cite("service.instances", Source{Metric: "derived", Note: "instance label values (one server when there are none)"})
	if len(inst) < 2 {
		return
	}
	outlier := func(get func(*Evidence) float64, smooth float64) (float64, string) {
		best, name := math.NaN(), ""
		for i, m := range inst {
			x := get(m)
			var others []float64
			for j, o := range inst {
				if y := get(o); j != i && Present(y) {
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
				best, name = r, m.Target.Instance
			}
		}
		return best, name
	}
	if r, n := outlier(func(m *Evidence) float64 { return m.Values.Stage.TTFT.P99 }, 0); Present(r) {
		v.TTFTP99OutlierRatio = r
		e.Text["service.ttft_p99_outlier"] = n
		e.Cite("service.ttft_p99_outlier_ratio", Source{Metric: "derived", Note: "per-instance TTFT p99 against the median of the others"})
	}
	if r, n := outlier(func(m *Evidence) float64 { return m.Values.Service.Waiting.Mean }, 1); Present(r) {
		v.WaitingOutlierRatio = r
		e.Text["service.waiting_outlier"] = n
		e.Cite("service.waiting_outlier_ratio", Source{Metric: "derived", Note: "per-instance mean waiting against the median of the others"})
	}
}
