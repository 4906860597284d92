package scrape

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// Window turns snapshots of one server, oldest first, into a window. One
// snapshot gives a cumulative window (since server start). A series that
// appears after the first snapshot is counted from zero: vLLM creates labelled
// series on first use. A drop in a counter or histogram count is a restart.
// instance, when not empty, is added as a label to every series.
func Window(snaps []*Snapshot, instance, from string) *window.Window {
	w := window.New()
	w.From = from
	if len(snaps) == 0 {
		return w
	}
	w.Start, w.End = snaps[0].Time, snaps[len(snaps)-1].Time
	w.Cumulative = len(snaps) == 1
	w.Points = len(snaps)
	if times := snapTimes(snaps); len(snaps) > 1 && window.Increasing(times) {
		w.Times = times
	}
	label := func(l window.Labels) window.Labels {
		if instance == "" {
			return l
		}
		o := window.Labels{"instance": instance}
		for k, v := range l {
			o[k] = v
		}
		return o
	}
	// Series read earlier and missing from the last reading: what they
	// counted over the window is unknown.
	lost := map[string]string{}
	seenNote := map[string]bool{}
	for _, s := range snaps {
		for _, n := range s.Notes {
			if !seenNote[n] {
				seenNote[n] = true
				w.Notes = append(w.Notes, n)
			}
		}
	}

	for _, name := range familyNames(snaps, func(s *Snapshot) []string { return slices.Collect(maps.Keys(s.Counters)) }) {
		for _, key := range seriesKeys(snaps, func(s *Snapshot) map[string]counterSample { return s.Counters[name] }) {
			vals := make([]float64, len(snaps))
			var l window.Labels
			for i, s := range snaps {
				vals[i] = math.NaN()
				if c, ok := s.Counters[name][key]; ok {
					vals[i], l = c.value, c.labels
				} else if i == 0 && len(snaps) > 1 {
					vals[i] = 0
				}
			}
			if len(snaps) > 1 && math.IsNaN(vals[len(vals)-1]) && !math.IsNaN(lastPresent(vals)) {
				lost[name] = key
			}
			inc, resets := window.CounterIncrease(vals)
			if w.Cumulative {
				inc = vals[0]
			}
			w.Counters[name] = append(w.Counters[name], window.Counter{Labels: label(l), Increase: inc,
				Last: lastPresent(vals), Resets: resets})
		}
	}

	for _, name := range familyNames(snaps, func(s *Snapshot) []string { return slices.Collect(maps.Keys(s.Gauges)) }) {
		for _, key := range seriesKeys(snaps, func(s *Snapshot) map[string]gaugeSample { return s.Gauges[name] }) {
			g := window.Gauge{Points: make([]float64, len(snaps))}
			for i, s := range snaps {
				g.Points[i] = math.NaN()
				if c, ok := s.Gauges[name][key]; ok {
					g.Points[i], g.Labels = c.value, c.labels
				}
			}
			g.Labels = label(g.Labels)
			w.Gauges[name] = append(w.Gauges[name], g)
		}
	}

	for _, name := range familyNames(snaps, func(s *Snapshot) []string { return slices.Collect(maps.Keys(s.Histograms)) }) {
		for _, key := range seriesKeys(snaps, func(s *Snapshot) map[string]histSample { return s.Histograms[name] }) {
			if _, atEnd := snaps[len(snaps)-1].Histograms[name][key]; !atEnd && len(snaps) > 1 {
				lost[name] = key
			}
			var seq []*histSample
			for i, s := range snaps {
				if h, ok := s.Histograms[name][key]; ok {
					hh := h
					seq = append(seq, &hh)
				} else if i == 0 && len(snaps) > 1 {
					seq = append(seq, &histSample{})
				}
			}
			h := histIncrease(seq, w.Cumulative)
			if engine.StepFamily(name) && len(snaps) > 2 {
				h.Steps = steps(snaps, name, key)
			}
			h.Labels = label(h.Labels)
			w.Histograms[name] = append(w.Histograms[name], h)
		}
	}

	last := snaps[len(snaps)-1]
	for name, infos := range last.Infos {
		for _, l := range infos {
			w.Infos[name] = append(w.Infos[name], window.Info{Labels: label(l)})
		}
	}
	for _, s := range snaps {
		for name := range s.Withheld {
			delete(lost, name) // the lint said why already
		}
	}
	for name := range lost {
		if !snaps[len(snaps)-1].Declared[name] {
			delete(lost, name) // the whole family is gone: integrity says so
		}
	}
	for _, name := range slices.Sorted(maps.Keys(lost)) {
		w.Withhold(name, fmt.Sprintf("the series {%s} is in an earlier reading and missing from the last (a file cut short, or an exporter that restarted): what it counted over the window is unknown",
			strings.TrimSuffix(lost[name], ",")))
	}
	integrity(w, snaps)
	return w
}

