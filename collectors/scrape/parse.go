// Package scrape reads vLLM's /metrics directly: live scrapes over a duration,
// or saved exposition files, into a window.
package scrape

import (
	"bytes"
	"fmt"
	"math"
	"mime"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// Snapshot is one reading of /metrics, reduced to the families llmdoctor knows.
type Snapshot struct {
	Time       time.Time
	Counters   map[string]map[string]counterSample
	Gauges     map[string]map[string]gaugeSample
	Histograms map[string]map[string]histSample
	Infos      map[string][]window.Labels
	// Notes are families that were present but unreadable.
	Notes []string
	// Withheld are known families read but not trusted, with why.
	Withheld map[string]string
	// Declared are the known families the exposition names (with or
	// without samples): a family vLLM declares has no series until used.
	Declared map[string]bool
	// ProcessStart is process_start_time_seconds, 0 when absent: it tells a
	// restart (it moves) from snapshots given newest-first (it does not).
	ProcessStart float64
	// Latest is the newest sample timestamp in the exposition, if any.
	Latest time.Time
}

type counterSample struct {
	labels window.Labels
	value  float64
}

type gaugeSample = counterSample

type histSample struct {
	labels  window.Labels
	buckets []window.Bucket
	sum     float64
	count   float64
}

// Parse reads an exposition (Prometheus text 0.0.4 or OpenMetrics). The content
// type may be empty; OpenMetrics is then recognised by its "# EOF" line. An
// exposition whose series repeat at several timestamps is not one reading:
// ParseSeries reads those.
func Parse(data []byte, contentType string) (*Snapshot, error) {
	snaps, err := ParseSeries(data, contentType)
	if err != nil {
		return nil, err
	}
	if len(snaps) > 1 {
		return nil, fmt.Errorf("holds %d readings (series repeat at timestamps from %s to %s), not one scrape",
			len(snaps), snaps[0].Time.UTC().Format(time.RFC3339), snaps[len(snaps)-1].Time.UTC().Format(time.RFC3339))
	}
	return snaps[0], nil
}

// ParseSeries reads an exposition into one snapshot per timestamp when its
// series repeat at several (an OpenMetrics backfill file, a recording), each
// placed at its time; otherwise into one snapshot. Data that is not an
// exposition (empty, HTML, malformed) is a *MalformedError.
func ParseSeries(data []byte, contentType string) ([]*Snapshot, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &MalformedError{Problem: "empty response: no metrics at all"}
	}
	if trimmed[0] == '<' || strings.HasPrefix(contentType, "text/html") {
		return nil, &MalformedError{Problem: "got an HTML page, not Prometheus metrics (is this the /metrics endpoint?)"}
	}
	if isOpenMetrics(trimmed, contentType) {
		text, err := openMetricsToText(data)
		if err != nil {
			return nil, &MalformedError{Problem: "malformed OpenMetrics: " + oneLine(err), Err: err}
		}
		data = text
	}
	times, docs, unstamped, err := splitByTime(data)
	if err != nil {
		return nil, err
	}
	if times == nil {
		s, err := parseText(data)
		if err != nil {
			return nil, err
		}
		return []*Snapshot{s}, nil
	}
	out := make([]*Snapshot, 0, len(times))
	for i, doc := range docs {
		s, err := parseText(doc)
		if err != nil {
			return nil, fmt.Errorf("reading at %s: %w", time.UnixMilli(times[i]).UTC().Format(time.RFC3339), err)
		}
		s.Time = time.UnixMilli(times[i])
		if unstamped > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%d samples without a timestamp among timestamped readings were left out", unstamped))
		}
		out = append(out, s)
	}
	return out, nil
}

// parseText reads one reading in the text format.
func parseText(data []byte) (*Snapshot, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	m, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, &MalformedError{Problem: "malformed exposition: " + oneLine(err), Err: err}
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	fams := make([]*dto.MetricFamily, 0, len(m))
	for _, n := range names {
		fams = append(fams, m[n])
	}
	return fromFamilies(fams), nil
}

