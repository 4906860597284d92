package diagnosis_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/scrape"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
)

// Any exposition pair that parses must give a diagnosis that renders as JSON
// and text: no NaN in the JSON, no panic anywhere on the path.
func FuzzDiagnose(f *testing.F) {
	for _, ex := range []string{"queueing", "v0-healthy"} {
		a, _ := os.ReadFile(filepath.Join("..", "examples", ex, "start.prom"))
		b, _ := os.ReadFile(filepath.Join("..", "examples", ex, "end.prom"))
		f.Add(a[:min(len(a), 6000)], b[:min(len(b), 6000)])
	}
	f.Add([]byte("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} +Inf\n"),
		[]byte("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} -1e308\n"))
	set, err := rules.Load()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		s1, err1 := scrape.Parse(a, "")
		s2, err2 := scrape.Parse(b, "")
		if err1 != nil || err2 != nil {
			return
		}
		s1.Time, s2.Time = time.Unix(0, 0), time.Unix(900, 0)
		in := &diagnosis.Input{Window: scrape.Window([]*scrape.Snapshot{s1, s2}, "", "fuzz")}
		d := in.Diagnose(set, &rules.Config{})
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("diagnosis does not marshal: %v", err)
		}
		if err := report.Text(&bytes.Buffer{}, d, report.Options{}); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(in.Checklist(set, &rules.Config{}, false)); err != nil {
			t.Fatalf("checklist does not marshal: %v", err)
		}
	})
}