// integrity withholds what the snapshots cannot vouch for and says what
// happened between them: families read but not trusted, families present at
// one end of the window only, counter resets and restarts.
func integrity(w *window.Window, snaps []*Snapshot) {
	for _, s := range snaps {
		for _, name := range slices.Sorted(maps.Keys(s.Withheld)) {
			w.Withhold(name, s.Withheld[name])
		}
	}
	first, last := snaps[0], snaps[len(snaps)-1]
	if len(snaps) > 1 && len(first.Declared) > 0 && len(last.Declared) > 0 {
		// Families of labelled series appear on first use (no request had
		// finished with that reason yet), but a gauge is always there: one
		// missing at the start means the first reading was cut short, and
		// then nothing missing from it can be counted from zero.
		cutStart := false
		for name := range last.Gauges {
			if !first.Declared[name] {
				cutStart = true
			}
		}
		for _, name := range slices.Sorted(maps.Keys(union(first.Declared, last.Declared))) {
			switch {
			case first.Declared[name] && !last.Declared[name]:
				w.Withhold(name, "present at the start of the window and missing at its end (a truncated file, or an exporter that restarted): what it counted over the window is unknown")
			case !first.Declared[name] && last.Declared[name] && cutStart:
				w.Withhold(name, "missing at the start of the window, whose reading lacks gauges the end has (a truncated file, or another server): its totals since start cannot stand for the window")
			}
		}
	}
	var resets []string
	for _, name := range slices.Sorted(maps.Keys(countersAndHists(w))) {
		n := 0
		for _, c := range w.Counters[name] {
			n += c.Resets
		}
		for _, h := range w.Histograms[name] {
			n += h.Resets
		}
		if n > 0 {
			resets = append(resets, fmt.Sprintf("%s (%d)", name, n))
		}
	}
	if len(resets) > 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("counters fell during the window, so the server restarted: %s; increases are counted across the restart as Prometheus does",
			strings.Join(resets, ", ")))
	}
	for i := 1; i < len(snaps); i++ {
		if a, b := snaps[i-1].ProcessStart, snaps[i].ProcessStart; a > 0 && b > a {
			w.Notes = append(w.Notes, fmt.Sprintf("the server restarted during the window (its process started again at %s)",
				time.Unix(int64(b), 0).UTC().Format(time.RFC3339)))
		}
	}
}

// Consistent refuses snapshots that cannot make one window: given newest
// first (every counter falls while the process is the same), or from
// servers whose configuration differs (cache_config_info changed).
func Consistent(snaps []*Snapshot, names []string) error {
	name := func(i int) string {
		if i < len(names) {
			return names[i]
		}
		return fmt.Sprintf("reading %d", i+1)
	}
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		if a.ProcessStart > 0 && b.ProcessStart > 0 && b.ProcessStart < a.ProcessStart {
			return fmt.Errorf("%s was taken from an older server process than %s before it: give the snapshots oldest first", name(i), name(i-1))
		}
		rose, fell := 0, 0
		for fam, series := range a.Counters {
			for key, c := range series {
				if d, ok := b.Counters[fam][key]; ok && d.value != c.value {
					if d.value > c.value {
						rose++
					} else {
						fell++
					}
				}
			}
		}
		for fam, series := range a.Histograms {
			for key, h := range series {
				if d, ok := b.Histograms[fam][key]; ok && d.count != h.count && !math.IsNaN(d.count) && !math.IsNaN(h.count) {
					if d.count > h.count {
						rose++
					} else {
						fell++
					}
				}
			}
		}
		if fell > 0 && rose == 0 && a.ProcessStart == b.ProcessStart {
			why := "give the snapshots oldest first"
			if a.ProcessStart == 0 {
				why = "they look newest-first (give the oldest first), or the server restarted between them (diagnose each alone)"
			}
			return fmt.Errorf("every counter that moved fell from %s to %s: %s", name(i-1), name(i), why)
		}
	}
	return SameConfig(snaps, names)
}

// SameConfig refuses readings of servers configured differently: a window
// across them would blend two servers.
func SameConfig(snaps []*Snapshot, names []string) error {
	for i := 1; i < len(snaps); i++ {
		if x, y := configOf(snaps[i-1]), configOf(snaps[i]); x != "" && y != "" && x != y {
			a, b := fmt.Sprintf("reading %d", i), fmt.Sprintf("reading %d", i+1)
			if i < len(names) {
				a, b = names[i-1], names[i]
			}
			return fmt.Errorf("%s and %s come from servers configured differently (cache_config_info %s, then %s): a window across them would blend two servers; diagnose each alone",
				a, b, x, y)
		}
	}
	return nil
}

