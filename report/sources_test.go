package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
)

// A source read with rows left out is marked and says why on its own line.
func TestSourceNotes(t *testing.T) {
	d := sample()
	d.Sources = append(d.Sources,
		advisor.Source{Kind: "requests", Path: "r.jsonl", OK: true, Rows: 10, Skipped: map[string]int{"non_positive": 3},
			Notes: []string{"3 of 10 rows skipped: 3 zero or negative latency (first line 4: ttft -1)"}},
		advisor.Source{Kind: "bench", Path: "b.json", OK: true, Notes: []string{"summary statistics only"}})
	var b bytes.Buffer
	if err := Text(&b, d, Options{Color: "never", Width: 200, Details: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  ✓ snapshot a.prom\n", "  ! requests r.jsonl: 3 of 10 rows skipped: 3 zero or negative latency (first line 4: ttft -1)\n",
		"  ✓ bench b.json: summary statistics only\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}
