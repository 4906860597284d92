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
		// One sort for all members: the others of a member are the sorted
		// values less one copy of its own (a fleet of thousands stays
		// n log n).
		var all []float64
		for _, m := range inst {
			if x := get(m); Present(x) {
				all = append(all, x)
			}
		}
		sort.Float64s(all)
		best, name := math.NaN(), ""
		for _, m := range inst {
			x := get(m)
			if !Present(x) || len(all) < 2 {
				continue
			}
			med := medianWithout(all, sort.SearchFloat64s(all, x))
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
	// Queue seconds, not waiting gauges: exact over the window however
	// few readings the gauges had.
	var top, all float64
	busiest := ""
	for _, m := range inst {
		if q := m.Values.Stage.Queue; Present(q.Mean) && Present(q.Count) {
			if q.Mean*q.Count > top {
				top, busiest = q.Mean*q.Count, m.Target.Instance
			}
			all += q.Mean * q.Count
		}
	}
	if all > 0 {
		v.QueueTopShare = top / all
		e.Text["service.queue_top"] = busiest
		e.Cite("service.queue_top_share", Source{Metric: "derived", Note: "the instance with the most queue wait: its queue seconds ÷ every instance's"})
	}
	if r, n := outlier(func(m *Evidence) float64 { return m.Values.Service.Waiting.Mean }, 1); Present(r) {
		v.WaitingOutlierRatio = r
		e.Text["service.waiting_outlier"] = n
		e.Cite("service.waiting_outlier_ratio", Source{Metric: "derived", Note: "per-instance mean waiting against the median of the others"})
	}
}

// medianWithout is the median of sorted less its element at skip.
func medianWithout(sorted []float64, skip int) float64 {
	at := func(k int) float64 {
		if k >= skip {
			k++
		}
		return sorted[k]
	}
	n := len(sorted) - 1
	if n%2 == 1 {
		return at(n / 2)
	}
	return (at(n/2-1) + at(n/2)) / 2
}
