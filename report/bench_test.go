package report

import (
	"io"
	"path/filepath"
	"testing"
)

// The HTML page of the demo diagnosis against the text report of the same:
// the page draws five charts, the text two sparklines.
func BenchmarkHTML(b *testing.B) {
	d := loadDiagnosis(b, filepath.Join("testdata", "html", "queue-bound.json"))
	b.ReportAllocs()
	for b.Loop() {
		if err := HTML(io.Discard, d, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkText(b *testing.B) {
	d := loadDiagnosis(b, filepath.Join("testdata", "html", "queue-bound.json"))
	b.ReportAllocs()
	for b.Loop() {
		if err := Text(io.Discard, d, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
