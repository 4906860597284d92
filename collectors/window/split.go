package window

// Matches reports whether every selector label equals the series label.
// With wildcard, a label the series lacks matches anything (an info series
// such as vLLM's cache_config_info has no model_name).
func Matches(sel, l Labels, wildcard bool) bool {
	for k, v := range sel {
		lv, ok := l[k]
		if !ok && wildcard {
			continue
		}
		if lv != v {
			return false
		}
	}
	return true
}

// Restrict keeps the series that match sel; info series match on the
// labels they carry.
func (w *Window) Restrict(sel Labels) *Window {
	return w.split(func(l Labels) []string {
		if Matches(sel, l, false) {
			return []string{""}
		}
		return nil
	}, func(l Labels) []string {
		if Matches(sel, l, true) {
			return []string{""}
		}
		return nil
	})[""]
}

// Partition splits a window by one label's values; info series without
// the label belong to every part.
func (w *Window) Partition(label string) map[string]*Window {
	values := map[string]bool{}
	key := func(l Labels) []string {
		if v, ok := l[label]; ok {
			values[v] = true
			return []string{v}
		}
		return nil
	}
	parts := w.split(key, nil)
	for v := range values {
		if parts[v] == nil {
			parts[v] = w.emptyLike()
		}
	}
	for name, ins := range w.Infos {
		for _, in := range ins {
			if v, ok := in.Labels[label]; ok {
				if p := parts[v]; p != nil {
					p.Infos[name] = append(p.Infos[name], in)
				}
				continue
			}
			for _, p := range parts {
				p.Infos[name] = append(p.Infos[name], in)
			}
		}
	}
	return parts
}

// emptyLike is a window with w's span and no series.
func (w *Window) emptyLike() *Window {
	n := New()
	n.Start, n.End, n.Length, n.Cumulative, n.Points, n.From = w.Start, w.End, w.Length, w.Cumulative, w.Points, w.From
	n.Times = w.Times
	n.Withheld = w.Withheld
	return n
}

// split files every series under the keys key returns; infoKey (nil: none)
// does the same for info series.
func (w *Window) split(key, infoKey func(Labels) []string) map[string]*Window {
	out := map[string]*Window{}
	get := func(k string) *Window {
		if out[k] == nil {
			out[k] = w.emptyLike()
		}
		return out[k]
	}
	for name, ss := range w.Counters {
		for _, s := range ss {
			for _, k := range key(s.Labels) {
				p := get(k)
				p.Counters[name] = append(p.Counters[name], s)
			}
		}
	}
	for name, ss := range w.Gauges {
		for _, s := range ss {
			for _, k := range key(s.Labels) {
				p := get(k)
				p.Gauges[name] = append(p.Gauges[name], s)
			}
		}
	}
	for name, ss := range w.Histograms {
		for _, s := range ss {
			for _, k := range key(s.Labels) {
				p := get(k)
				p.Histograms[name] = append(p.Histograms[name], s)
			}
		}
	}
	if infoKey != nil {
		for name, ss := range w.Infos {
			for _, s := range ss {
				for _, k := range infoKey(s.Labels) {
					p := get(k)
					p.Infos[name] = append(p.Infos[name], s)
				}
			}
		}
	}
	if out[""] == nil && infoKey != nil {
		out[""] = w.emptyLike()
	}
	return out
}

// LeastSquares fits y = a + slope·x and returns the slope and the mean of y.
func LeastSquares(xs, ys []float64) (slope, meanY float64) {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	n := float64(len(xs))
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, my
	}
	return sxy / sxx, my
}
