package simtest

import (
	"bytes"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmdoctor/llmdoctor/sim"
)

// OpenMetricsFromSnapshots stamps saved /metrics expositions with the times
// they were taken and writes them as one OpenMetrics file for promtool, so a
// window known only as snapshots can be queried through Prometheus too.
// Process, Python and _created families are left out: they are no part of
// the window and clash with counter names in OpenMetrics.
func OpenMetricsFromSnapshots(snapshots [][]byte, at []time.Time) ([]byte, error) {
	fams := map[string]*dto.MetricFamily{}
	for i, snap := range snapshots {
		p := expfmt.NewTextParser(model.LegacyValidation)
		got, err := p.TextToMetricFamilies(bytes.NewReader(snap))
		if err != nil {
			return nil, err
		}
		ms := at[i].UnixMilli()
		for name, f := range got {
			if strings.HasSuffix(name, "_created") || strings.HasPrefix(name, "python_") || strings.HasPrefix(name, "process_") {
				continue
			}
			acc, ok := fams[name]
			if !ok {
				acc = &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type}
				fams[name] = acc
			}
			for _, m := range f.Metric {
				m.TimestampMs = &ms
				acc.Metric = append(acc.Metric, m)
			}
		}
	}
	var out bytes.Buffer
	if err := sim.WriteOpenMetrics(&out, fams); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
