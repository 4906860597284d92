package evidence

import (
	"math"
	"testing"
)

func TestEveryFieldIsDocumented(t *testing.T) {
	fs := Fields()
	if len(fs) < 100 {
		t.Fatalf("only %d fields", len(fs))
	}
	for _, f := range fs {
		if f.Unit == "" || f.How == "" || len(f.Meaning) < 10 {
			t.Errorf("%s: unit %q, meaning %q, how %q", f.Path, f.Unit, f.Meaning, f.How)
		}
		switch f.Layer {
		case "cond", "stage", "service", "resource":
		default:
			t.Errorf("%s: layer %q", f.Path, f.Layer)
		}
	}
}

func TestNewIsAllMissingAndSetGetRoundTrip(t *testing.T) {
	e := New(Target{Model: "m"})
	for _, f := range Fields() {
		if !math.IsNaN(e.Values.Get(f)) {
			t.Fatalf("%s not missing", f.Path)
		}
	}
	f, ok := Lookup("stage.ttft.p99")
	if !ok || f.Dist != "stage.ttft" {
		t.Fatalf("lookup %+v", f)
	}
	e.Values.Set(f, 2.5)
	if e.Values.Stage.TTFT.P99 != 2.5 {
		t.Fatal("Set did not reach the struct")
	}
	tree := e.Values.Tree()
	if tree["stage"].(map[string]any)["ttft"].(map[string]any)["p99"] != 2.5 || len(tree) != 1 {
		t.Fatalf("tree %v", tree)
	}
}

func TestSourceOfFallsBackToPrefix(t *testing.T) {
	e := New(Target{})
	e.Cite("stage.ttft", Source{Metric: "vllm:time_to_first_token_seconds"})
	if s, ok := e.SourceOf("stage.ttft.p99"); !ok || s.Metric != "vllm:time_to_first_token_seconds" {
		t.Fatalf("%v %v", s, ok)
	}
	if _, ok := e.SourceOf("stage.queue.p99"); ok {
		t.Fatal("uncited path found")
	}
}
