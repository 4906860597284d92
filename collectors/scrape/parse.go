// Package scrape reads vLLM's /metrics directly: live scrapes over a duration,
// or saved exposition files, into a window.
package scrape

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"mime"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmdoctor/llmdoctor/collectors/dcgm"
	"github.com/llmdoctor/llmdoctor/collectors/vllm"
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
// type may be empty; OpenMetrics is then recognised by its "# EOF" line.
func Parse(data []byte, contentType string) (*Snapshot, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty response: no metrics at all")
	}
	if trimmed[0] == '<' || strings.HasPrefix(contentType, "text/html") {
		return nil, errors.New("got an HTML page, not Prometheus metrics (is this the /metrics endpoint?)")
	}
	if isOpenMetrics(trimmed, contentType) {
		text, err := openMetricsToText(data)
		if err != nil {
			return nil, fmt.Errorf("malformed OpenMetrics: %s", oneLine(err))
		}
		data = text
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	m, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("malformed exposition: %s", oneLine(err))
	}
	fams := make([]*dto.MetricFamily, 0, len(m))
	for _, mf := range m {
		fams = append(fams, mf)
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
	}
	for _, mf := range fams {
		name := mf.GetName()
		if strings.HasSuffix(name, "_created") {
			continue // creation times, not data
		}
		m, ok := vllm.Known(name)
		if !ok && dcgm.Known(name) {
			m, ok = vllm.Metric{Key: name, Kind: vllm.Gauge}, true
		}
		if !ok {
			continue
		}
		got := mf.GetType()
		if !kindMatches(m.Kind, got) {
			s.Notes = append(s.Notes, fmt.Sprintf("%s is exposed as %s, expected %s: ignored",
				name, strings.ToLower(got.String()), m.Kind))
			continue
		}
		for _, met := range mf.GetMetric() {
			if met.TimestampMs != nil {
				if t := time.UnixMilli(met.GetTimestampMs()); t.After(s.Latest) {
					s.Latest = t
				}
			}
			l := labelsOf(met)
			key := l.Key()
			switch m.Kind {
			case vllm.Counter:
				put(s.Counters, name, key, counterSample{l, scalar(met)})
			case vllm.Gauge:
				put(s.Gauges, name, key, gaugeSample{l, scalar(met)})
			case vllm.Info:
				s.Infos[name] = append(s.Infos[name], l)
			case vllm.Histogram:
				h := met.GetHistogram()
				hs := histSample{labels: l, sum: h.GetSampleSum(), count: h.GetSampleCountFloat()}
				if h.SampleCountFloat == nil {
					hs.count = float64(h.GetSampleCount())
				}
				for _, b := range h.GetBucket() {
					c := b.GetCumulativeCountFloat()
					if b.CumulativeCountFloat == nil {
						c = float64(b.GetCumulativeCount())
					}
					hs.buckets = append(hs.buckets, window.Bucket{UpperBound: b.GetUpperBound(), Count: c})
					if math.IsInf(b.GetUpperBound(), 1) && hs.count == 0 {
						hs.count = c
					}
				}
				if !window.HasInf(hs.buckets) {
					s.Notes = append(s.Notes, fmt.Sprintf("%s has no +Inf bucket: its quantiles cannot be computed", name))
				}
				put(s.Histograms, name, key, hs)
			}
		}
	}
	return s
}

func kindMatches(k vllm.Kind, t dto.MetricType) bool {
	switch k {
	case vllm.Counter:
		return t == dto.MetricType_COUNTER || t == dto.MetricType_UNTYPED
	case vllm.Gauge, vllm.Info:
		return t == dto.MetricType_GAUGE || t == dto.MetricType_UNTYPED
	case vllm.Histogram:
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