// configOf summarises the cache configuration a snapshot states.
func configOf(s *Snapshot) string {
	var parts []string
	for _, infos := range s.Infos {
		for _, l := range infos {
			if l["num_gpu_blocks"] == "" && l["block_size"] == "" {
				continue // an info series of state, not of the cache (LoRA adapters in use)
			}
			parts = append(parts, fmt.Sprintf("{model %s engine %s blocks %s × %s}", l["model_name"], l["engine"], l["num_gpu_blocks"], l["block_size"]))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func union(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func countersAndHists(w *window.Window) map[string]bool {
	out := map[string]bool{}
	for k := range w.Counters {
		out[k] = true
	}
	for k := range w.Histograms {
		out[k] = true
	}
	return out
}

// steps returns each step's bucket increase for one series, nil where the
// series is absent or restarted.
func steps(snaps []*Snapshot, name, key string) [][]window.Bucket {
	out := make([][]window.Bucket, len(snaps))
	for i := 1; i < len(snaps); i++ {
		cur, ok1 := snaps[i].Histograms[name][key]
		prev, ok0 := snaps[i-1].Histograms[name][key]
		if !ok1 {
			continue
		}
		if !ok0 {
			prev = histSample{}
		}
		h := histIncrease([]*histSample{&prev, &cur}, false)
		if h.Resets == 0 {
			out[i] = h.Buckets
		}
	}
	return out
}

// histIncrease adds up bucket increases between consecutive samples; a drop
// in the count (or any bucket) means a restart and the later sample counts
// from zero.
func histIncrease(seq []*histSample, cumulative bool) window.Histogram {
	out := window.Histogram{}
	if len(seq) == 0 {
		return out
	}
	for _, h := range seq {
		if h.labels != nil {
			out.Labels = h.labels
		}
	}
	if cumulative || len(seq) == 1 {
		h := seq[len(seq)-1]
		out.Buckets = append([]window.Bucket(nil), h.buckets...)
		out.Sum, out.Count = h.sum, h.count
		return out
	}
	inc := map[float64]float64{}
	for i := 1; i < len(seq); i++ {
		prev, cur := seq[i-1], seq[i]
		prevBy := map[float64]float64{}
		for _, b := range prev.buckets {
			prevBy[b.UpperBound] = b.Count
		}
		reset := cur.count < prev.count
		for _, b := range cur.buckets {
			if b.Count < prevBy[b.UpperBound] {
				reset = true
			}
		}
		if reset {
			out.Resets++
			prevBy = map[float64]float64{}
		}
		for _, b := range cur.buckets {
			inc[b.UpperBound] += b.Count - prevBy[b.UpperBound]
		}
		if reset {
			out.Sum += cur.sum
			out.Count += cur.count
		} else {
			out.Sum += cur.sum - prev.sum
			out.Count += cur.count - prev.count
		}
	}
	for le, c := range inc {
		out.Buckets = append(out.Buckets, window.Bucket{UpperBound: le, Count: c})
	}
	sort.Slice(out.Buckets, func(i, j int) bool { return out.Buckets[i].UpperBound < out.Buckets[j].UpperBound })
	return out
}

func snapTimes(snaps []*Snapshot) []time.Time {
	out := make([]time.Time, len(snaps))
	for i, s := range snaps {
		out[i] = s.Time
	}
	return out
}

func lastPresent(v []float64) float64 {
	for i := len(v) - 1; i >= 0; i-- {
		if !math.IsNaN(v[i]) {
			return v[i]
		}
	}
	return math.NaN()
}

func familyNames(snaps []*Snapshot, f func(*Snapshot) []string) []string {
	set := map[string]bool{}
	for _, s := range snaps {
		for _, n := range f(s) {
			set[n] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func seriesKeys[T any](snaps []*Snapshot, f func(*Snapshot) map[string]T) []string {
	set := map[string]bool{}
	for _, s := range snaps {
		for k := range f(s) {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Merge joins windows of several servers scraped at the same ticks (see
// onTicks): point i of every gauge is the same instant.
func Merge(ws []*window.Window) *window.Window {
	if len(ws) == 1 {
		return ws[0]
	}
	out := window.New()
	for i, w := range ws {
		if i == 0 || w.Start.Before(out.Start) {
			out.Start = w.Start
		}
		if w.End.After(out.End) {
			out.End = w.End
		}
		out.Cumulative = out.Cumulative || w.Cumulative
		if w.Points > out.Points {
			out.Points = w.Points
		}
		switch {
		case i == 0:
			out.Times = w.Times
		case !slices.Equal(w.Times, out.Times):
			// Servers on other ticks have no common time axis to draw on.
			out.Times = nil
		}
		if out.From != "" {
			out.From += ", "
		}
		out.From += w.From
		out.Notes = append(out.Notes, w.Notes...)
		for k, v := range w.Withheld {
			out.Withhold(k, v)
		}
		for k, v := range w.Counters {
			out.Counters[k] = append(out.Counters[k], v...)
		}
		for k, v := range w.Gauges {
			out.Gauges[k] = append(out.Gauges[k], v...)
		}
		for k, v := range w.Histograms {
			out.Histograms[k] = append(out.Histograms[k], v...)
		}
		for k, v := range w.Infos {
			out.Infos[k] = append(out.Infos[k], v...)
		}
	}
	// A family untrusted on one server is left out for all: a partial sum
	// would pass for the whole.
	for k, v := range out.Withheld {
		out.Withhold(k, v)
	}
	return out
}
