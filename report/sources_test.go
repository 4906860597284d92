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

// How a selector reached each family of a Prometheus source's series is
// said on its source line, in JSON and on the HTML page.
func TestSourceScopes(t *testing.T) {
	d := sample()
	d.Sources = []advisor.Source{{Kind: "prometheus", URL: "http://prom:9090", OK: true, Scopes: []advisor.Scope{
		{Families: "vllm", Matched: []string{`model_name="m"`}, Read: true},
		{Families: "dcgm", JoinedTo: []string{`model_name="m"`}, Matched: []string{`namespace="prod"`}, Through: "pod", Read: true},
		{Families: "vllm:cache_config_info", JoinedTo: []string{`model_name="m"`}, Through: "instance", Read: true,
			Note: "the series of instance a:8000 left out: engine series outside the selector share it"},
		{Families: "dcgm", JoinedTo: []string{`model_name="m"`}, Note: `its series share no instance, pod, node or host with the engine series matching model_name="m"`},
	}}}
	var b bytes.Buffer
	if err := Text(&b, d, Options{Color: "never", Width: 400}); err != nil {
		t.Fatal(err)
	}
	want := `  ✓ prometheus http://prom:9090: vllm by model_name="m"; dcgm joined to model_name="m" through pod, by namespace="prod"; ` +
		`vllm:cache_config_info joined to model_name="m" through instance (the series of instance a:8000 left out: engine series outside the selector share it); ` +
		`dcgm left out: its series share no instance, pod, node or host with the engine series matching model_name="m"` + "\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("missing %q in\n%s", want, b.String())
	}
	b.Reset()
	if err := JSON(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"scopes": [`, `"families": "dcgm",`, `"joined_to": [`, `"through": "pod",`, `"read": false,`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := HTML(&b, d, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "dcgm joined to model_name=&#34;m&#34; through pod") {
		t.Errorf("the HTML page does not say how dcgm was scoped")
	}
}