func isOpenMetrics(trimmed []byte, contentType string) bool {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == expfmt.OpenMetricsType {
		return true
	}
	return bytes.HasSuffix(trimmed, []byte("# EOF"))
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func fromFamilies(fams []*dto.MetricFamily) *Snapshot {
	s := &Snapshot{
		Counters:   map[string]map[string]counterSample{},
		Gauges:     map[string]map[string]gaugeSample{},
		Histograms: map[string]map[string]histSample{},
		Infos:      map[string][]window.Labels{},
		Withheld:   map[string]string{},
		Declared:   map[string]bool{},
	}
	withhold := func(name, why string) {
		if _, ok := s.Withheld[name]; !ok {
			s.Withheld[name] = why
		}
	}
	untyped := untypedParts{}
	dups := map[string]int{}
	for _, mf := range fams {
		name := mf.GetName()
		if name == "process_start_time_seconds" && len(mf.GetMetric()) == 1 {
			s.ProcessStart = scalar(mf.GetMetric()[0])
		}
		if strings.HasSuffix(name, "_created") {
			continue // creation times, not data
		}
		m, ok := known(name)
		if !ok {
			untyped.add(mf)
			continue
		}
		s.Declared[name] = true
		got := mf.GetType()
		if !kindMatches(m.Kind, got) {
			s.Notes = append(s.Notes, fmt.Sprintf("%s is exposed as %s, expected %s: ignored",
				name, strings.ToLower(got.String()), m.Kind))
			continue
		}
		seen := map[string]float64{}
		for _, met := range mf.GetMetric() {
			if met.TimestampMs != nil {
				if t := time.UnixMilli(met.GetTimestampMs()); t.After(s.Latest) {
					s.Latest = t
				}
			}
			l := labelsOf(met)
			key := l.Key()
			if m.Kind != engine.Info {
				// The same series twice: keep the first when both say the
				// same, withhold the family when they differ.
				v := scalar(met)
				if met.Histogram != nil {
					v = met.Histogram.GetSampleSum() + float64(met.Histogram.GetSampleCount())
				}
				if prev, ok := seen[key]; ok {
					dups[name]++
					if prev != v && !(math.IsNaN(prev) && math.IsNaN(v)) {
						withhold(name, fmt.Sprintf("the series {%s} appears twice with different values: which is right cannot be told", strings.TrimSuffix(key, ",")))
					}
					continue
				}
				seen[key] = v
			}
			switch m.Kind {
			case engine.Counter, engine.Gauge:
				v := scalar(met)
				if slices.Contains(m.Sentinels, v) {
					continue // the engine's way of saying "no number"
				}
				if !finite(v) {
					withhold(name, fmt.Sprintf("the series {%s} holds %g, not a count or a level", strings.TrimSuffix(key, ","), v))
					continue
				}
				if m.Kind == engine.Counter {
					put(s.Counters, name, key, counterSample{l, v})
				} else {
					put(s.Gauges, name, key, gaugeSample{l, v})
				}
			case engine.Info:
				dup := false
				for _, x := range s.Infos[name] {
					if x.Key() == key {
						dup = true
					}
				}
				if dup {
					// An info series says the same once or twice; never sum it.
					dups[name]++
					continue
				}
				s.Infos[name] = append(s.Infos[name], l)
			case engine.Histogram:
				h := met.GetHistogram()
				hs := histSample{labels: l, sum: h.GetSampleSum(), count: h.GetSampleCountFloat()}
				if h.SampleCountFloat == nil {
					hs.count = float64(h.GetSampleCount())
				}
				hasCount := h.SampleCountFloat != nil || h.SampleCount != nil
				hasSum := h.SampleSum != nil
				if !hasSum {
					hs.sum = math.NaN()
				}
				for _, b := range h.GetBucket() {
					c := b.GetCumulativeCountFloat()
					if b.CumulativeCountFloat == nil {
						c = float64(b.GetCumulativeCount())
					}
					hs.buckets = append(hs.buckets, window.Bucket{UpperBound: b.GetUpperBound(), Count: c})
				}
				sort.Slice(hs.buckets, func(i, j int) bool { return hs.buckets[i].UpperBound < hs.buckets[j].UpperBound })
				if why := lintHistogram(hs, hasSum, hasCount); why != "" {
					withhold(name, fmt.Sprintf("the series {%s}: %s", strings.TrimSuffix(key, ","), why))
					continue
				}
				if !hasCount {
					// A paste cut before _count: the +Inf bucket is the count;
					// without it the count is unknown, not zero.
					hs.count = math.NaN()
					if window.HasInf(hs.buckets) {
						hs.count = hs.buckets[len(hs.buckets)-1].Count
					}
				}
				if !window.HasInf(hs.buckets) {
					s.Notes = append(s.Notes, fmt.Sprintf("%s has no +Inf bucket: its quantiles cannot be computed", name))
				}
				put(s.Histograms, name, key, hs)
			}
		}
	}
	for base, series := range untyped.histograms() {
		if _, typed := s.Histograms[base]; typed {
			continue
		}
		s.Declared[base] = true
		s.Notes = append(s.Notes, fmt.Sprintf("%s has no TYPE line: its _bucket, _sum and _count samples were read as a histogram", base))
		for key, h := range series {
			if why := lintHistogram(h, !math.IsNaN(h.sum), !math.IsNaN(h.count)); why != "" {
				withhold(base, fmt.Sprintf("the series {%s}: %s", strings.TrimSuffix(key, ","), why))
				break
			}
			if !window.HasInf(h.buckets) {
				s.Notes = append(s.Notes, fmt.Sprintf("%s has no +Inf bucket: its quantiles cannot be computed", base))
			}
			put(s.Histograms, base, key, h)
		}
	}
	for name := range s.Withheld {
		delete(s.Counters, name)
		delete(s.Gauges, name)
		delete(s.Histograms, name)
		delete(s.Infos, name)
	}
	dupNames := make([]string, 0, len(dups))
	for n := range dups {
		dupNames = append(dupNames, n)
	}
	sort.Strings(dupNames)
	for _, n := range dupNames {
		if _, ok := s.Withheld[n]; !ok {
			s.Notes = append(s.Notes, fmt.Sprintf("%s: %d series repeated with the same labels and values: each is read once", n, dups[n]))
		}
	}
	return s
}

func kindMatches(k engine.Kind, t dto.MetricType) bool {
	switch k {
	case engine.Counter:
		return t == dto.MetricType_COUNTER || t == dto.MetricType_UNTYPED
	case engine.Gauge, engine.Info:
		return t == dto.MetricType_GAUGE || t == dto.MetricType_UNTYPED
	case engine.Histogram:
		return t == dto.MetricType_HISTOGRAM
	}
	return false
}

func scalar(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return math.NaN()
}

func labelsOf(m *dto.Metric) window.Labels {
	l := window.Labels{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func put[T any](m map[string]map[string]T, name, key string, v T) {
	if m[name] == nil {
		m[name] = map[string]T{}
	}
	m[name][key] = v
}
