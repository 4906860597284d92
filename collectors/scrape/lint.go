package scrape

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// What an exposition may not hold, checked as it is read: a family with any
// of these is withheld (named, never summed or summarised), so no number in
// a report is computed from it.

// finite reports a real, non-negative number: every vLLM and DCGM value is a
// count, a duration, a ratio or a physical quantity.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }

// lintHistogram says what is wrong with one histogram series, or "".
func lintHistogram(h histSample, hasSum, hasCount bool) string {
	if hasSum && !finite(h.sum) {
		return fmt.Sprintf("_sum is %g", h.sum)
	}
	if hasCount && !finite(h.count) {
		return fmt.Sprintf("_count is %g", h.count)
	}
	prev := 0.0
	for i, b := range h.buckets {
		if math.IsNaN(b.UpperBound) {
			return "a bucket's le is NaN"
		}
		if i > 0 && b.UpperBound == h.buckets[i-1].UpperBound {
			// The text parser folds a repeated series into one: its buckets
			// come twice.
			return fmt.Sprintf("bucket le=%g appears twice: the series is repeated, and which copy is right cannot be told", b.UpperBound)
		}
		if !finite(b.Count) {
			return fmt.Sprintf("bucket le=%g holds %g", b.UpperBound, b.Count)
		}
		// Cumulative buckets never fall; a float's last bits may.
		if b.Count < prev*(1-1e-9)-1e-9 {
			return fmt.Sprintf("bucket le=%g holds %g, fewer than the bucket below it (%g): buckets must be cumulative", b.UpperBound, b.Count, prev)
		}
		prev = b.Count
	}
	if hasCount && window.HasInf(h.buckets) {
		inf := h.buckets[len(h.buckets)-1].Count
		if math.Abs(inf-h.count) > 1e-9*math.Max(1, h.count) {
			return fmt.Sprintf("_count %g differs from the +Inf bucket %g", h.count, inf)
		}
	}
	return ""
}

// untypedParts collects samples of known vLLM histograms exposed without a
// TYPE line (a paste cut inside a family, grep output): expfmt reads them as
// untyped families named _bucket, _sum and _count.
type untypedParts map[string]map[string]*histSample // base name → series key → parts

func (u untypedParts) add(mf *dto.MetricFamily) bool {
	name := mf.GetName()
	var base, part string
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if strings.HasSuffix(name, suf) {
			base, part = strings.TrimSuffix(name, suf), suf
		}
	}
	if base == "" || mf.GetType() != dto.MetricType_UNTYPED {
		return false
	}
	if m, ok := engine.Known(base); !ok || m.Kind != engine.Histogram {
		return false
	}
	for _, met := range mf.GetMetric() {
		l := labelsOf(met)
		le, hasLE := l["le"]
		delete(l, "le")
		key := l.Key()
		if u[base] == nil {
			u[base] = map[string]*histSample{}
		}
		h := u[base][key]
		if h == nil {
			h = &histSample{labels: l, sum: math.NaN(), count: math.NaN()}
			u[base][key] = h
		}
		v := scalar(met)
		switch {
		case part == "_bucket" && hasLE:
			ub, err := parseLE(le)
			if err != nil {
				continue
			}
			h.buckets = append(h.buckets, window.Bucket{UpperBound: ub, Count: v})
		case part == "_sum":
			h.sum = v
		case part == "_count":
			h.count = v
		}
	}
	return true
}

func parseLE(s string) (float64, error) {
	if s == "+Inf" {
		return math.Inf(1), nil
	}
	var x float64
	_, err := fmt.Sscan(s, &x)
	return x, err
}

// histograms turns the collected parts into histogram samples.
func (u untypedParts) histograms() map[string]map[string]histSample {
	out := map[string]map[string]histSample{}
	for base, series := range u {
		for key, h := range series {
			sort.Slice(h.buckets, func(i, j int) bool { return h.buckets[i].UpperBound < h.buckets[j].UpperBound })
			if math.IsNaN(h.count) && window.HasInf(h.buckets) {
				h.count = h.buckets[len(h.buckets)-1].Count
			}
			put(out, base, key, *h)
		}
	}
	return out
}

// splitByTime splits a text exposition whose samples carry several
// timestamps (an OpenMetrics backfill, a recording) into one document per
// timestamp, each with every comment line, oldest first. It returns nil for
// an exposition with one reading. The text parser cannot do this itself: it
// folds a histogram's lines into one series whatever their timestamps.
func splitByTime(data []byte) (times []int64, docs [][]byte, unstamped int, err error) {
	lines := bytes.Split(data, []byte("\n"))
	stamp := make([]int64, len(lines))
	seen := map[int64]bool{}
	// Several readings means one series at several times; series stamped at
	// different times once each (a federation dump) are one reading.
	firstAt := map[string]int64{}
	repeated := false
	var comments int
	for i, l := range lines {
		stamp[i] = -1
		t := bytes.TrimSpace(l)
		if len(t) == 0 {
			continue
		}
		if t[0] == '#' {
			comments += len(l) + 1
			continue
		}
		line := string(t)
		end := labelsEnd(line)
		if end < 0 {
			continue // the parser names the broken line
		}
		f := strings.Fields(line[end:])
		if len(f) != 2 {
			unstamped++
			continue
		}
		ms, perr := strconv.ParseInt(f[1], 10, 64)
		if perr != nil {
			continue
		}
		stamp[i] = ms
		if at, ok := firstAt[line[:end]]; ok && at != ms {
			repeated = true
		} else if !ok {
			firstAt[line[:end]] = ms
		}
		if !seen[ms] {
			seen[ms] = true
			times = append(times, ms)
		}
	}
	if len(times) < 2 || !repeated {
		return nil, nil, 0, nil
	}
	// Every reading repeats the comment lines: bound what that costs.
	if cost := comments*len(times) + len(data); cost > maxSplit {
		return nil, nil, 0, fmt.Errorf("holds %d readings; split into readings it would take %d MiB, over the %d MiB allowed: give fewer readings per file", len(times), cost>>20, maxSplit>>20)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	index := map[int64]int{}
	for i, t := range times {
		index[t] = i
	}
	bufs := make([]bytes.Buffer, len(times))
	for i, l := range lines {
		t := bytes.TrimSpace(l)
		switch {
		case len(t) > 0 && t[0] == '#':
			for k := range bufs {
				bufs[k].Write(l)
				bufs[k].WriteByte('\n')
			}
		case stamp[i] >= 0:
			b := &bufs[index[stamp[i]]]
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	docs = make([][]byte, len(bufs))
	for k := range bufs {
		docs[k] = bufs[k].Bytes()
	}
	return times, docs, unstamped, nil
}

// maxSplit bounds the documents a file of several readings is split into.
const maxSplit = 256 << 20

// known finds the catalogue entry of a family a registered engine or
// exporter exposes.
func known(name string) (engine.Metric, bool) { return engine.Known(name) }
