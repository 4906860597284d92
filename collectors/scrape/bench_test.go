package scrape

import (
	"bytes"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
	"github.com/llmdoctor/llmdoctor/internal/testkit/expogen"
)

// A 5 MB scrape: 150 data-parallel engines of the queueing example.
func bigScrape(b *testing.B) []byte {
	sc, _ := expogen.ByName("queueing")
	sc.Engines, sc.Warm, sc.Window = 150, 1500, 1500
	_, end := expogen.Snapshots(sc, expogen.V1)
	if len(end) < 5<<20 {
		b.Fatalf("scrape is %d bytes, want ≥ 5 MiB", len(end))
	}
	return []byte(end)
}

func BenchmarkParse5MB(b *testing.B) {
	data := bigScrape(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(data, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// Parse, window and evidence for two 5 MB scrapes: the whole collector path.
func BenchmarkWindowAndEvidence5MB(b *testing.B) {
	data := bigScrape(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s1, _ := Parse(data, "")
		s2, _ := Parse(data, "")
		ev := engine.Build(Window([]*Snapshot{s1, s2}, "", "bench"), engine.Options{})
		if len(ev) != 1 || len(ev[0].Members) != 150 {
			b.Fatalf("targets %d", len(ev))
		}
	}
}

// The floor: expfmt's text parser alone on the same bytes.
func BenchmarkExpfmtOnly5MB(b *testing.B) {
	data := bigScrape(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := expfmt.NewTextParser(model.LegacyValidation)
		if _, err := p.TextToMetricFamilies(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
