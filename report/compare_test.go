package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/compare"
)

// comparisons are a saved diagnosis against itself, against itself with
// the queue wait halved, and against itself with prompts three times longer.
func comparisons(t *testing.T) map[string]*compare.Comparison {
	t.Helper()
	b, err := os.ReadFile("testdata/html/queue-bound.json")
	if err != nil {
		t.Fatal(err)
	}
	load := func(edit func(ev map[string]any)) *advisor.Diagnosis {
		var d advisor.Diagnosis
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(d.Targets[0].Evidence)
		}
		// The fixture was saved before diagnoses named the top bucket of
		// each histogram: name one, twice the p99, as a collector would.
		tr := &d.Targets[0]
		tr.Resolution = map[string][2]float64{}
		for layer, nodes := range tr.Evidence {
			for node, v := range nodes.(map[string]any) {
				if m, ok := v.(map[string]any); ok && m["p99"] != nil {
					p99 := m["p99"].(float64)
					tr.Resolution[layer+"."+node+".max"] = [2]float64{p99, 2 * p99}
				}
			}
		}
		return &d
	}
	at := func(ev map[string]any, path ...string) map[string]any {
		for _, k := range path {
			ev = ev[k].(map[string]any)
		}
		return ev
	}
	base := load(nil)
	faster := load(func(ev map[string]any) {
		q := at(ev, "stage", "queue")
		q["mean"] = q["mean"].(float64) / 2
	})
	longer := load(func(ev map[string]any) {
		p := at(ev, "cond", "prompt_tokens")
		p["mean"], p["p90"] = p["mean"].(float64)*3, p["p90"].(float64)*3
	})
	out := map[string]*compare.Comparison{
		"same":   compare.Compare(base, load(nil), "a.json", "b.json", compare.Options{}),
		"faster": compare.Compare(base, faster, "a.json", "b.json", compare.Options{}),
		"longer": compare.Compare(base, longer, "a.json", "b.json", compare.Options{}),
	}
	out["slower"] = compare.Compare(faster, base, "b.json", "a.json", compare.Options{})
	out["slower"].Gate(map[string]float64{"queue_mean": 0.1})
	return out
}

// Every format says the verdict of each comparison; text fits its width;
// Slack's messages keep Slack's limits and put a regression in the header.
func TestComparisonFormats(t *testing.T) {
	want := map[string]string{"same": "NO CHANGE", "faster": "CHANGED", "longer": "NOT COMPARABLE", "slower": "CHANGED"}
	for name, c := range comparisons(t) {
		if got := strings.ToUpper(strings.ReplaceAll(c.Targets[0].Verdict, "-", " ")); got != want[name] {
			t.Fatalf("%s: verdict %s", name, got)
		}
		for _, width := range []int{60, 80, 120} {
			var b bytes.Buffer
			if err := ComparisonText(&b, c, Options{Width: width}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), want[name]) {
				t.Errorf("%s text: no %s:\n%s", name, want[name], b.String())
			}
			for _, l := range strings.Split(b.String(), "\n") {
				if ansi.StringWidth(l) > width {
					t.Errorf("%s text at %d: %q is %d wide", name, width, l, ansi.StringWidth(l))
				}
			}
		}
		var md bytes.Buffer
		if err := ComparisonMarkdown(&md, c); err != nil || !strings.Contains(strings.ToUpper(md.String()), want[name]) {
			t.Errorf("%s markdown (%v):\n%s", name, err, md.String())
		}
		msgs := SlackComparison(c, SlackOptions{})
		checkAll(t, "compare-"+name, msgs)
		if h := header(msgs[0]); (name == "slower") != strings.Contains(h, "REGRESSED") {
			t.Errorf("%s: slack header %q", name, h)
		}
	}
}
